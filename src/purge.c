/*
 * Giving memory back, and who does it.  A page that holds no block keeps its
 * memory for the purge delay (the program may want a page again soon), then
 * the memory goes back to the OS.
 *
 * No program may be able to tell that hakmem runs a thread: a
 * single-threaded program must stay single-threaded (unshare and setns
 * require it, a seccomp filter may kill the process on clone), and a
 * process must end when its own last thread ends.  So the background
 * purger runs only while the program has threads of its own, at least two
 * live threads with a heap (hk_heap_threads_live): it is started when the
 * second one gets its heap, or later from a malloc's slow path, and when
 * the program drops back to one thread, the thread whose exit made it so
 * stops it and waits for its end, so that the program never sees it again.
 * Between, it sleeps while nothing waits to be purged.  A program that
 * starts and joins one thread after another starts at most one purger a
 * second (RESTART_MS).
 *
 * Without a purger (one thread, or HAKMEM_PURGE_THREAD=0), each heap's owner
 * purges on its own slow paths: what waited the delay, and at once what the
 * heap holds beyond `idle_keep` bytes of free pages per region; the huge
 * cache keeps at most idle_keep bytes beyond its share of the live huge
 * blocks.  A program that frees and then idles keeps no more than that.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "stats.h"

/* ---- how long and how much free memory waits (the policy) ------------- */

/* The purge delay adapts to the heap: memory purged and taken again within
 * a second means the heap's demand breathes slower than the delay, and each
 * turn costs two system calls and the page faults, so the delay doubles (up
 * to 16 times the configured one; once per purge, so that one purge
 * followed by growth elsewhere counts once); ten seconds without that and
 * it halves back.  Called with the pool lock held; a purged page was just
 * taken again. */
#define MAX_DELAY_FACTOR 16

void hk_purge_note_refault(struct hk_heap *h)
{
    uint64_t now = hk_clock_ms();
    if (now - h->last_purge < HK_REFAULT_WINDOW_MS &&
        h->purge_delay < hk_config.purge_delay_ms * MAX_DELAY_FACTOR) {
        h->purge_delay = h->purge_delay ? h->purge_delay * 2 : 1;
        h->last_purge = 0; /* answered */
    }
    h->last_refault = now;
}

static void calm_down(struct hk_heap *h, uint64_t now)
{
    if (now - h->last_refault > HK_CALM_MS && h->purge_delay > hk_config.purge_delay_ms) {
        h->purge_delay /= 2;
        if (h->purge_delay < hk_config.purge_delay_ms)
            h->purge_delay = hk_config.purge_delay_ms;
        h->last_refault = now;
    }
}

uint32_t hk_purge_delay_factor(const struct hk_heap *h)
{
    uint64_t factor = hk_config.purge_delay_ms != 0 ? h->purge_delay / hk_config.purge_delay_ms : 1;
    return factor == 0 ? 1 : factor > MAX_DELAY_FACTOR ? MAX_DELAY_FACTOR : (uint32_t)factor;
}

/* Free pages a heap keeps in a region of its first arena when no purger
 * runs: idle_keep bytes, times the factor by which the heap's
 * purge delay has grown (a heap that soon took purged memory back keeps
 * more).  Called with the pool lock held. */
uint32_t hk_purge_owner_keep(const struct hk_heap *h, unsigned kind)
{
    uint64_t factor = hk_purge_delay_factor(h);
    uint64_t bytes = hk_config.idle_keep;
    if (bytes > (UINT64_MAX >> 1) / factor)
        return UINT32_MAX;
    uint64_t pages = (bytes * factor) >> hk_page_shift(kind);
    return pages > UINT32_MAX ? UINT32_MAX : (uint32_t)pages;
}

/* h took a page of `kind` that holds no memory yet: its demand grows
 * there.  The free pages of its other kinds that it keeps beyond idle_keep
 * (kept longer as its purge delay grew, for their own kind's next breath)
 * go now, as much as that page holds: demand that moved from one size to
 * another would otherwise keep both (sqlite3 frees 10 MiB of 1152-byte
 * records, then fills 4608-byte pages, retiring none, so no purge comes).
 * Pool lock held; hk_region_purge drops it around the system calls. */
void hk_purge_for_growth(struct hk_heap *h, unsigned kind)
{
    struct hk_arena *a = h->arenas;
    size_t bytes = (size_t)1 << hk_page_shift(kind);
    for (unsigned k = 0; k < HK_NKINDS && bytes != 0; k++) {
        if (k == kind)
            continue;
        struct hk_region *r = &a->region[k];
        uint64_t keep = hk_config.idle_keep >> hk_page_shift(k);
        if (r->ndirty <= keep)
            continue;
        size_t page = (size_t)1 << hk_page_shift(k);
        uint64_t n = (bytes + page - 1) / page;
        if (n > r->ndirty - keep)
            n = r->ndirty - keep;
        size_t purged = hk_region_purge(h, a, k, 0, r->ndirty - (uint32_t)n);
        hk_stat_add(&hk_os_stats.purged_bytes, purged);
        bytes = purged >= bytes ? 0 : bytes - purged;
    }
}

