/*
 * Heaps and threads.  Each thread allocates from its own heap, reached
 * through initial-exec TLS.  A heap outlives its thread: when the thread
 * exits, the heap is abandoned with all its pages and the next new thread
 * adopts it, so thread churn reuses memory instead of growing it.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "stats.h"

__thread struct hk_tls hk_tls __attribute__((tls_model("initial-exec"))) = {
    .page_key = ~(uintptr_t)0,
    .small_key = ~(uintptr_t)0,
};

/* Abandoned heaps that keep warm pages for the next threads (the newest,
 * which new threads adopt first): a pool's next threads start warm, but 16
 * threads that exit together leave 4 warm heaps, not 16 (threads/thread_exit:
 * 36 MiB resident after them, where all 16 kept 128 MiB; glibc 42). */
#define WARM_ABANDONED 4

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hk_heap *all_heaps;
static struct hk_heap *abandoned_heaps;
_Atomic uint64_t hk_abandoned_trim_at;
static pthread_key_t heap_key;
/* Threads that have a heap and have not exited: whether the program has
 * threads of its own, for the purger (purge.c). */
static _Atomic uint32_t threads_live;

uint32_t hk_heap_threads_live(void)
{
    return atomic_load_explicit(&threads_live, memory_order_relaxed);
}

static void tls_bind(struct hk_heap *h)
{
    hk_tls.heap = h;
    /* In a compact arena, memory that is not hakmem's may share the small
     * region's address range: every free of such a heap is validated. */
    bool fast = h != NULL && !h->arenas->compact;
    hk_tls.small_key = fast ? h->arenas->base >> HK_SMALL_REGION_SHIFT : ~(uintptr_t)0;
    hk_tls.page_key = hk_tls.small_key;
    memcpy(hk_tls.class_of, hk_class_of_index, sizeof hk_tls.class_of);
}

static struct hk_heap *heap_create(void)
{
    struct hk_arena *a = hk_arena_create(NULL, sizeof(struct hk_heap));
    if (a == NULL)
        return NULL;
    struct hk_heap *h = HK_ARENA_EXTRA(a);
    a->heap = h;
    h->arenas = a;
    pthread_mutex_init(&h->pool_lock, NULL);
    h->purge_delay = hk_config.purge_delay_ms;
    /* While sampling, the thread's first medium or large block sets it
     * (hk_heap_sample_bitmap). */
    h->trim_budget = h->trim_budget_set = hk_heap_sampling ? 0 : HK_TRIM_BYTES;
    hk_stat_add(&hk_os_stats.heaps, 1);
    pthread_mutex_lock(&heaps_lock);
    h->next = all_heaps;
    all_heaps = h;
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

struct hk_heap *hk_heap_attach(void)
{
    hk_init();
    pthread_mutex_lock(&heaps_lock);
    struct hk_heap *h = abandoned_heaps;
    if (h != NULL) {
        abandoned_heaps = h->next_abandoned;
        __atomic_store_n(&h->abandoned, false, __ATOMIC_RELAXED);
        h->untrimmed = false; /* its owner trims it from now on */
    }
    pthread_mutex_unlock(&heaps_lock);
    if (h == NULL)
        h = heap_create();
    if (h == NULL) {
        hk_release_all_memory();
        h = heap_create();
    }
    if (h == NULL)
        return NULL;
    tls_bind(h);
    /* While sampling, an abandoned heap's trim budget ends at its last
     * thread's point: this thread's first count goes to the profiler. */
    if (hk_heap_sampling) {
        h->trim_budget = h->trim_budget_set = 0;
        hk_heap_sample_attached(h);
    }
    /* A non-NULL value makes pthread call heap_thread_exit at thread exit. */
    pthread_setspecific(heap_key, h);
    /* The program has threads of its own from now on: it may have a
     * purger (purge.c), and a malloc is a safe place to start one. */
    if (atomic_fetch_add(&threads_live, 1) + 1 >= 2 && hk_config.purge_thread)
        hk_purge_start();
    if (atomic_load_explicit(&h->delayed, memory_order_relaxed) != NULL)
        hk_heap_drain_delayed(h);
    return h;
}

/* Give the blocks of the thread's TLS lists back to their pages; other
 * heaps' blocks go home. */
void hk_heap_flush_tls(struct hk_heap *h)
{
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++)
        hk_list_release(h, cls);
    hk_remote_flush();
}

