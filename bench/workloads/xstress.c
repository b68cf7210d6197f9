/* xstress: threads allocate, free and pass blocks of mixed sizes and
 * lifetimes among themselves.
 *
 * Each iteration of a thread does one of three things, at random:
 *  - 50%: replaces a random block of its own working set (a medium life);
 *  - 25%: allocates a block, writes it and frees it at once (a short life);
 *  - 25%: allocates a block and swaps it into a random slot of a table all
 *    threads share, freeing what it takes out, most often a block another
 *    thread allocated (a life of unknown length, ended by a stranger).
 * Sizes: 70% 8-128 B, 25% 129 B-4 KiB, 5% 4-64 KiB.  A short run, so that
 * warming up, the first refills and the first cross-thread frees weigh as
 * much as the steady state.  An op is one call.
 *
 * usage: xstress <threads> <iterations-per-thread> <working-set>
 *                <shared-slots> <seed> */
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
#include "sizes.h"

#define USAGE "<threads> <iterations-per-thread> <working-set> <shared-slots> <seed>"
#define CHUNK 4096u

static uint32_t nthreads, ws, nshared;
static uint64_t iterations, seed;
static _Atomic(char *) *shared;

static const struct size_mix SIZES = {{70, 8, 128}, {95, 129, 4096}, {100, 4097, 65536}};

static inline char *new_block(rng_t *r, uint32_t i)
{
    size_t size = draw_from_mix(r, &SIZES);
    char *p = malloc(size);
    CHECK(p != NULL, "malloc returned NULL");
    p[0] = (char)i;
    p[size - 1] = (char)i;
    return p;
}

/* Returns the calls made. */
BENCH_LOOP uint64_t bench_loop(char **local, uint32_t n, rng_t *state)
{
    rng_t r = *state;
    uint64_t calls = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t what = rng_below(&r, 4);
        char *p = new_block(&r, i);
        if (what < 2) {
            uint32_t k = rng_below(&r, ws);
            free(local[k]);
            local[k] = p;
            calls += 2;
        } else if (what == 2) {
            free(p);
            calls += 2;
        } else {
            free(atomic_exchange_explicit(&shared[rng_below(&r, nshared)], p,
                                          memory_order_acq_rel));
            calls += 2;
        }
    }
    *state = r;
    return calls;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    rng_t rng = rng_seed(seed + (uint64_t)id);
    char **local = scratch_alloc(ws * sizeof *local);
    uint64_t calls = 0;
    for (uint64_t done = 0; done < iterations; done += CHUNK) {
        uint32_t n = iterations - done < CHUNK ? (uint32_t)(iterations - done) : CHUNK;
        uint64_t c = bench_loop(local, n, &rng);
        progress_add(id, c);
        calls += c;
    }
    for (uint32_t k = 0; k < ws; k++)
        free(local[k]);
    scratch_free(local, ws * sizeof *local);
    return (void *)(uintptr_t)(calls + ws);
}

int main(int argc, char **argv)
{
    nthreads = (uint32_t)arg_u64(argc, argv, 1, 2, USAGE);
    iterations = arg_u64(argc, argv, 2, 500000, USAGE);
    ws = (uint32_t)arg_u64(argc, argv, 3, 1000, USAGE);
    nshared = (uint32_t)arg_u64(argc, argv, 4, 4000, USAGE);
    seed = arg_u64(argc, argv, 5, 42, USAGE);
    CHECK(nthreads > 0 && nthreads <= SAMPLER_MAX_WORKERS && ws > 0 && nshared > 0,
          USAGE);

    report_start();
    shared = scratch_alloc(nshared * sizeof *shared);
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    sampler_start(0);

    marker_begin();
    double t0 = clock_now();
    for (uint32_t t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0,
              "pthread_create failed");
    uint64_t calls = 0;
    for (uint32_t t = 0; t < nthreads; t++) {
        void *c;
        pthread_join(threads[t], &c);
        calls += (uintptr_t)c;
    }
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    for (uint32_t k = 0; k < nshared; k++)
        free(shared[k]);
    report_begin("xstress", "call", calls, t1 - t0, (int)nthreads);
    report_int("working_set", ws);
    report_int("shared_slots", nshared);
    report_end();
    return 0;
}
