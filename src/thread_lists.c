/*
 * The thread's free lists: where a small block waits between a free and the
 * thread's next malloc of its class.
 *
 * A class's list gets a refill's blocks (page.c) and the small blocks of
 * other heaps, of a cache line or more, that the thread frees (remote.c);
 * the next malloc of the class takes the block freed last, still in the
 * cache.  The thread's own small blocks go back to their pages, found with
 * one compare (free.c), until the thread has freed many of other heaps'
 * blocks: then that compare is a branch no predictor learns, since whose
 * block comes next is up to the program (server: 45% of frees mispredicted
 * in callgrind's branch simulation, 2 threads).  From then on
 * (hk_lists_consider) free sends every small block of a full-size arena to
 * the list of its class, found in its arena's class map, with no branch on
 * whose it is (8% mispredicted; server 1.38x as fast).  A thread that
 * seldom frees others' blocks keeps the shorter path (13 instructions;
 * about 30 to a list).
 *
 * A block on a list stays counted as out in its page (`used`, page.c), and
 * another heap's in its owner's page: nothing but the list knows it is
 * free.  The list holds at most the class's keep_cap pushed blocks beside
 * a refill's, counted in its links (internal.h): a push makes a head with
 * one more, a malloc's pop restores the count below, and malloc pays no
 * instruction for it.  (A count of room in TLS, one more in malloc, a
 * store, cost working-set, whose thread never pushes, 4-5%; walking the
 * list to bound it, server 1.14x instead of 1.40x.)  A push at the cap
 * (hk_list_full) keeps the list's newest half, relinked as pushed blocks,
 * and sends the rest where it belongs, the thread's own blocks to their
 * pages, others' home (remote.c).
 *
 * Another heap's block under a cache line is not kept: it shares its line
 * with blocks its owner may be writing, and a thread that reused it would
 * write that line too (passive false sharing: false-sharing-passive ran 3x
 * slower).
 *
 * While sampling (heap_profile.c), blocks are counted as they enter a list:
 * every class's cap (hk_list_cap) is then 0, which sends every push past
 * the cap's test, where hk_list_push_counted counts it or hk_list_full
 * decides.
 */
#include <stdint.h>

#include "internal.h"

/* Entry 0 would otherwise match the pointers of the lowest 2 GiB. */
uintptr_t hk_small_halves[HK_SMALL_HALVES] = {[0] = ~(uintptr_t)0};
uint16_t hk_list_cap[HK_NCLASSES];
uintptr_t hk_push_cap_link[HK_NCLASSES];
int64_t hk_push_size[HK_NCLASSES];

void hk_lists_sampling_start(void)
{
    for (unsigned c = 0; c < HK_NCLASSES; c++) {
        hk_push_cap_link[c] = (uintptr_t)hk_classes[c].keep_cap << HK_LINK_COUNT_SHIFT;
        hk_push_size[c] = (int64_t)hk_classes[c].block_size;
        hk_list_cap[c] = 0;
    }
}