/* Every current page lets go: empty ones are retired, the others join
 * their queues or are full.  The TLS lists must have been flushed. */
static void release_current_pages(struct hk_heap *h)
{
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++)
        if (h->current[cls] != NULL)
            hk_page_leave_current(h, h->current[cls]);
}

/* The value of heap_key for a thread that has no heap but must flush its
 * buffered remote frees at exit. */
static char no_heap;

void hk_heap_watch_exit(void)
{
    pthread_setspecific(heap_key, &no_heap);
}

/* The abandoned heap just past the warm ones, taken off the list so that
 * no thread adopts it while it gives back its memory: NULL when there is
 * none.  heaps_lock held. */
static struct hk_heap *take_cold_heap(void)
{
    struct hk_heap **link = &abandoned_heaps;
    for (unsigned i = 0; i < WARM_ABANDONED && *link != NULL; i++)
        link = &(*link)->next_abandoned;
    struct hk_heap *cold = *link;
    if (cold != NULL) {
        *link = cold->next_abandoned;
        cold->next_abandoned = NULL;
    }
    return cold;
}

/* Cold heaps (a chain through next_abandoned) go back at the end of the
 * list, behind the warm ones.  heaps_lock held. */
static void append_abandoned(struct hk_heap *chain)
{
    struct hk_heap **link = &abandoned_heaps;
    while (*link != NULL)
        link = &(*link)->next_abandoned;
    *link = chain;
}

/* An abandoned heap off the list (no thread can adopt it meanwhile) gives
 * back the memory of every free block in its pages in use, and its free
 * pages as `mode` says. */
static void give_back_abandoned(struct hk_heap *h, enum hk_purge_mode mode)
{
    hk_heap_drain_delayed(h);
    /* The drain's messages went to this thread's stash, for its sends: a
     * thread without a heap (the purger, or an exiting thread that has let
     * go of its stash) makes none, and would take them with it. */
    if (hk_tls.heap == NULL)
        hk_remote_stash_release(NULL);
    hk_bitmap_trim_all(h);
    h->untrimmed = false;
    hk_heap_purge(h, mode, true);
}

/* The abandoned heaps that waited a trim period untrimmed (no thread
 * adopted them) give back what their pages in use hold free: as an owner's
 * pages do, a period after their peak, and with no owner to do it. */
void hk_heaps_trim_abandoned(uint64_t now)
{
    uint64_t period = hk_bitmap_trim_period();
    struct hk_heap *due = NULL, **tail = &due;
    uint64_t next = 0;
    pthread_mutex_lock(&heaps_lock);
    for (struct hk_heap **link = &abandoned_heaps; *link != NULL;) {
        struct hk_heap *h = *link;
        if (h->untrimmed && now >= h->abandoned_at + period) {
            *link = h->next_abandoned;
            h->next_abandoned = NULL; /* the end of the chain `due` */
            *tail = h;
            tail = &h->next_abandoned;
            continue;
        }
        if (h->untrimmed && (next == 0 || h->abandoned_at + period < next))
            next = h->abandoned_at + period;
        link = &h->next_abandoned;
    }
    /* Before the work: a free it makes that calls here finds nothing due. */
    atomic_store_explicit(&hk_abandoned_trim_at, next, memory_order_relaxed);
    pthread_mutex_unlock(&heaps_lock);
    if (due == NULL)
        return;
    for (struct hk_heap *h = due; h != NULL; h = h->next_abandoned)
        give_back_abandoned(h, HK_PURGE_ABANDONED);
    pthread_mutex_lock(&heaps_lock);
    append_abandoned(due);
    pthread_mutex_unlock(&heaps_lock);
}

