/* Marks around the measured region that a system-call tracer can see. */
#ifndef BENCH_MARKER_H
#define BENCH_MARKER_H

/* Each makes one harmless, recognisable system call (an access() check of a
 * path that does not exist).  The driver's syscall count, taken with strace,
 * counts only the calls between the two, so process start-up, thread-stack
 * set-up before the region and the final RSS readings are left out. */
void marker_begin(void);
void marker_end(void);

#endif
