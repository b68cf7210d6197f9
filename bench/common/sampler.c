#include "sampler.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "memstat.h"

struct progress sampler_progress[SAMPLER_MAX_WORKERS];

static pthread_t thread;
static int running;
static _Atomic int stopping;
static long period;
static double t0;

static void sample(void)
{
    uint64_t ops = 0;
    for (int i = 0; i < SAMPLER_MAX_WORKERS; i++)
        ops += atomic_load_explicit(&sampler_progress[i].ops,
                                    memory_order_relaxed);
    printf("HAKBENCH-SAMPLE {\"t\": %.4f, \"rss_kb\": %ld, \"ops\": %llu}\n",
           clock_now() - t0, memstat_rss_kb(), (unsigned long long)ops);
    fflush(stdout);
}

static void *sampler_main(void *arg)
{
    (void)arg;
    printf("HAKBENCH-SAMPLER {\"tid\": %ld}\n", (long)gettid());
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!atomic_load(&stopping)) {
        sample();
        /* Absolute deadlines, so the period does not drift with the time
         * a sample takes. */
        next.tv_nsec += period * 1000000L;
        next.tv_sec += next.tv_nsec / 1000000000L;
        next.tv_nsec %= 1000000000L;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    sample();
    return NULL;
}

void sampler_start(long period_ms)
{
    if (period_ms <= 0) {
        const char *env = getenv("HAKBENCH_SAMPLE_MS");
        period_ms = env ? atol(env) : 0;
    }
    if (period_ms <= 0)
        return;
    period = period_ms;
    t0 = clock_now();
    running = pthread_create(&thread, NULL, sampler_main, NULL) == 0;
}

void sampler_stop(void)
{
    if (!running)
        return;
    atomic_store(&stopping, 1);
    pthread_join(thread, NULL);
    running = 0;
}