static void heap_thread_exit(void *arg)
{
    hk_remote_flush();
    struct hk_heap *h = arg;
    if (h != hk_tls.heap) {
        hk_remote_stash_release(NULL);
        return;
    }
    hk_heap_drain_delayed(h);
    hk_heap_flush_tls(h);
    /* After the drain, which keeps messages for the thread's sends, and
     * the flush, which sends. */
    hk_remote_stash_release(h);
    tls_bind(NULL);
    release_current_pages(h);
    /* The exit ends a trim period (hk_bitmap_trim_owner_exit), but for a
     * heap whose owners took purged memory back soon (its purge delay grew):
     * its next owner, likely as soon, would fault the trimmed blocks in
     * again (bench churn-large, 8 large pages kept: 0.47-0.50 s with the
     * trim, 0.33-0.35 without).  A heap no thread adopts is trimmed a trim
     * period later all the same (hk_heaps_trim_abandoned). */
    pthread_mutex_lock(&h->pool_lock);
    bool refaulted = hk_purge_delay_factor(h) > 1;
    pthread_mutex_unlock(&h->pool_lock);
    if (!refaulted)
        hk_bitmap_trim_owner_exit(h);
    /* An abandoned heap keeps a little warm memory for its next owner. */
    hk_heap_purge(h, HK_PURGE_ABANDONED, true);
    uint64_t now = hk_clock_ms();
    pthread_mutex_lock(&heaps_lock);
    __atomic_store_n(&h->abandoned, true, __ATOMIC_RELAXED);
    h->untrimmed = true;
    h->abandoned_at = now;
    uint64_t due = now + hk_bitmap_trim_period();
    uint64_t at = atomic_load_explicit(&hk_abandoned_trim_at, memory_order_relaxed);
    if (at == 0 || due < at)
        atomic_store_explicit(&hk_abandoned_trim_at, due, memory_order_relaxed);
    h->next_abandoned = abandoned_heaps;
    abandoned_heaps = h;
    struct hk_heap *cold = take_cold_heap();
    pthread_mutex_unlock(&heaps_lock);
    /* The purger, or the next owner's ticks, trims it should it wait. */
    hk_purge_schedule(NULL, now, false);
    /* Only the newest abandoned heaps stay warm: the one this exit pushed
     * past them gives back all its free memory, in the pages its blocks
     * still hold too (what only an owner may touch: no thread can adopt
     * it meanwhile). */
    if (cold != NULL) {
        give_back_abandoned(cold, HK_PURGE_ALL);
        pthread_mutex_lock(&heaps_lock);
        append_abandoned(cold);
        pthread_mutex_unlock(&heaps_lock);
    }
    /* The program may be down to one thread now: then no purger may run
     * (purge.c), and the owners keep what they keep idle. */
    if (atomic_fetch_sub(&threads_live, 1) - 1 < 2)
        hk_purge_stop();
}

static inline void drain_block(void *b)
{
    HK_SECURE_DRAINED(b);
    hk_page_free_local(hk_page_of_block(b), b, "free");
}

void hk_heap_drain_delayed(struct hk_heap *h)
{
    struct hk_remote_msg *m = atomic_exchange_explicit(&h->delayed, NULL, memory_order_acquire);
    struct hk_remote_msg *done = NULL; /* NULL-terminated */
    while (m != NULL) {
        struct hk_remote_msg *next = m->next;
        if (m->count == 0) { /* the block itself (remote.c) */
            drain_block(m);
        } else {
            /* No prefetch of the blocks' lines: asking for them eight
             * blocks ahead (for writing or for reading) made prodcons a
             * third slower (1.47x as fast without, 9 paired rounds; the
             * other rows that send blocks home within noise). */
            for (unsigned i = 0, n = m->count; i < n; i++)
                drain_block(m->blocks[i]);
            m->next = done;
            done = m;
        }
        m = next;
    }
    if (done != NULL)
        hk_remote_msgs_release(h == hk_tls.heap ? h : NULL, done);
}

/* hak_collect: everything that can go back to the OS, now.  The calling
 * thread's heap is collected in place; abandoned heaps are taken off their
 * list while they are collected, so that no thread adopts one meanwhile.
 * Other threads' heaps give back their free pages (the pool lock guards
 * those, as for the purger); what their owners hold (their current pages,
 * TLS lists, the unused tops of medium and large pages in use) only they
 * can touch.  Returns the bytes given back. */