/* Memory ran out: give back every free page and empty arena of every heap,
 * and the huge cache, so that a retry may find room. */
void hk_release_all_memory(void)
{
    for (struct hk_heap *h = hk_heaps_first(); h != NULL; h = h->next)
        hk_heap_purge(h, HK_PURGE_ALL, true);
    hk_huge_cache_purge(true);
}

/* Free pages a heap without a thread keeps warm for its next owner, per
 * region: 4 MiB of small pages, 2 MiB of medium ones, one large page.  A
 * thread pool's next thread then starts warm (thread churn runs 4 times
 * faster than when everything is purged at exit); beyond that, memory of
 * exited threads goes back at once, but for what waits its purge delay:
 * large pages as many times more as the heap's purge delay grew (its
 * owners took purged memory back soon: hk_purge_note_refault), at most
 * ABANDONED_LARGE_MOST.  Threads that come and go with megabytes of large
 * blocks each (bench churn-large: 4 at a time, 160 in all, 16 B-256 KiB)
 * refaulted what each exit gave back: 0.63-0.73 s, 44-49 K page faults,
 * 40-42 MiB peak; keeping 8 pages, 0.33-0.35 s, 21 K, 60-65 MiB (mimalloc
 * 3.4.3: 0.24-0.38 s at 190-231 MiB).  16 kept 64 MiB between threads run
 * one after another (threads/thread_exit, whose bound is 48). */
static const uint32_t keep_abandoned[HK_NKINDS] = {64, 8, 1};
#define ABANDONED_LARGE_MOST 8

/* How many free pages a region of arena a keeps in a purge of `mode`: what
 * an abandoned heap or an owner keeps is in the first arena, so that the
 * others are free to go.  An owner over its keep gives back a quarter of
 * the keep more: it purges at every retire past the keep, so a heap that
 * breathes above it would give back a page at a time (lua's collector,
 * 100 MiB freed and taken again: 1,679 purges of one page, each splitting
 * a huge page); so it gives back coalesced ranges now and then.  Pool
 * lock held. */
static uint32_t region_keep(const struct hk_heap *h, const struct hk_arena *a, unsigned kind,
                            enum hk_purge_mode mode)
{
    if (mode == HK_PURGE_OWNER) {
        if (a != h->arenas)
            return 0;
        uint32_t keep = hk_purge_owner_keep(h, kind);
        return a->region[kind].ndirty > keep ? keep - keep / 4 : keep;
    }
    if (mode == HK_PURGE_ABANDONED) {
        if (a != h->arenas)
            return 0;
        if (kind != HK_LARGE)
            return keep_abandoned[kind];
        uint32_t keep = keep_abandoned[kind] * hk_purge_delay_factor(h);
        return keep < ABANDONED_LARGE_MOST ? keep : ABANDONED_LARGE_MOST;
    }
    return UINT32_MAX;
}

/* How long h's free pages wait in a purge of `mode` (HK_PURGE_ALL takes
 * them now, and sets the next purge by this).  Where no owner
 * decides (the purger, an abandoned heap), at most PURGER_DELAY_FACTOR
 * times the configured delay, however far the heap's own delay grew: the
 * program has threads, whose demand moves from heap to heap, and a heap
 * that kept what it freed for 16 times the delay held its own peak of
 * the last seconds (the soak, 2 threads, 30 s: RSS drift +25.6%, +6.9%
 * with 4, at the same speed).  An owner keeps its delay and the keep that
 * grows with it (a single-threaded lua that builds and drops 100 MiB of
 * tables ran 1.2 times as long with both held to 4 times). */
#define PURGER_DELAY_FACTOR 4

static uint64_t purge_wait(const struct hk_heap *h, enum hk_purge_mode mode)
{
    uint64_t most = hk_config.purge_delay_ms * PURGER_DELAY_FACTOR;
    bool no_owner = mode == HK_PURGE_DUE || mode == HK_PURGE_ABANDONED;
    return no_owner && h->purge_delay > most ? most : h->purge_delay;
}

/* Purge heap h's free pages retired at least its purge delay ago, all of
 * them (`mode` HK_PURGE_ALL), or also those beyond what an owner or an
 * abandoned heap keeps (HK_PURGE_OWNER, HK_PURGE_ABANDONED); set when the
 * next purge is due; return the bytes purged.  `wait` false: give up at
 * once if the owner holds the pool lock. */
