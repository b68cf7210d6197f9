/* xthread: cross-thread producer/consumer with a chosen share of remote frees.
 *
 * The threads stand in a ring.  Each allocates blocks of random size and
 * writes them; <remote-pct> percent of its blocks go to the next thread in
 * the ring, which frees them (a remote free: the block goes back to a heap
 * its thread does not own), and the rest go into a local working set where
 * they replace, and free, a random earlier block.  Every thread is both
 * producer and consumer.  An op is one call: each block costs a malloc and a
 * free.
 *
 * usage: xthread <threads> <blocks-per-thread> <remote-pct> <working-set>
 *                <min> <max> <seed> */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "clock.h"
#include "marker.h"
#include "report.h"
#include "ring.h"
#include "rng.h"
#include "sampler.h"
#include "scratch.h"

#define USAGE "<threads> <blocks-per-thread> <remote-pct> <working-set> <min> <max> <seed>"
#define CHUNK 4096u

static uint32_t nthreads, remote_pct, ws, min_size, max_size;
static uint64_t blocks, seed;
static struct ring *inbox;        /* inbox[t]: blocks for thread t to free */
static _Atomic uint32_t producing; /* threads still allocating */

static void drain(struct ring *in)
{
    void *p;
    while ((p = ring_pop(in)) != NULL)
        free(p);
}

BENCH_LOOP void bench_loop(char **local, struct ring *in, struct ring *out,
                           uint32_t n, rng_t *state)
{
    rng_t r = *state;
    for (uint32_t i = 0; i < n; i++) {
        drain(in);
        size_t size = min_size + rng_below(&r, max_size - min_size + 1);
        char *p = malloc(size);
        CHECK(p != NULL, "malloc returned NULL");
        p[0] = (char)i;
        p[size - 1] = (char)i;
        if (rng_below(&r, 100) < remote_pct) {
            /* A full ring means the consumer lags: free our own inbox while
             * waiting, so two threads waiting on each other still progress. */
            while (!ring_push(out, p)) {
                drain(in);
                sched_yield();
            }
        } else {
            uint32_t k = rng_below(&r, ws);
            free(local[k]);
            local[k] = p;
        }
    }
    *state = r;
}

static void *worker(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    struct ring *in = &inbox[id], *out = &inbox[(id + 1) % nthreads];
    rng_t rng = rng_seed(seed + id);
    char **local = scratch_alloc(ws * sizeof *local);

    for (uint64_t done = 0; done < blocks; done += CHUNK) {
        uint32_t n = blocks - done < CHUNK ? (uint32_t)(blocks - done) : CHUNK;
        bench_loop(local, in, out, n, &rng);
        progress_add((int)id, 2 * (uint64_t)n);
    }
    for (uint32_t k = 0; k < ws; k++)
        free(local[k]);
    scratch_free(local, ws * sizeof *local);
    /* Keep consuming until no one can send to us any more. */
    atomic_fetch_sub(&producing, 1);
    while (atomic_load(&producing) > 0) {
        drain(in);
        sched_yield();
    }
    drain(in);
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = (uint32_t)arg_u64(argc, argv, 1, 2, USAGE);
    blocks = arg_u64(argc, argv, 2, 2000000, USAGE);
    remote_pct = (uint32_t)arg_u64(argc, argv, 3, 50, USAGE);
    ws = (uint32_t)arg_u64(argc, argv, 4, 256, USAGE);
    min_size = (uint32_t)arg_u64(argc, argv, 5, 16, USAGE);
    max_size = (uint32_t)arg_u64(argc, argv, 6, 1024, USAGE);
    seed = arg_u64(argc, argv, 7, 42, USAGE);
    CHECK(nthreads >= 2 && nthreads <= SAMPLER_MAX_WORKERS &&
          remote_pct <= 100 && ws > 0 && min_size > 0 && min_size <= max_size,
          USAGE);

    report_start();
    inbox = scratch_alloc(nthreads * sizeof *inbox);
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    atomic_store(&producing, nthreads);
    sampler_start(0);

    marker_begin();
    double t0 = clock_now();
    for (uint32_t t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)t) == 0,
              "pthread_create failed");
    for (uint32_t t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    report_begin("xthread", "call", 2 * blocks * nthreads, t1 - t0,
                 (int)nthreads);
    report_int("remote_pct", remote_pct);
    report_int("working_set", ws);
    report_int("min_size", min_size);
    report_int("max_size", max_size);
    report_end();
    return 0;
}
