/*
 * Giving memory back.  A page that holds no block keeps its memory for the
 * purge delay (the program may want a page again soon), then the memory goes
 * back to the OS.  Who purges depends on the profile: a background thread,
 * so that an idle program shrinks too; or, without it, the owning thread
 * itself, the next time it retires a page.
 *
 * The purger is started when something first waits to be purged.  When
 * nothing is left it sleeps on a futex, and the next retirement wakes it
 * (one system call per idle-to-busy turn): it cannot simply exit, because a
 * free must not start a thread (see hk_purge_start), and a program that
 * frees and then idles would keep its memory.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* glibc's flag (<sys/single_threaded.h>), weak for C libraries without it. */
extern char __libc_single_threaded __attribute__((weak));

enum { PURGER_NONE, PURGER_BUSY, PURGER_IDLE };
static _Atomic int purger_state;
_Atomic bool hk_purger_wanted; /* a free wanted the purger; malloc starts it */

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* One pass over every heap and the huge cache; true while memory waits. */
static bool purge_pass(void)
{
    bool pending = hk_heaps_purge_all();
    hk_huge_cache_purge(false);
    return pending || hk_huge_cache_pending();
}

static void *purger_main(void *arg)
{
    (void)arg;
    uint64_t interval = hk_config.purge_delay_ms / 2;
    if (interval < 10)
        interval = 10;
    for (;;) {
        sleep_ms(interval);
        if (purge_pass())
            continue;
        /* Nothing waits: go idle, unless a page was retired meanwhile (its
         * retirer saw this thread busy and counts on it). */
        atomic_store(&purger_state, PURGER_IDLE);
        if (purge_pass()) {
            atomic_store(&purger_state, PURGER_BUSY);
            continue;
        }
        while (atomic_load(&purger_state) == PURGER_IDLE)
            syscall(SYS_futex, &purger_state, FUTEX_WAIT_PRIVATE, PURGER_IDLE, NULL, NULL, 0);
    }
    return NULL;
}

/* Starting a thread is not safe everywhere: glibc frees a dead thread's
 * TLS while holding the lock pthread_create needs, so a free must not start
 * one.  Callers: malloc's slow paths (hk_purge_poll), thread exit, and frees
 * of a program that has never had a second thread. */
HK_COLD void hk_purge_start(void)
{
    atomic_store_explicit(&hk_purger_wanted, false, memory_order_relaxed);
    int none = PURGER_NONE;
    if (!atomic_compare_exchange_strong(&purger_state, &none, PURGER_BUSY))
        return;
    /* The purger takes no signal meant for the program's own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t thread;
    if (pthread_create(&thread, &attr, purger_main, NULL) != 0)
        atomic_store(&purger_state, PURGER_NONE);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A free just set memory aside for purging: a page of h (called by h's
 * owner, holding no lock), or a huge mapping when h is NULL. */
void hk_purge_schedule(struct hk_heap *h, uint64_t now)
{
    if (hk_config.purge_thread) {
        int state = atomic_load_explicit(&purger_state, memory_order_relaxed);
        if (state == PURGER_BUSY)
            return;
        if (state == PURGER_IDLE) {
            if (atomic_compare_exchange_strong(&purger_state, &state, PURGER_BUSY))
                syscall(SYS_futex, &purger_state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        } else if (&__libc_single_threaded != NULL && __libc_single_threaded) {
            hk_purge_start();
        } else {
            atomic_store_explicit(&hk_purger_wanted, true, memory_order_relaxed);
        }
    } else if (h != NULL && now >= atomic_load_explicit(&h->purge_at, memory_order_relaxed)) {
        hk_heap_purge(h, HK_PURGE_DUE, true);
    }
}

/* From malloc's slow paths and thread exit, where starting a thread is safe. */
void hk_purge_poll(void)
{
    if (HK_UNLIKELY(atomic_load_explicit(&hk_purger_wanted, memory_order_relaxed)))
        hk_purge_start();
}

void hk_purge_fork_child(void)
{
    /* The purger did not survive the fork; the child's next malloc slow path
     * starts one if it was there. */
    int was = atomic_exchange(&purger_state, PURGER_NONE);
    atomic_store(&hk_purger_wanted, was != PURGER_NONE);
}
