/*
 * Start-up.  The first malloc may come from the dynamic loader, before the
 * C library has set up the environment, or from several threads at once;
 * hk_init runs exactly once, and a constructor reads the options again once
 * the environment is surely there.
 */
#include <unistd.h>

#include "internal.h"
#include "stats.h"

extern char **environ;
static bool config_saw_environment;
static _Atomic int init_state; /* 0: not started, 1: running, 2: done */
static __thread bool init_running;

void hk_init(void)
{
    if (HK_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2))
        return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&init_state, &expected, 1)) {
        init_running = true;
        hk_classes_init();
        hk_os_init();
        HK_SECURE_INIT(); /* the hardened build's secrets, before any block */
        hk_config_load();
        config_saw_environment = environ != NULL;
        hk_heap_init_once();
        init_running = false;
        atomic_store_explicit(&init_state, 2, memory_order_release);
        return;
    }
    /* A call made by the initialisation itself goes on; another thread waits. */
    while (!init_running && atomic_load_explicit(&init_state, memory_order_acquire) != 2)
        ;
}

/* The first priority: linked into a program, before its own constructors,
 * whose allocations the heap profiler then sees. */
__attribute__((constructor(101))) static void hk_constructor(void)
{
    hk_init();
    if (!config_saw_environment)
        hk_config_load();
    if (hk_config.verbose)
        hk_config_print();
    hk_stats_prepare();
    hk_heap_profile_start();
}
