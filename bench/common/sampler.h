/* Resident memory and progress over time, sampled by a harness thread.
 *
 * With HAKBENCH_SAMPLE_MS=<ms> in the environment (or sampler_start called
 * with a period), a thread wakes every period and prints
 *   HAKBENCH-SAMPLE {"t": seconds, "rss_kb": ..., "ops": ...}
 * where ops is the sum of the workers' progress counters.  The thread first
 * prints its thread id, so a syscall count can leave its own calls out. */
#ifndef BENCH_SAMPLER_H
#define BENCH_SAMPLER_H

#include <stdatomic.h>
#include <stdint.h>

#define SAMPLER_MAX_WORKERS 64

/* One counter per worker, each on its own cache line, so counting costs a
 * plain store to a line the worker already owns. */
struct progress {
    _Alignas(64) _Atomic uint64_t ops;
};
extern struct progress sampler_progress[SAMPLER_MAX_WORKERS];

static inline void progress_add(int worker, uint64_t n)
{
    struct progress *p = &sampler_progress[worker];
    atomic_store_explicit(&p->ops,
        atomic_load_explicit(&p->ops, memory_order_relaxed) + n,
        memory_order_relaxed);
}

/* Start sampling if period_ms > 0, else if HAKBENCH_SAMPLE_MS is set. */
void sampler_start(long period_ms);
/* Take a last sample and stop the thread (no-op if it never started). */
void sampler_stop(void);

#endif
