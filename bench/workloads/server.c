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
 * With <lifetime> > 0, a thread retires after that many iterations and a new
 * thread takes over its slot set, as a server replaces its workers: the
 * blocks of a dead thread are freed by the living, and every new thread
 * starts with an empty cache.
 *
 * usage: server <threads> <iterations-per-thread> <slots> <min> <max>
 *               <batch> <seed> [<lifetime>] */
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

#define USAGE "<threads> <iterations-per-thread> <slots> <min> <max> <batch> <seed> [<lifetime>]"

static uint32_t nthreads, nslots, min_size, max_size, batch;
static uint64_t iterations, seed, lifetime;
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

/* One thread's share of the work; its successors carry it on. */
struct job {
    int id;
    uint64_t done;  /* iterations of this share made so far */
    char **set;     /* the set it holds */
    rng_t rng;
};

static void *worker(void *arg)
{
    struct job *job = arg;
    uint64_t end = lifetime && iterations - job->done > lifetime
                 ? job->done + lifetime : iterations;
    while (job->done < end) {
        uint32_t n = end - job->done < batch ? (uint32_t)(end - job->done) : batch;
        bench_loop(job->set, n, &job->rng);
        progress_add(job->id, 2 * (uint64_t)n);
        job->set = atomic_exchange(&table[rng_below(&job->rng, nthreads)], job->set);
        job->done += n;
    }
    return NULL;
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
    lifetime = arg_u64(argc, argv, 8, 0, USAGE);
    CHECK(nthreads > 0 && nthreads <= SAMPLER_MAX_WORKERS && nslots > 0 &&
          min_size > 0 && min_size <= max_size && batch > 0, USAGE);

    report_start();
    table = scratch_alloc(nthreads * sizeof *table);
    for (uint32_t t = 0; t < nthreads; t++)
        table[t] = scratch_alloc(nslots * sizeof(char *));
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    struct job *jobs = scratch_alloc(nthreads * sizeof *jobs);
    for (uint32_t t = 0; t < nthreads; t++) {
        jobs[t].id = (int)t;
        jobs[t].set = scratch_alloc(nslots * sizeof(char *));
        jobs[t].rng = rng_seed(seed + t);
    }
    sampler_start(0);

    marker_begin();
    double t0 = clock_now();
    for (uint32_t t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, &jobs[t]) == 0,
              "pthread_create failed");
    /* Join the threads in turn; replace each retired one while the others
     * run on. */
    for (uint32_t live = nthreads; live > 0;)
        for (uint32_t t = 0; t < nthreads; t++) {
            if (threads[t] == 0) /* its share is done */
                continue;
            pthread_join(threads[t], NULL);
            threads[t] = 0;
            if (jobs[t].done < iterations)
                CHECK(pthread_create(&threads[t], NULL, worker, &jobs[t]) == 0,
                      "pthread_create failed");
            else
                live--;
        }
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    /* The sets hold every thread's blocks. */
    for (uint32_t t = 0; t < nthreads; t++)
        for (uint32_t k = 0; k < nslots; k++) {
            free(jobs[t].set[k]);
            free(table[t][k]);
        }
    report_begin("server", "call", 2 * iterations * nthreads, t1 - t0,
                 (int)nthreads);
    report_int("slots", nslots);
    report_int("min_size", min_size);
    report_int("max_size", max_size);
    report_int("lifetime", (long long)lifetime);
    report_end();
    return 0;
}