void hk_lists_register(uintptr_t arena_base)
{
    if (HK_SECURE_ON)
        return;
    uintptr_t key = arena_base >> HK_SMALL_REGION_SHIFT, none = 0;
    __atomic_compare_exchange_n(&hk_small_halves[key & (HK_SMALL_HALVES - 1)], &none, key, false,
                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

void hk_lists_unregister(uintptr_t arena_base)
{
    uintptr_t key = arena_base >> HK_SMALL_REGION_SHIFT;
    if (key != 0)
        __atomic_compare_exchange_n(&hk_small_halves[key & (HK_SMALL_HALVES - 1)], &key, 0, false,
                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* Over its last HK_LISTS_LOOK frees of other heaps' blocks, h's thread
 * freed at least one for every LISTS_SHARE blocks its lists took from
 * pages or kept (besides those its own frees gave them): its own small
 * blocks go to its lists from now on, for as long as hk_lists_retry finds
 * that most of its frees are others' blocks (below). */
#define LISTS_SHARE 4
/* A switched thread keeps its lists while its own blocks are at most
 * LISTS_OWN_MAX percent of its small frees, judged every HK_LISTS_RETRY
 * slow refills once it has made LISTS_JUDGE_MIN of them.  Above, the branch
 * on whose a block is gets learnt, and its pages take its own blocks with
 * the shorter path.  However few of its frees are its own blocks, it keeps
 * its lists: back on its pages, every other heap's block would be validated
 * by hk_free_slow, which reads the owner's arena header (server, 16 threads,
 * 6% of frees their own: 65% of frees went there, and server ran 1.15x as
 * fast kept on the lists).  Back on its pages, it waits a cool-down of
 * looks that doubles with each judgement that sent it back. */
#define LISTS_OWN_MAX 90
#define LISTS_JUDGE_MIN 1024
#define LISTS_COOL_MIN 4
#define LISTS_COOL_MAX 1024

/* The blocks h's thread's lists ever took from pages or kept. */
static uint64_t supplied_all(const struct hk_heap *h)
{
    uint64_t supplied = 0;
    for (unsigned c = 1; c < HK_NCLASSES; c++)
        supplied += h->supplied[c];
    return supplied;
}

void hk_lists_consider(struct hk_heap *h)
{
    if (h->lists_cool != 0) {
        h->lists_cool--;
        return;
    }
    uint64_t supplied = supplied_all(h);
    uint64_t taken = supplied - h->supplied_seen;
    h->supplied_seen = supplied;
    struct hk_tls *t = &hk_tls;
    if (taken > (uint64_t)HK_LISTS_LOOK * LISTS_SHARE ||
        t->heap != h || !hk_listed_half(t->small_key))
        return;
    t->lists_count = 0;
    t->page_key = ~(uintptr_t)0;
}

void hk_lists_retry(struct hk_heap *h)
{
    struct hk_tls *t = &hk_tls;
    uint64_t all = (uint32_t)t->lists_count, own = t->lists_count >> 32;
    if (all < LISTS_JUDGE_MIN)
        return;
    t->lists_count = 0;
    if (own * 100 <= all * LISTS_OWN_MAX) {
        h->lists_backoff = 0;
        return;
    }
    h->supplied_seen = supplied_all(h);
    h->foreign_frees = 0;
    h->lists_backoff = h->lists_backoff == 0 ? LISTS_COOL_MIN
                     : h->lists_backoff < LISTS_COOL_MAX ? h->lists_backoff * 2 : LISTS_COOL_MAX;
    h->lists_cool = h->lists_backoff;
    t->page_key = t->small_key;
}

/* Block b, off the lists, goes where it belongs: to its page if it is h's,
 * else home. */
static void release_block(struct hk_heap *h, void *b)
{
    struct hk_heap *owner = hk_heap_of_block(b);
    if (owner == h)
        hk_page_free_local(hk_page_of_block(b), b, "free");
    else
        hk_remote_free(owner, b);
}

/* The blocks of the list whose head is `link`, of class cls, go back.
 * While sampling each was counted as it came (page.c, remote.c) and is
 * uncounted. */
static void release_list(struct hk_heap *h, unsigned cls, void *link)
{
    uint64_t n = 0;
    for (void *b = hk_link_block(link); b != NULL; n++) {
        void *next = hk_list_next(b);
        release_block(h, b);
        b = next;
    }
    if (h != NULL && n != 0) {
        hk_count(&h->returned[cls], n);
        if (HK_UNLIKELY(hk_heap_sampling))
            hk_sample_uncount(h, n, hk_classes[cls].block_size);
    }
}

/* The list is at its cap (or, while sampling, p was not counted inline). */
HK_NOINLINE void hk_list_full(unsigned cls, void *p)
{
    struct hk_tls *t = &hk_tls;
    struct hk_heap *h = t->heap;
    unsigned cap = hk_classes[cls].keep_cap;
    if (HK_UNLIKELY(cls == 0)) /* no page holds p: a free page, or the arena's header */
        hk_invalid_pointer("free", p);
    if (h == NULL || cap == 0) {
        /* A thread without a heap never mallocs from its lists: p goes
         * home unwritten. */
        release_block(h, p);
        return;
    }
    if (HK_UNLIKELY(hk_heap_sampling)) {
        /* p's class has a point pending: its next malloc must refill, not
         * take p.  p holds a point: that malloc, which would have taken
         * p, is the point, and the list waits aside for it (a list left
         * in place took a point hundreds of pushes to reach, every push
         * of every class sent home meanwhile: xthread-50 profiled, 84,000
         * in 800,000). */
        if (hk_sample_pending(cls)) {
            release_block(h, p);
            return;
        }
        if (!hk_sample_pass_pushed(h, cls)) {
            release_block(h, p);
            if (t->free[cls] != NULL && hk_sample_pending(cls) && h->stashed == NULL) {
                h->stashed = t->free[cls];
                h->stashed_cls = cls;
                t->free[cls] = NULL;
            }
            return;
        }
        void *head = t->free[cls];
        if (hk_link_pushed(head) < cap) {
            hk_list_put(cls, p, head);
            return;
        }
    }
    /* The list's newest half stays, every block of it counted as pushed
     * (relinked from the bottom up), then p goes on it. */
    void *top = hk_link_block(t->free[cls]), *rest = NULL;
    unsigned n = 0;
    if (top != NULL) {
        void *last = top;
        for (n = 1; n < cap / 2 && hk_list_next(last) != NULL; n++)
            last = hk_list_next(last);
        rest = hk_list_next(last);
        void *b = top;
        for (unsigned i = 1; i < n; i++) {
            void *next = hk_list_next(b);
            hk_set_next(b, hk_link_make(next, n - i));
            b = next;
        }
        hk_set_next(last, NULL);
    }
    hk_set_next(p, hk_link_make(top, n));
    t->free[cls] = hk_link_make(p, n + 1);
    release_list(h, cls, rest);
}

void hk_list_release(struct hk_heap *h, unsigned cls)
{
    struct hk_tls *t = &hk_tls;
    void *link = t->free[cls];
    t->free[cls] = NULL;
    release_list(h, cls, link);
    if (h != NULL && hk_list_stashed(h, cls)) {
        link = h->stashed;
        h->stashed = NULL;
        release_list(h, cls, link);
    }
}

void *hk_list_unstash(struct hk_heap *h, unsigned cls)
{
    void *p = hk_heap_sample_stashed(cls);
    HK_ASSERT(hk_tls.free[cls] == NULL);
    hk_tls.free[cls] = h->stashed;
    h->stashed = NULL;
    return p != NULL ? p : hk_tls_pop(cls);
}