size_t hk_heap_purge(struct hk_heap *h, enum hk_purge_mode mode, bool wait)
{
    if (wait)
        pthread_mutex_lock(&h->pool_lock);
    else if (pthread_mutex_trylock(&h->pool_lock) != 0)
        return 0;
    uint64_t now = hk_clock_ms();
    calm_down(h, now);
    uint64_t waits = purge_wait(h, mode), delay = mode == HK_PURGE_ALL ? 0 : waits;
    uint64_t cutoff = now >= delay ? now - delay : 0;
    uint64_t next = 0;
    size_t purged = 0;
    for (struct hk_arena *a = h->arenas; a != NULL; a = a->next) {
        for (unsigned kind = 0; kind < HK_NKINDS; kind++) {
            purged += hk_region_purge(h, a, kind, cutoff, region_keep(h, a, kind, mode));
            struct hk_page *oldest = a->region[kind].dirty_tail;
            uint64_t due = oldest != NULL ? oldest->freed_at + waits : 0;
            if (due != 0 && (next == 0 || due < next))
                next = due;
        }
    }
    /* Purging everything means it is gone when this returns: wait for the
     * pages another purge has taken off the lists to go back too. */
    while (mode == HK_PURGE_ALL && h->purges_in_flight != 0) {
        pthread_mutex_unlock(&h->pool_lock);
        sched_yield();
        pthread_mutex_lock(&h->pool_lock);
    }
    if (h->purges_in_flight == 0)
        hk_arena_release_empty(h);
    if (purged != 0)
        h->last_purge = now;
    atomic_store_explicit(&h->purge_at, next, memory_order_relaxed);
    pthread_mutex_unlock(&h->pool_lock);
    hk_stat_add(&hk_os_stats.purged_bytes, purged);
    return purged;
}

/* ---- who purges: the purger thread, or the owners ---------------------- */

/* A purger is not started again sooner than this after one was stopped. */
#define RESTART_MS 1000

enum { PURGER_NONE, PURGER_BUSY, PURGER_IDLE, PURGER_STOP };
static _Atomic int purger_state;
_Atomic uint8_t hk_detour; /* HK_DETOUR_* (internal.h) */

/* Start, stop and the thread handle; never taken by the purger itself. */
static pthread_mutex_t purger_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t purger_thread;
static bool purger_joinable; /* purger_thread has not been joined yet */
static uint64_t restart_at;  /* no start before (after a stop or a failed start) */
/* This thread is starting the purger: pthread_create allocates, and the
 * allocation must not come back to start it again. */
static __thread bool starting;

/* Sleep while the purger's state is `state`, at most ms milliseconds (0:
 * no limit). */
static void wait_in(int state, uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, &purger_state, FUTEX_WAIT_PRIVATE, state, ms != 0 ? &ts : NULL, NULL, 0);
}

