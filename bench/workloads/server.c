/* server: many threads allocating and freeing random sizes, with blocks
 * handed between threads, in the manner of Larson's server benchmark.
 *
 * There are twice as many slot sets as threads; each thread works on one
 * set: at a random slot it frees the block there (allocated by whichever
 * thread held the set before) and allocates a new one.  Every <batch>
 * iterations it swaps its set for a random one in a shared table, so blocks
 * are freed by other threads than the ones that allocated them, as when a
 * server's requests move between worker threads.  An op is one call
 * (each iteration makes a free and a malloc).
 *
 * usage: server <threads> <iterations-per-thread> <slots> <min> <max>
 *               <batch> <seed> */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "clock.h"
#include "marker.h"
#include "report.h"
#include "rng.h"
#include "sampler.h"
#include "scratch.h"

#define USAGE "<threads> <iterations-per-thread> <slots> <min> <max> <batch> <seed>"

static uint32_t nthreads, nslots, min_size, max_size, batch;
static uint64_t iterations, seed;
static _Atomic(char **) *table; /* nthreads spare sets */

BENCH_LOOP void bench_loop(char **set, uint32_t n, rng_t *state)
{
    rng_t r = *state;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = rng_below(&r, nslots);
        free(set[k]);
        size_t size = min_size + rng_below(&r, max_size - min_size + 1);
        char *p = malloc(size);
        CHECK(p != NULL, "malloc returned NULL");
        p[0] = (char)i;
        p[size - 1] = (char)i;
        set[k] = p;
    }
    *state = r;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    rng_t rng = rng_seed(seed + (uint64_t)id);
    char **set = scratch_alloc(nslots * sizeof *set);
    for (uint64_t done = 0; done < iterations; done += batch) {
        uint32_t n = iterations - done < batch ? (uint32_t)(iterations - done) : batch;
        bench_loop(set, n, &rng);
        progress_add(id, 2 * (uint64_t)n);
        set = atomic_exchange(&table[rng_below(&rng, nthreads)], set);
    }
    /* Park the set for main to free: it holds other threads' blocks too. */
    return set;
}

int main(int argc, char **argv)
{
    nthreads = (uint32_t)arg_u64(argc, argv, 1, 4, USAGE);
    iterations = arg_u64(argc, argv, 2, 1000000, USAGE);
    nslots = (uint32_t)arg_u64(argc, argv, 3, 1000, USAGE);
    min_size = (uint32_t)arg_u64(argc, argv, 4, 16, USAGE);
    max_size = (uint32_t)arg_u64(argc, argv, 5, 512, USAGE);
    batch = (uint32_t)arg_u64(argc, argv, 6, 1000, USAGE);
    seed = arg_u64(argc, argv, 7, 42, USAGE);
    CHECK(nthreads > 0 && nthreads <= SAMPLER_MAX_WORKERS && nslots > 0 &&
          min_size > 0 && min_size <= max_size && batch > 0, USAGE);

    report_start();
    table = scratch_alloc(nthreads * sizeof *table);
    for (uint32_t t = 0; t < nthreads; t++)
        table[t] = scratch_alloc(nslots * sizeof(char *));
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    char ***held = scratch_alloc(nthreads * sizeof *held);
    sampler_start(0);

    marker_begin();
    double t0 = clock_now();
    for (uint32_t t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0,
              "pthread_create failed");
    for (uint32_t t = 0; t < nthreads; t++)
        pthread_join(threads[t], (void **)&held[t]);
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    for (uint32_t t = 0; t < nthreads; t++)
        for (uint32_t k = 0; k < nslots; k++) {
            free(held[t][k]);
            free(table[t][k]);
        }
    report_begin("server", "call", 2 * iterations * nthreads, t1 - t0,
                 (int)nthreads);
    report_int("slots", nslots);
    report_int("min_size", min_size);
    report_int("max_size", max_size);
    report_end();
    return 0;
}
