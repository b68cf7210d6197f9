/* Wall-clock time for measured regions. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock: immune to wall-clock adjustments, and read
 * through the vDSO, so taking it costs no system call. */
static inline double clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