static void wake_purger(void)
{
    syscall(SYS_futex, &purger_state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* One pass over every heap and the huge cache; true while memory waits. */
static bool purge_pass(void)
{
    hk_heaps_trim_abandoned_due(hk_clock_ms());
    bool pending = hk_heaps_purge_all();
    hk_huge_cache_purge(false);
    return pending || hk_huge_cache_pending() ||
           atomic_load_explicit(&hk_abandoned_trim_at, memory_order_relaxed) != 0;
}

static void *purger_main(void *arg)
{
    (void)arg;
    uint64_t interval = hk_config.purge_delay_ms / 2;
    if (interval < 10)
        interval = 10;
    for (;;) {
        wait_in(PURGER_BUSY, interval);
        if (atomic_load(&purger_state) == PURGER_STOP)
            return NULL;
        if (purge_pass())
            continue;
        /* Nothing waits: go idle, unless a page was retired meanwhile (its
         * retirer saw this thread busy and counts on it). */
        int state = PURGER_BUSY;
        if (!atomic_compare_exchange_strong(&purger_state, &state, PURGER_IDLE))
            return NULL; /* stopped */
        if (purge_pass()) {
            state = PURGER_IDLE;
            atomic_compare_exchange_strong(&purger_state, &state, PURGER_BUSY);
            continue;
        }
        while (atomic_load(&purger_state) == PURGER_IDLE)
            wait_in(PURGER_IDLE, 0);
    }
}

static bool purger_allowed(void)
{
    return hk_config.purge_thread && hk_heap_threads_live() >= 2;
}

/* Starting a thread is not safe everywhere: glibc frees a dead thread's
 * TLS while holding the lock pthread_create needs, so a free must not start
 * one.  Callers: malloc's slow paths (hk_purge_poll, a thread's first
 * malloc). */
HK_COLD void hk_purge_start(void)
{
    /* Every thread's first malloc comes here: only a set bit is cleared,
     * for the line every thread's refills read (churn, 16 threads a wave,
     * on 16 cores: 2.3% of the samples at this point). */
    if (atomic_load_explicit(&hk_detour, memory_order_relaxed) & HK_DETOUR_PURGER)
        atomic_fetch_and_explicit(&hk_detour, (uint8_t)~HK_DETOUR_PURGER, memory_order_relaxed);
    if (!purger_allowed() || starting || atomic_load(&purger_state) != PURGER_NONE)
        return;
    starting = true;
    pthread_mutex_lock(&purger_lock);
    /* Again under the lock: a thread whose exit leaves one thread stops the
     * purger under it, after its count went down. */
    uint64_t now = hk_clock_ms();
    if (purger_allowed() && atomic_load(&purger_state) == PURGER_NONE && now >= restart_at) {
        /* Busy first: a free meanwhile must not ask for a purger again. */
        atomic_store(&purger_state, PURGER_BUSY);
        atomic_fetch_and_explicit(&hk_detour, (uint8_t)~HK_DETOUR_PURGER, memory_order_relaxed);
        /* The purger takes no signal meant for the program's own threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        if (pthread_create(&purger_thread, &attr, purger_main, NULL) == 0) {
            purger_joinable = true;
        } else {
            atomic_store(&purger_state, PURGER_NONE);
            restart_at = now + RESTART_MS;
        }
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_mutex_unlock(&purger_lock);
    starting = false;
}

/* The program is down to one thread of its own (the caller, which is
 * exiting, or the one left): the purger ends before the caller goes on,
 * and from now on the owners purge, keeping no more than they would idle. */
void hk_purge_stop(void)
{
    pthread_mutex_lock(&purger_lock);
    if (purger_joinable) {
        atomic_store(&purger_state, PURGER_STOP);
        wake_purger();
        pthread_join(purger_thread, NULL);
        purger_joinable = false;
        atomic_store(&purger_state, PURGER_NONE);
        restart_at = hk_clock_ms() + RESTART_MS;
    }
    pthread_mutex_unlock(&purger_lock);
    hk_heaps_settle();
}

/* Whether a purger runs now (and will purge what waits). */
bool hk_purger_running(void)
{
    int state = atomic_load_explicit(&purger_state, memory_order_relaxed);
    return state == PURGER_BUSY || state == PURGER_IDLE;
}

/* A free just set memory aside for purging: a page of h (called by h's
 * owner, holding no lock; `over_keep`: h holds more free pages than an
 * owner keeps), or a huge mapping when h is NULL. */
void hk_purge_schedule(struct hk_heap *h, uint64_t now, bool over_keep)
{
    int state = atomic_load_explicit(&purger_state, memory_order_relaxed);
    if (state == PURGER_BUSY)
        return;
    if (state == PURGER_IDLE && atomic_compare_exchange_strong(&purger_state, &state, PURGER_BUSY)) {
        wake_purger();
        return;
    }
    if (state == PURGER_BUSY)
        return; /* the compare-exchange lost to another waker */
    /* No purger runs: the owner purges, and malloc starts a purger if the
     * program has threads of its own. */
    if (purger_allowed() &&
        !(atomic_load_explicit(&hk_detour, memory_order_relaxed) & HK_DETOUR_PURGER))
        atomic_fetch_or_explicit(&hk_detour, HK_DETOUR_PURGER, memory_order_relaxed);
    if (h != NULL &&
        (over_keep || now >= atomic_load_explicit(&h->purge_at, memory_order_relaxed)))
        hk_heap_purge(h, HK_PURGE_OWNER, true);
    if (h != NULL)
        hk_heaps_trim_abandoned_due(now);
}

/* From malloc's slow paths, where starting a thread is safe. */
void hk_purge_poll(void)
{
    if (HK_UNLIKELY(atomic_load_explicit(&hk_detour, memory_order_relaxed) & HK_DETOUR_PURGER))
        hk_purge_start();
}

void hk_purge_fork_lock(void)
{
    pthread_mutex_lock(&purger_lock);
}

void hk_purge_fork_parent(void)
{
    pthread_mutex_unlock(&purger_lock);
}

/* The purger did not survive the fork: the child has none until it has
 * threads of its own and memory waits. */
void hk_purge_fork_child(void)
{
    pthread_mutex_init(&purger_lock, NULL);
    purger_joinable = false;
    atomic_store(&purger_state, PURGER_NONE);
    atomic_fetch_and(&hk_detour, (uint8_t)~HK_DETOUR_PURGER);
}
