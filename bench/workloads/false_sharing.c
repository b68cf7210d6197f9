/* false-sharing: do threads end up writing to the same cache line because
 * of where the allocator put their objects?
 *
 * Each round, every worker gets a small object and writes it many times; if
 * two workers' objects share a cache line, the line bounces between cores
 * and the writes slow down many times over.  Two ways to get there:
 *  - passive: the main thread allocates all the objects back to back and
 *    hands one to each worker (small objects allocated by one thread and
 *    used by another); each worker frees it and allocates its own
 *    replacement, and writes that.  An allocator that gives the freed
 *    object straight back keeps the workers on one line.
 *  - active: each worker allocates its own object; an allocator that serves
 *    all threads from one heap puts them side by side.
 * With <objects> above 1, each worker gets that many objects a round
 * (passive: main allocates them for the workers in turn, so that the
 * workers' objects alternate in memory), frees them all, allocates as many
 * of its own and writes the first of those: enough other threads' frees
 * that an allocator which reuses blocks where they are freed in bulk (a
 * hakmem thread whose frees go to its lists) shows it.  An op is one write
 * to the object.
 *
 * usage: false_sharing <threads> <rounds> <writes-per-round> <size>
 *                      <passive|active> [<objects>] */
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
#include "scratch.h"

#define USAGE "<threads> <rounds> <writes-per-round> <size> <passive|active> [<objects>]"

static uint32_t nthreads, rounds, size, objects;
static uint64_t writes;
static int passive;
static pthread_barrier_t barrier;
static char **handed; /* passive mode: the objects main allocated, objects a worker */

/* volatile: every write must reach the cache line. */
BENCH_LOOP void bench_loop(volatile char *obj, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        obj[0]++;
}

static void *worker(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    char **own = scratch_alloc(objects * sizeof *own);
    for (uint32_t r = 0; r < rounds; r++) {
        pthread_barrier_wait(&barrier); /* main has handed out the objects */
        if (passive)
            for (uint32_t i = 0; i < objects; i++)
                free(handed[(size_t)id * objects + i]);
        for (uint32_t i = 0; i < objects; i++) {
            own[i] = malloc(size);
            CHECK(own[i] != NULL, "malloc returned NULL");
        }
        bench_loop(own[0], writes);
        for (uint32_t i = 0; i < objects; i++)
            free(own[i]);
        pthread_barrier_wait(&barrier); /* round over */
    }
    scratch_free(own, objects * sizeof *own);
    return NULL;
}

int main(int argc, char **argv)
{
    nthreads = (uint32_t)arg_u64(argc, argv, 1, 2, USAGE);
    rounds = (uint32_t)arg_u64(argc, argv, 2, 100, USAGE);
    writes = arg_u64(argc, argv, 3, 100000, USAGE);
    size = (uint32_t)arg_u64(argc, argv, 4, 8, USAGE);
    passive = argc <= 5 || strcmp(argv[5], "active") != 0;
    objects = (uint32_t)arg_u64(argc, argv, 6, 1, USAGE);
    CHECK(nthreads > 0 && rounds > 0 && size > 0 && objects > 0, USAGE);

    report_start();
    handed = scratch_alloc((size_t)nthreads * objects * sizeof *handed);
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    pthread_barrier_init(&barrier, NULL, nthreads + 1);
    for (uint32_t t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)t) == 0,
              "pthread_create failed");

    marker_begin();
    double t0 = clock_now();
    for (uint32_t r = 0; r < rounds; r++) {
        if (passive)
            for (uint32_t i = 0; i < objects; i++)
                for (uint32_t t = 0; t < nthreads; t++) {
                    char **slot = &handed[(size_t)t * objects + i];
                    *slot = malloc(size);
                    CHECK(*slot != NULL, "malloc returned NULL");
                }
        pthread_barrier_wait(&barrier);
        pthread_barrier_wait(&barrier);
    }
    double t1 = clock_now();
    marker_end();

    for (uint32_t t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    report_begin(passive ? "false-sharing-passive" : "false-sharing-active",
                 "write", writes * rounds * nthreads, t1 - t0, (int)nthreads);
    report_int("object_size", size);
    report_int("objects", objects);
    report_end();
    return 0;
}
