/* churn: threads created and destroyed while they allocate; memory must not
 * grow.
 *
 * Waves of short-lived threads.  Each thread allocates and frees at random
 * in a small working set; when it exits it frees half its live blocks and
 * leaves the other half to the main thread, which frees them after the next
 * wave has started: blocks freed after their thread is gone, which is what
 * makes an allocator adopt or return an exited thread's memory.  The
 * resident set is read after every wave; an allocator that leaks per thread
 * grows from wave to wave.  An op is one call.
 *
 * usage: churn <waves> <threads-per-wave> <ops-per-thread> <min> <max> <seed> */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "clock.h"
#include "marker.h"
#include "memstat.h"
#include "report.h"
#include "rng.h"
#include "scratch.h"

#define USAGE "<waves> <threads-per-wave> <ops-per-thread> <min> <max> <seed>"
#define WS 256u

static uint32_t waves, nthreads, min_size, max_size;
static uint64_t ops_per_thread, seed;

struct job {
    uint64_t seed;
    char **slot; /* WS slots; what the thread leaves behind */
};

BENCH_LOOP void bench_loop(char **slot, uint64_t n, rng_t *state)
{
    rng_t r = *state;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = rng_below(&r, WS);
        if (slot[k] != NULL) {
            free(slot[k]);
            slot[k] = NULL;
        } else {
            size_t size = min_size + rng_below(&r, max_size - min_size + 1);
            char *p = malloc(size);
            CHECK(p != NULL, "malloc returned NULL");
            p[0] = (char)i;
            p[size - 1] = (char)i;
            slot[k] = p;
        }
    }
    *state = r;
}

static void *worker(void *arg)
{
    struct job *job = arg;
    rng_t rng = rng_seed(job->seed);
    bench_loop(job->slot, ops_per_thread, &rng);
    for (uint32_t k = 0; k < WS; k += 2) { /* free half, leave half */
        free(job->slot[k]);
        job->slot[k] = NULL;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    waves = (uint32_t)arg_u64(argc, argv, 1, 100, USAGE);
    nthreads = (uint32_t)arg_u64(argc, argv, 2, 4, USAGE);
    ops_per_thread = arg_u64(argc, argv, 3, 20000, USAGE);
    min_size = (uint32_t)arg_u64(argc, argv, 4, 16, USAGE);
    max_size = (uint32_t)arg_u64(argc, argv, 5, 4096, USAGE);
    seed = arg_u64(argc, argv, 6, 42, USAGE);
    CHECK(waves >= 10 && nthreads > 0 && min_size > 0 && min_size <= max_size,
          "usage: " USAGE " (at least 10 waves)");

    report_start();
    /* Two generations of jobs: a wave's leftovers are freed while the next
     * wave runs. */
    struct job *jobs = scratch_alloc(2 * nthreads * sizeof *jobs);
    for (uint32_t j = 0; j < 2 * nthreads; j++)
        jobs[j].slot = scratch_alloc(WS * sizeof(char *));
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    long *rss = scratch_alloc(waves * sizeof *rss);
    uint64_t leftovers = 0;

    marker_begin();
    double t0 = clock_now();
    for (uint32_t w = 0; w < waves; w++) {
        struct job *cur = &jobs[(w % 2) * nthreads];
        struct job *prev = &jobs[((w + 1) % 2) * nthreads];
        for (uint32_t t = 0; t < nthreads; t++) {
            cur[t].seed = seed + (uint64_t)w * nthreads + t;
            CHECK(pthread_create(&threads[t], NULL, worker, &cur[t]) == 0,
                  "pthread_create failed");
        }
        for (uint32_t t = 0; t < nthreads; t++)
            for (uint32_t k = 0; k < WS; k++)
                if (prev[t].slot[k] != NULL) {
                    free(prev[t].slot[k]);
                    prev[t].slot[k] = NULL;
                    leftovers++;
                }
        for (uint32_t t = 0; t < nthreads; t++)
            pthread_join(threads[t], NULL);
        rss[w] = memstat_rss_kb();
    }
    double t1 = clock_now();
    marker_end();

    for (uint32_t j = 0; j < 2 * nthreads; j++)
        for (uint32_t k = 0; k < WS; k++)
            free(jobs[j].slot[k]);

    /* Growth: mean RSS over the last tenth of the waves against the first. */
    uint32_t tenth = waves / 10;
    double first = 0, last = 0;
    for (uint32_t w = 0; w < tenth; w++) {
        first += (double)rss[w] / tenth;
        last += (double)rss[waves - tenth + w] / tenth;
    }
    report_begin("churn", "call",
                 ops_per_thread * nthreads * waves + leftovers, t1 - t0,
                 (int)nthreads);
    report_int("waves", waves);
    report_num("threads_per_sec", (double)waves * nthreads / (t1 - t0));
    report_int("rss_first_tenth_kb", (long long)first);
    report_int("rss_last_tenth_kb", (long long)last);
    report_num("rss_growth_pct", first > 0 ? 100.0 * (last - first) / first : 0);
    report_end();
    return 0;
}
