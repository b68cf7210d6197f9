/* soak: a long mixed multi-threaded run, to watch memory over time.
 *
 * Each thread allocates with an application-like size mix (80% 16-256 B,
 * 15% 257-2048 B, 5% 2049-32768 B) and sends half its blocks to the next
 * thread to free (as xthread does), keeping the rest in a working set that
 * replaces a random earlier block.  The working set breathes: every second
 * its size goes from a tenth of <working-set> up to all of it and back, and
 * the blocks above the shrinking limit are freed, so an allocator that never
 * gives memory back shows it.  The sampler (sampler.h) prints the resident
 * set and the op count every <sample-ms>.  An op is one call.
 *
 * usage: soak <seconds> <threads> <working-set> <sample-ms> <seed> */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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
#include "sizes.h"

#define USAGE "<seconds> <threads> <working-set> <sample-ms> <seed>"
#define CHUNK 4096u
#define REMOTE_PCT 50
#define BREATH_SECONDS 1.0

static uint32_t nthreads, ws;
static uint64_t seed;
static double t_start;
static struct ring *inbox;
static _Atomic int stopping;
static _Atomic uint32_t producing;

static void drain(struct ring *in)
{
    void *p;
    while ((p = ring_pop(in)) != NULL)
        free(p);
}

BENCH_LOOP void bench_loop(char **local, uint32_t active, struct ring *in,
                           struct ring *out, uint32_t n, rng_t *state)
{
    rng_t r = *state;
    for (uint32_t i = 0; i < n; i++) {
        drain(in);
        size_t size = draw_from_mix(&r, &APP_SIZES);
        char *p = malloc(size);
        CHECK(p != NULL, "malloc returned NULL");
        p[0] = (char)i;
        p[size - 1] = (char)i;
        if (rng_below(&r, 100) < REMOTE_PCT) {
            while (!ring_push(out, p)) {
                drain(in);
                sched_yield();
            }
        } else {
            uint32_t k = rng_below(&r, active);
            free(local[k]);
            local[k] = p;
        }
    }
    *state = r;
}

/* A triangle wave from ws/10 up to ws and back, one breath per period. */
static uint32_t breathing_size(double t)
{
    double phase = fmod(t / BREATH_SECONDS, 1.0);
    double level = phase < 0.5 ? 2 * phase : 2 - 2 * phase;
    uint32_t n = (uint32_t)(ws * (0.1 + 0.9 * level));
    return n > 0 ? n : 1;
}

static void *worker(void *arg)
{
    uint32_t id = (uint32_t)(uintptr_t)arg;
    struct ring *in = &inbox[id], *out = &inbox[(id + 1) % nthreads];
    rng_t rng = rng_seed(seed + id);
    char **local = scratch_alloc(ws * sizeof *local);
    uint32_t active = 1;

    while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        uint32_t next = breathing_size(clock_now() - t_start);
        for (uint32_t k = next; k < active; k++) { /* breathe out */
            free(local[k]);
            local[k] = NULL;
        }
        active = next;
        bench_loop(local, active, in, out, CHUNK, &rng);
        progress_add((int)id, 2 * CHUNK);
    }
    for (uint32_t k = 0; k < ws; k++)
        free(local[k]);
    scratch_free(local, ws * sizeof *local);
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
    double seconds = (double)arg_u64(argc, argv, 1, 60, USAGE);
    nthreads = (uint32_t)arg_u64(argc, argv, 2, 2, USAGE);
    ws = (uint32_t)arg_u64(argc, argv, 3, 20000, USAGE);
    long sample_ms = (long)arg_u64(argc, argv, 4, 1000, USAGE);
    seed = arg_u64(argc, argv, 5, 42, USAGE);
    CHECK(nthreads >= 2 && nthreads <= SAMPLER_MAX_WORKERS && ws > 0 &&
          sample_ms > 0, USAGE);

    report_start();
    inbox = scratch_alloc(nthreads * sizeof *inbox);
    pthread_t *threads = scratch_alloc(nthreads * sizeof *threads);
    atomic_store(&producing, nthreads);
    sampler_start(sample_ms);

    marker_begin();
    t_start = clock_now();
    for (uint32_t t = 0; t < nthreads; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(uintptr_t)t) == 0,
              "pthread_create failed");
    struct timespec ts = { (time_t)seconds, 0 };
    while (nanosleep(&ts, &ts) != 0)
        ;
    atomic_store(&stopping, 1);
    for (uint32_t t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    uint64_t ops = 0;
    for (uint32_t t = 0; t < nthreads; t++)
        ops += atomic_load(&sampler_progress[t].ops);
    report_begin("soak", "call", ops, t1 - t_start, (int)nthreads);
    report_int("working_set", ws);
    report_int("remote_pct", REMOTE_PCT);
    report_end();
    return 0;
}
