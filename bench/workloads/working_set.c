/* working-set: a large live heap whose blocks are replaced at random.
 *
 * Each thread keeps <live> blocks alive, 16 B-1 KiB by default, sizes drawn
 * from a Pareto law (most blocks small, a long tail of large ones), as the
 * nodes, strings and buffers of a compiler or an in-memory store are.  Each
 * iteration frees the block in a random slot, allocates a new one and
 * writes it whole.  With 256 K blocks the live heap is ~17 MiB a thread, far
 * beyond the caches: what counts is how many cache lines and pages an
 * allocator touches per call more than its instruction count.  The slots are
 * filled before the clock starts.  An op is one call (each iteration makes a
 * free and a malloc).
 *
 * usage: working_set <threads> <iterations-per-thread> <live> <min> <max>
 *                    <seed> */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "clock.h"
#include "marker.h"
#include "report.h"
#include "rng.h"
#include "sampler.h"
#include "scratch.h"

#define USAGE "<threads> <iterations-per-thread> <live> <min> <max> <seed>"
#define CHUNK 65536u
/* Sizes are drawn ahead into a table, so the loop pays no pow() per call. */
#define SIZE_TABLE 65536u
#define PARETO_ALPHA 1.0

static uint32_t nthreads, live, min_size, max_size;
static uint64_t iterations, seed;
static uint32_t size_table[SIZE_TABLE];
static pthread_barrier_t filled; /* the workers and main: the clock starts */

/* Pareto(min, alpha) by inversion, redrawn above max. */
static void fill_size_table(rng_t *r)
{
    for (uint32_t i = 0; i < SIZE_TABLE; i++) {
        double size;
        do {
            double u = (rng_next(r) + 1.0) / 4294967296.0; /* (0, 1] */
            size = min_size * pow(u, -1.0 / PARETO_ALPHA);
        } while (size > max_size);
        size_table[i] = (uint32_t)size;
    }
}

static inline uint32_t draw_size(rng_t *r)
{
    return size_table[rng_next(r) & (SIZE_TABLE - 1)];
}

BENCH_LOOP void bench_loop(char **slot, uint32_t n, rng_t *state)
{
    rng_t r = *state;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = rng_below(&r, live);
        free(slot[k]);
        uint32_t size = draw_size(&r);
        char *p = malloc(size);
        CHECK(p != NULL, "malloc returned NULL");
        memset(p, (int)i, size);
        slot[k] = p;
    }
    *state = r;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    rng_t rng = rng_seed(seed + (uint64_t)id);
    char **slot = scratch_alloc(live * sizeof *slot);
    for (uint32_t k = 0; k < live; k++) {
        uint32_t size = draw_size(&rng);
        slot[k] = malloc(size);
        CHECK(slot[k] != NULL, "malloc returned NULL");
        memset(slot[k], (int)k, size);
    }
    pthread_barrier_wait(&filled);
    for (uint64_t done = 0; done < iterations; done += CHUNK) {
        uint32_t n = iterations - done < CHUNK ? (uint32_t)(iterations - done) : CHUNK;
        bench_loop(slot, n, &rng);
        progress_add(id, 2 * (uint64_t)n);
    }
    return slot; /* main frees it after the clock stops */
}

int main(int argc, char **argv)
{
    nthreads = (uint32_t)arg_u64(argc, argv, 1, 1, USAGE);
    iterations = arg_u64(argc, argv, 2, 10000000, USAGE);
    live = (uint32_t)arg_u64(argc, argv, 3, 262144, USAGE);
    min_size = (uint32_t)arg_u64(argc, argv, 4, 16, USAGE);
    max_size = (uint32_t)arg_u64(argc, argv, 5, 1024, USAGE);
    seed = arg_u64(argc, argv, 6, 42, USAGE);
    CHECK(nthreads > 0 && nthreads <= SAMPLER_MAX_WORKERS && live > 0 &&
          min_size > 0 && min_size <= max_size, USAGE);

    report_start();
    rng_t rng = rng_seed(seed ^ 0x5eed);
    fill_size_table(&rng);
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    CHECK(pthread_barrier_init(&filled, NULL, nthreads + 1) == 0,
          "pthread_barrier_init failed");
    for (uint32_t t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0,
              "pthread_create failed");
    sampler_start(0);
    pthread_barrier_wait(&filled);

    marker_begin();
    double t0 = clock_now();
    char ***held = scratch_alloc(nthreads * sizeof *held);
    for (uint32_t t = 0; t < nthreads; t++)
        pthread_join(threads[t], (void **)&held[t]);
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    for (uint32_t t = 0; t < nthreads; t++) {
        for (uint32_t k = 0; k < live; k++)
            free(held[t][k]);
        scratch_free(held[t], live * sizeof *held[t]);
    }
    report_begin("working-set", "call", 2 * iterations * nthreads, t1 - t0,
                 (int)nthreads);
    report_int("live", live);
    report_int("min_size", min_size);
    report_int("max_size", max_size);
    report_end();
    return 0;
}
