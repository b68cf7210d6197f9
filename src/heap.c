/*
 * Heaps and threads.  Each thread allocates from its own heap, reached
 * through initial-exec TLS.  A heap outlives its thread: when the thread
 * exits, the heap is abandoned with all its pages and the next new thread
 * adopts it, so thread churn reuses memory instead of growing it.
 */
#include <pthread.h>
#include <string.h>

#include "internal.h"

__thread struct hk_tls hk_tls __attribute__((tls_model("initial-exec"))) = {
    .small_key = ~(uintptr_t)0,
};

static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hk_heap *all_heaps;
static struct hk_heap *abandoned_heaps;
static pthread_key_t heap_key;

static void tls_bind(struct hk_heap *h)
{
    hk_tls.heap = h;
    hk_tls.small_key = h ? h->arenas->base >> HK_SMALL_REGION_SHIFT : ~(uintptr_t)0;
}

static struct hk_heap *heap_create(void)
{
    struct hk_arena *a = hk_arena_create(NULL, sizeof(struct hk_heap));
    if (a == NULL)
        return NULL;
    struct hk_heap *h = HK_ARENA_EXTRA(a);
    a->heap = h;
    h->arenas = a;
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
        h->abandoned = false;
    }
    pthread_mutex_unlock(&heaps_lock);
    if (h == NULL)
        h = heap_create();
    if (h == NULL)
        return NULL;
    tls_bind(h);
    /* A non-NULL value makes pthread call heap_thread_exit at thread exit. */
    pthread_setspecific(heap_key, h);
    if (atomic_load_explicit(&h->delayed, memory_order_relaxed) != NULL)
        hk_heap_drain_delayed(h);
    return h;
}

/* Give the blocks of the thread's TLS lists back to their pages. */
void hk_heap_flush_tls(struct hk_heap *h)
{
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++) {
        void *list = hk_tls.free[cls];
        if (list == NULL)
            continue;
        struct hk_page *pg = h->current[cls];
        void *tail = list;
        int32_t n = 1;
        while (*(void **)tail != NULL) {
            tail = *(void **)tail;
            n++;
        }
        *(void **)tail = pg->local_free;
        pg->local_free = list;
        pg->used -= n;
        hk_tls.free[cls] = NULL;
    }
}

/* Retire every current page that is empty; the others join their queues.
 * The TLS lists must have been flushed. */
static void release_current_pages(struct hk_heap *h)
{
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++) {
        struct hk_page *pg = h->current[cls];
        if (pg == NULL)
            continue;
        h->current[cls] = NULL;
        if (pg->used == 0) {
            hk_arena_page_free(pg);
        } else {
            pg->state = HK_PAGE_AVAILABLE;
            hk_page_queue_push(h, pg);
        }
    }
}

static void heap_thread_exit(void *arg)
{
    struct hk_heap *h = arg;
    if (h != hk_tls.heap)
        return;
    hk_heap_flush_tls(h);
    tls_bind(NULL);
    hk_heap_drain_delayed(h);
    release_current_pages(h);
    hk_heap_collect(h, false);
    pthread_mutex_lock(&heaps_lock);
    h->abandoned = true;
    h->next_abandoned = abandoned_heaps;
    abandoned_heaps = h;
    pthread_mutex_unlock(&heaps_lock);
}

void hk_heap_drain_delayed(struct hk_heap *h)
{
    void *b = atomic_exchange_explicit(&h->delayed, NULL, memory_order_acquire);
    while (b != NULL) {
        void *next = *(void **)b;
        hk_page_free_local(hk_page_of_block(b), b);
        b = next;
    }
}

/* Purge the free pages whose delay has passed (all of them when forced),
 * and set when the next purge is due. */
void hk_heap_collect(struct hk_heap *h, bool force)
{
    uint64_t now = hk_clock_ms();
    uint64_t delay = force ? 0 : hk_config.purge_delay_ms;
    uint64_t next = 0;
    for (struct hk_arena *a = h->arenas; a != NULL; a = a->next) {
        hk_arena_purge(a, now, delay);
        for (unsigned k = 0; k < HK_NKINDS; k++) {
            struct hk_page *oldest = a->region[k].dirty_tail;
            uint64_t due = oldest != NULL ? oldest->freed_at + hk_config.purge_delay_ms : 0;
            if (due != 0 && (next == 0 || due < next))
                next = due;
        }
    }
    h->purge_at = next;
}

/* hak_collect: everything that can go back to the OS, now.  The calling
 * thread's heap is collected in place; abandoned heaps are taken off their
 * list while they are collected, so no thread adopts one meanwhile. */
void hk_heaps_collect_all(void)
{
    struct hk_heap *mine = hk_tls.heap;
    if (mine != NULL) {
        hk_heap_flush_tls(mine);
        hk_heap_drain_delayed(mine);
        release_current_pages(mine);
        hk_heap_collect(mine, true);
    }
    pthread_mutex_lock(&heaps_lock);
    struct hk_heap *list = abandoned_heaps;
    abandoned_heaps = NULL;
    pthread_mutex_unlock(&heaps_lock);
    struct hk_heap *last = NULL;
    for (struct hk_heap *h = list; h != NULL; h = h->next_abandoned) {
        hk_heap_drain_delayed(h);
        hk_heap_collect(h, true);
        last = h;
    }
    if (last != NULL) {
        pthread_mutex_lock(&heaps_lock);
        last->next_abandoned = abandoned_heaps;
        abandoned_heaps = list;
        pthread_mutex_unlock(&heaps_lock);
    }
}

/* fork: the child keeps only the forking thread.  Heaps of the other threads
 * may have been in the middle of an update; they are not on the abandoned
 * list, so the child never adopts them (frees into their pages are queued as
 * remote frees and stay there). */
static void fork_prepare(void)
{
    pthread_mutex_lock(&heaps_lock);
    hk_huge_lock_all();
}

static void fork_parent(void)
{
    hk_huge_unlock_all();
    pthread_mutex_unlock(&heaps_lock);
}

static void fork_child(void)
{
    hk_huge_reset_locks();
    pthread_mutex_init(&heaps_lock, NULL);
}

void hk_heap_init_once(void)
{
    pthread_key_create(&heap_key, heap_thread_exit);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}