size_t hk_heaps_collect_all(void)
{
    size_t bytes = 0;
    hk_remote_flush();
    struct hk_heap *mine = hk_tls.heap;
    if (mine != NULL) {
        hk_heap_drain_delayed(mine);
        hk_heap_flush_tls(mine);
        release_current_pages(mine);
        hk_span_release_empty(mine);
        bytes += hk_bitmap_trim_all(mine);
        bytes += hk_heap_purge(mine, HK_PURGE_ALL, true);
    }
    pthread_mutex_lock(&heaps_lock);
    struct hk_heap *list = abandoned_heaps;
    abandoned_heaps = NULL;
    pthread_mutex_unlock(&heaps_lock);
    struct hk_heap *last = NULL;
    for (struct hk_heap *h = list; h != NULL; h = h->next_abandoned) {
        hk_heap_drain_delayed(h);
        hk_span_release_empty(h);
        bytes += hk_bitmap_trim_all(h);
        bytes += hk_heap_purge(h, HK_PURGE_ALL, true);
        last = h;
    }
    for (struct hk_heap *h = hk_heaps_first(); h != NULL; h = h->next)
        if (h != mine && !__atomic_load_n(&h->abandoned, __ATOMIC_RELAXED))
            bytes += hk_heap_purge(h, HK_PURGE_ALL, true);
    if (last != NULL) {
        pthread_mutex_lock(&heaps_lock);
        last->next_abandoned = abandoned_heaps;
        abandoned_heaps = list;
        pthread_mutex_unlock(&heaps_lock);
    }
    return bytes;
}

/* The purger's pass: heaps are never freed and are added at the head of the
 * list, so the list from a snapshot of its head can be walked unlocked. */
struct hk_heap *hk_heaps_first(void)
{
    pthread_mutex_lock(&heaps_lock);
    struct hk_heap *first = all_heaps;
    pthread_mutex_unlock(&heaps_lock);
    return first;
}

/* No purger runs from now on: every heap keeps no more than its owner
 * keeps idle; abandoned heaps keep what they keep for their next owner. */
void hk_heaps_settle(void)
{
    for (struct hk_heap *h = hk_heaps_first(); h != NULL; h = h->next) {
        bool abandoned = __atomic_load_n(&h->abandoned, __ATOMIC_RELAXED);
        if (atomic_load_explicit(&h->purge_at, memory_order_relaxed) != 0)
            hk_heap_purge(h, abandoned ? HK_PURGE_ABANDONED : HK_PURGE_OWNER, true);
    }
    hk_huge_cache_shrink();
}

bool hk_heaps_purge_all(void)
{
    bool pending = false;
    for (struct hk_heap *h = hk_heaps_first(); h != NULL; h = h->next) {
        if (atomic_load_explicit(&h->purge_at, memory_order_relaxed) == 0)
            continue;
        bool abandoned = __atomic_load_n(&h->abandoned, __ATOMIC_RELAXED);
        hk_heap_purge(h, abandoned ? HK_PURGE_ABANDONED : HK_PURGE_DUE, false);
        pending |= atomic_load_explicit(&h->purge_at, memory_order_relaxed) != 0;
    }
    return pending;
}

/* fork: the child keeps only the forking thread.  Every lock is taken before
 * the fork so that none is held in the child.  Heaps of the other threads
 * may have been in the middle of an update; they are not on the abandoned
 * list, so the child never adopts them (frees into their pages go to their
 * delayed lists and stay there). */
static void fork_prepare(void)
{
    hk_purge_fork_lock(); /* first: a thread stopping the purger holds it */
    hk_heap_profile_fork_lock(); /* before the huge locks, as a sampled free */
    hk_guard_fork_lock();
    hk_remote_fork_lock();
    pthread_mutex_lock(&heaps_lock);
    for (struct hk_heap *h = all_heaps; h != NULL; h = h->next)
        pthread_mutex_lock(&h->pool_lock);
    hk_huge_lock_all();
}

static void fork_parent(void)
{
    hk_huge_unlock_all();
    for (struct hk_heap *h = all_heaps; h != NULL; h = h->next)
        pthread_mutex_unlock(&h->pool_lock);
    pthread_mutex_unlock(&heaps_lock);
    hk_remote_fork_unlock(false);
    hk_guard_fork_unlock(false);
    hk_heap_profile_fork_unlock(false);
    hk_purge_fork_parent();
}

static void fork_child(void)
{
    hk_huge_reset_locks();
    for (struct hk_heap *h = all_heaps; h != NULL; h = h->next)
        pthread_mutex_init(&h->pool_lock, NULL);
    pthread_mutex_init(&heaps_lock, NULL);
    hk_remote_fork_unlock(true);
    hk_guard_fork_unlock(true);
    hk_heap_profile_fork_unlock(true);
    atomic_store(&threads_live, hk_tls.heap != NULL ? 1 : 0);
    hk_purge_fork_child();
}

void hk_heap_init_once(void)
{
    pthread_key_create(&heap_key, heap_thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}
