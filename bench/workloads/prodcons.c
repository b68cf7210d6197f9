/* prodcons: producer threads allocate, consumer threads free.
 *
 * Threads come in pairs: the producer allocates blocks of random size,
 * writes them and hands them to its consumer through a queue; the consumer
 * reads each block's first byte and frees it.  Every free is a remote free,
 * and a producer never gets a block back from its own thread: its heap is
 * refilled only with what the consumers' frees return to it, as in a
 * pipeline of request parsers and handlers.  An op is one call.
 *
 * The two threads of a pair are pinned to two different CPUs where the
 * process may use two: left to the scheduler, they sometimes share one CPU
 * and take turns filling and draining the queue, with no cache line moving
 * between cores, and the figure swung twentyfold between runs.
 *
 * usage: prodcons <pairs> <blocks-per-pair> <min> <max> <seed> */
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

#define USAGE "<pairs> <blocks-per-pair> <min> <max> <seed>"
#define CHUNK 4096u

static uint32_t npairs, min_size, max_size;
static uint64_t blocks, seed;
static struct ring *queue; /* queue[i]: from producer i to consumer i */
static _Atomic uint32_t *producing; /* producing[i]: pair i's producer runs */

BENCH_LOOP void bench_loop(struct ring *out, uint32_t n, rng_t *state)
{
    rng_t r = *state;
    for (uint32_t i = 0; i < n; i++) {
        size_t size = min_size + rng_below(&r, max_size - min_size + 1);
        char *p = malloc(size);
        CHECK(p != NULL, "malloc returned NULL");
        p[0] = (char)(size & 0x7f);
        p[size - 1] = (char)i;
        while (!ring_push(out, p))
            sched_yield();
    }
    *state = r;
}

static bool pinned;

/* Run the calling thread on the k-th CPU the process may use (modulo their
 * number), if it may use two or more. */
static void pin_self(unsigned k)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2)
        return;
    k %= (unsigned)CPU_COUNT(&allowed);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &allowed) && k-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            pinned = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
            return;
        }
    }
}

static void *producer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    pin_self(2 * id);
    rng_t rng = rng_seed(seed + id);
    for (uint64_t done = 0; done < blocks; done += CHUNK) {
        uint32_t n = blocks - done < CHUNK ? (uint32_t)(blocks - done) : CHUNK;
        bench_loop(&queue[id], n, &rng);
        progress_add((int)id, 2 * (uint64_t)n);
    }
    atomic_store(&producing[id], 0);
    return NULL;
}

static void consume(char *p)
{
    CHECK((unsigned char)p[0] < 0x80, "block lost its data");
    free(p);
}

static void *consumer(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    pin_self(2 * id + 1);
    for (;;) {
        char *p = ring_pop(&queue[id]);
        if (p != NULL) {
            consume(p);
        } else if (atomic_load(&producing[id])) {
            sched_yield();
        } else {
            /* The producer stopped after its last push: what it pushed
             * since the empty pop above is in the ring. */
            while ((p = ring_pop(&queue[id])) != NULL)
                consume(p);
            return NULL;
        }
    }
}

int main(int argc, char **argv)
{
    npairs = (uint32_t)arg_u64(argc, argv, 1, 1, USAGE);
    blocks = arg_u64(argc, argv, 2, 2000000, USAGE);
    min_size = (uint32_t)arg_u64(argc, argv, 3, 16, USAGE);
    max_size = (uint32_t)arg_u64(argc, argv, 4, 1024, USAGE);
    seed = arg_u64(argc, argv, 5, 42, USAGE);
    CHECK(npairs > 0 && 2 * npairs <= SAMPLER_MAX_WORKERS && min_size > 0 &&
          min_size <= max_size, USAGE);

    report_start();
    queue = scratch_alloc(npairs * sizeof *queue);
    producing = scratch_alloc(npairs * sizeof *producing);
    pthread_t *threads = scratch_alloc(2 * npairs * sizeof *threads);
    for (uint32_t i = 0; i < npairs; i++)
        atomic_store(&producing[i], 1);
    sampler_start(0);

    marker_begin();
    double t0 = clock_now();
    for (uint32_t i = 0; i < npairs; i++) {
        CHECK(pthread_create(&threads[2 * i], NULL, producer, (void *)(uintptr_t)i) == 0,
              "pthread_create failed");
        CHECK(pthread_create(&threads[2 * i + 1], NULL, consumer, (void *)(uintptr_t)i) == 0,
              "pthread_create failed");
    }
    for (uint32_t t = 0; t < 2 * npairs; t++)
        pthread_join(threads[t], NULL);
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    report_begin("prodcons", "call", 2 * blocks * npairs, t1 - t0, (int)(2 * npairs));
    report_int("pairs", npairs);
    report_int("min_size", min_size);
    report_int("max_size", max_size);
    report_int("pinned", pinned);
    report_end();
    return 0;
}
