/*
 * The life of a page.
 *
 * A page's blocks are, at any moment, in exactly one of these places:
 *   - with the user;
 *   - in the owning thread's TLS list (only for the class's current page);
 *   - in local_free (freed by the owner);
 *   - on their way back from another thread: in that thread's buffer or in
 *     the heap's delayed list (remote.c), which the owner drains on its next
 *     refill, freeing each block as its own;
 *   - never carved yet (`unbumped`, at the end of the page).
 * `used` counts every block not in local_free and not unbumped, so it reaches
 * zero exactly when a local free makes the page empty.  Taking free blocks
 * for the TLS list always empties local_free, after which used is simply
 * capacity - unbumped: no list is ever walked to count it.
 *
 * A page with fewer free blocks than its class's `regain` (a few, or 1:
 * see size_class.c) and none uncarved is FULL: it leaves the class queue,
 * and `used` becomes the count of frees missing to `regain`, so that the
 * free that completes them reaches zero and brings it back (hk_page_event)
 * with that many blocks to give.  So free's fast path needs one counter
 * decrement and one branch for every page transition, and a page taken
 * back from the queue serves at least `regain` mallocs.
 */
#include <errno.h>

#include "internal.h"
#include "stats.h"

void hk_page_init(struct hk_page *pg, struct hk_heap *h, unsigned cls)
{
    const struct hk_class *k = &hk_classes[cls];
    HK_SECURE_PAGE_INIT(pg, cls);
    pg->local_free = NULL;
    pg->used = 0;
    pg->block_size = k->block_size;
    pg->heap = h;
    pg->next = pg->prev = NULL;
    pg->cls = (uint8_t)cls;
    pg->kind = k->kind;
    pg->first_block = k->first_block;
    pg->div_magic = k->div_magic;
    pg->capacity = (uint16_t)hk_arena_page_capacity(pg, k->capacity);
    pg->unbumped = pg->capacity;
    pg->keep_empty = false;
    pg->blocks = hk_page_blocks(pg);
    if (pg->kind != HK_SMALL)
        hk_bitmap_init(pg);
    hk_arena_page_in_use(pg, cls);
}

/* Link the next batch of never-used blocks in front of `list` (the
 * hardened build: cleared, in a random order). */
static void *page_carve(struct hk_page *pg, void *list)
{
    const struct hk_class *k = &hk_classes[pg->cls];
    unsigned n = pg->unbumped < k->batch ? pg->unbumped : k->batch;
    size_t size = pg->block_size;
    char *first = hk_page_blocks(pg) + (size_t)(pg->capacity - pg->unbumped) * size;
#ifdef HK_SECURE
    pg->unbumped = (uint16_t)(pg->unbumped - n);
    return hk_secure_carve(first, size, n, list);
#else
    char *b = first;
    for (unsigned i = 1; i < n; i++, b += size)
        hk_set_next(b, b + size);
    hk_set_next(b, list);
    pg->unbumped = (uint16_t)(pg->unbumped - n);
    return first;
#endif
}

/* All the free blocks the page can give now, as a list, or NULL.  A refill
 * should serve a fair number of mallocs: when fewer than half a batch of
 * blocks were freed locally (their count follows from `used`), a batch of
 * never-used blocks is carved in front of them.  So a page touches only
 * about its class's peak live count plus a batch of blocks, and refills stay
 * rare.  (Carving whenever fewer than a batch were freed saves another 0.5
 * instructions per operation on random-mixed, for 20% more memory.) */
static void *page_take(struct hk_heap *h, struct hk_page *pg)
{
    const struct hk_class *k = &hk_classes[pg->cls];
    void *list = pg->local_free;
    unsigned freed = (unsigned)(pg->capacity - pg->unbumped - pg->used);
    unsigned carved = pg->unbumped;
    pg->local_free = NULL;
    if (pg->unbumped != 0 && freed * 2 < k->batch)
        list = page_carve(pg, list);
    carved -= pg->unbumped;
    pg->used = pg->capacity - pg->unbumped;
    if (list != NULL)
        hk_count(&h->supplied[pg->cls], freed + carved);
    return list;
}

void hk_page_queue_push(struct hk_heap *h, struct hk_page *pg)
{
    struct hk_page *head = h->queue[pg->cls];
    HK_ASSERT(pg->next == NULL && pg->prev == NULL && head != pg);
    pg->prev = NULL;
    pg->next = head;
    if (head != NULL)
        head->prev = pg;
    h->queue[pg->cls] = pg;
}

void hk_page_queue_remove(struct hk_heap *h, struct hk_page *pg)
{
    if (pg->prev != NULL)
        pg->prev->next = pg->next;
    else
        h->queue[pg->cls] = pg->next;
    if (pg->next != NULL)
        pg->next->prev = pg->prev;
    pg->next = pg->prev = NULL;
}

/* Refills take the lowest-addressed of the first few queued pages, not the
 * newest: when every refill agrees on which pages to fill first, a class's
 * live blocks gather in its low pages while the others drain, retire and
 * give their memory back.  The scan is bounded so that a class with
 * thousands of pages pays no more than a few loads. */
#define QUEUE_SCAN 8

struct hk_page *hk_page_queue_take(struct hk_heap *h, unsigned cls)
{
    struct hk_page *best = h->queue[cls];
    if (best == NULL)
        return NULL;
    unsigned looked = 1;
    for (struct hk_page *q = best->next; q != NULL && looked < QUEUE_SCAN; q = q->next, looked++)
        if (q < best)
            best = q;
    hk_page_queue_remove(h, best);
    return best;
}

/* A thread's batches of other heaps' blocks go home, full or not, every
 * this many slow refills (a full message goes at once, remote.c).  At
 * every refill, each send was a compare-and-swap on the owner's `delayed`
 * and a message of a few blocks for it to drain.  Every 16th, paired
 * against every one (AMD EPYC, 2 cores; two sets of 9 and 11 rounds):
 * xstress 1.05-1.08, server 1.04-1.06, server-retire 1.01-1.04,
 * xthread-0/50/90, prodcons and churn within noise, peak RSS the same.
 * A thread holds at most a message's worth for each of its batches'
 * owners (HK_REMOTE_OWNERS), as it did between refills before. */
#define HK_SEND_EVERY_REFILLS 16

/* What every slow refill does first: give the thread a heap if it has none
 * (NULL with ENOMEM if it cannot), start the purger if a free asked for it,
 * now and then send this thread's remote frees, and take back the heap's. */
struct hk_heap *hk_refill_begin(struct hk_heap *h, unsigned cls)
{
    if (HK_UNLIKELY(h == NULL)) {
        h = hk_heap_attach();
        if (h == NULL) {
            errno = ENOMEM;
            return NULL;
        }
    }
    hk_count(&h->refills[cls], 1);
    if (HK_UNLIKELY(hk_tls.page_key != hk_tls.small_key) &&
        (++h->list_refills & (HK_LISTS_RETRY - 1)) == 0)
        hk_lists_retry(h);
    if ((++h->refills_since_send & (HK_SEND_EVERY_REFILLS - 1)) == 0)
        hk_remote_flush();
    if (atomic_load_explicit(&h->delayed, memory_order_relaxed) != NULL)
        hk_heap_drain_delayed(h);
    return h;
}

/* The general refill's work: drain the delayed list, then take blocks from
 * the current page, the class queue or a fresh page.  Inlined, so that
 * refill_slow makes no call more for it. */
static inline __attribute__((always_inline)) void *
refill_take(struct hk_heap *h, unsigned cls, struct hk_page **pgp)
{
    h = hk_refill_begin(h, cls);
    if (h == NULL)
        return NULL;
    struct hk_page *pg = h->current[cls];
    if (pg != NULL)
        HK_CHECK_PAGE(pg); /* as the thread's list ran out, before the take */
    if (pg != NULL && h->queue[cls] != NULL &&
        (unsigned)(pg->capacity - pg->unbumped - pg->used) * 2 < hk_classes[cls].batch) {
        /* Few blocks came back to the current page: rather than carve new
         * ones, serve from a page of the queue, whose free blocks are
         * already touched. */
        struct hk_page *next = hk_page_queue_take(h, cls);
        hk_page_leave_current(h, pg);
        hk_page_make_current(h, next);
        pg = next;
    }
    for (;;) {
        if (pg != NULL) {
            void *list = page_take(h, pg);
            if (list == NULL && hk_arena_page_extend(pg))
                list = page_take(h, pg);
            if (list != NULL) {
                *pgp = pg;
                return list;
            }
            hk_page_leave_current(h, pg); /* no block left: full */
        }
        pg = hk_page_next_current(h, cls);
        if (pg == NULL)
            return NULL;
    }
}

/* Blocks of pg this thread freed, on its local list. */
static inline unsigned local_freed(const struct hk_page *pg)
{
    return (unsigned)(pg->capacity - pg->unbumped - pg->used);
}

/* The quick refill is ready: the current page has enough blocks freed by
 * this thread, no delayed frees wait, and none of the detours (HK_DETOUR_*
 * bits) is asked for. */
static inline bool local_ready(struct hk_heap *h, struct hk_page *pg, unsigned cls, uint8_t detours)
{
    return pg != NULL && pg->local_free != NULL &&
           !(atomic_load_explicit(&hk_detour, memory_order_relaxed) & detours) &&
           atomic_load_explicit(&h->delayed, memory_order_relaxed) == NULL &&
           (local_freed(pg) * 2 >= hk_classes[cls].batch || pg->unbumped == 0);
}

/* The quick refill: those blocks, `freed` of them (local_freed). */
static inline void *local_take(struct hk_heap *h, struct hk_page *pg, unsigned cls, unsigned freed)
{
    HK_CHECK_PAGE(pg);
    void *list = pg->local_free;
    pg->local_free = NULL;
    pg->used += freed;
    hk_count(&h->refills[cls], 1);
    hk_count(&h->supplied[cls], freed);
    return list;
}

/* The first block of a refill's list, the rest to the thread's list (with
 * plain links: a refill's blocks count as none pushed, thread_lists.c). */
static inline void *hand_out(struct hk_page *pg, void *list, unsigned cls)
{
    void *next = hk_next(list);
    HK_SECURE_TAKEN(list, next, cls);
    hk_tls.free[cls] = next;
    HK_CHECK_PAGE(pg);
    (void)pg;
    return list;
}

/* A refill's list of n blocks of class cls from pg, while sampling: counted
 * inline against the heap's trim budget (hk_sample_budget_take); a list
 * whose class has a point pending, or that reaches the end of the budget,
 * goes to the profiler, which cuts it at the point. */
static inline void *sampled_hand_out(struct hk_heap *h, struct hk_page *pg, unsigned cls,
                                     void *list, unsigned n)
{
    if (HK_UNLIKELY(hk_sample_pending(cls) ||
                    !hk_sample_budget_take(h, (int64_t)(n * hk_classes[cls].block_size))))
        return hk_heap_sample_refill(h, pg, cls, list, n);
    return hand_out(pg, list, cls);
}

/* The general refill while sampling (out of line: the quick path below
 * keeps a short frame). */
static HK_NOINLINE void *refill_general_sampled(struct hk_heap *h, unsigned cls)
{
    uint64_t supplied = h->supplied[cls];
    struct hk_page *pg;
    void *list = refill_take(h, cls, &pg);
    if (list == NULL)
        return NULL;
    return sampled_hand_out(h, pg, cls, list, (unsigned)(h->supplied[cls] - supplied));
}

/* While sampling, every refill but a quick one (refill_quick_detoured)
 * comes here: the general refill, or a quick one that waited for the
 * purger's start. */
static HK_NOINLINE void *refill_sampled(struct hk_heap *h, unsigned cls)
{
    if (h != NULL && hk_list_stashed(h, cls))
        return hk_list_unstash(h, cls);
    struct hk_page *pg = h != NULL ? h->current[cls] : NULL;
    if (!local_ready(h, pg, cls, HK_DETOUR_PURGER))
        return refill_general_sampled(h, cls);
    unsigned n = local_freed(pg);
    return sampled_hand_out(h, pg, cls, local_take(h, pg, cls, n), n);
}

/* The general refill. */
static HK_NOINLINE void *refill_general(struct hk_heap *h, unsigned cls)
{
    struct hk_page *pg;
    void *list = refill_take(h, cls, &pg);
    return list == NULL ? NULL : hand_out(pg, list, cls);
}

/* What comes before a refill takes anything: the thread's heap, and the
 * purger if a free asked for one.  Both may allocate in this very thread
 * (pthread_create allocates the new thread's DTV, pthread_setspecific a
 * key's page), and such a malloc may refill this very class: its blocks
 * are then on the TLS list, and the first is returned here.  (Made in the
 * middle of a refill, that malloc's refill was counted in the outer one's
 * blocks and its list overwritten: a profiled program walked off the end
 * of a refill's list.)  NULL: refill, from *h. */
static HK_NOINLINE void *refill_prepare(struct hk_heap **h, unsigned cls)
{
    if (*h == NULL && (*h = hk_heap_attach()) == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    hk_purge_poll();
    return hk_tls_pop(cls);
}

/* Every refill but the quick one (and every one while sampling): kept
 * small, so that the sampled ones pay no frame for the general one. */
static HK_NOINLINE void *refill_slow(struct hk_heap *h, unsigned cls)
{
    if (HK_UNLIKELY(cls == 0))
        hk_fatal("a class was looked up before the class table was built");
    if (HK_UNLIKELY(h == NULL ||
                    (atomic_load_explicit(&hk_detour, memory_order_relaxed) & HK_DETOUR_PURGER))) {
        void *block = refill_prepare(&h, cls);
        if (block != NULL || h == NULL)
            return block;
    }
    if (HK_UNLIKELY(hk_heap_sampling))
        return refill_sampled(h, cls);
    return refill_general(h, cls);
}

/* A quick refill of `freed` blocks is ready (hk_refill made local_ready's
 * tests) but a detour is asked for: while sampling, the quick refill,
 * counted; the purger's start goes the slow way.  (The sample bit is set
 * only once hk_heap_sampling is.) */
static HK_NOINLINE void *refill_quick_detoured(struct hk_heap *h, struct hk_page *pg, unsigned cls,
                                               unsigned freed)
{
    if (atomic_load_explicit(&hk_detour, memory_order_relaxed) != HK_DETOUR_SAMPLE)
        return refill_slow(h, cls);
    if (hk_list_stashed(h, cls))
        return hk_list_unstash(h, cls);
    return sampled_hand_out(h, pg, cls, local_take(h, pg, cls, freed), freed);
}

/* hk_page_new, inline in hk_page_next_current (called out of line, it cost
 * random-mixed 4-32 KiB 17,700 instructions in 1 M operations). */
static inline __attribute__((always_inline)) struct hk_page *page_new(struct hk_heap *h, unsigned cls)
{
    struct hk_page *pg = hk_arena_page_alloc(h, cls);
    if (pg == NULL) {
        hk_release_all_memory();
        pg = hk_arena_page_alloc(h, cls);
    }
    if (pg == NULL)
        return NULL;
    hk_page_init(pg, h, cls);
    /* The page this class gave back when it emptied, taken again: the class
     * takes and gives back a few blocks, and its page had better stay. */
    pg->keep_empty = pg == h->retired_current[cls];
    return pg;
}

struct hk_page *hk_page_new(struct hk_heap *h, unsigned cls)
{
    return page_new(h, cls);
}

/* The class's current page has no free block: the next one, from the queue
 * or fresh, becomes current (NULL with ENOMEM: out of memory). */
struct hk_page *hk_page_next_current(struct hk_heap *h, unsigned cls)
{
    struct hk_page *pg = hk_page_queue_take(h, cls);
    if (pg == NULL)
        pg = page_new(h, cls);
    if (pg == NULL) {
        h->current[cls] = NULL;
        errno = ENOMEM;
        return NULL;
    }
    hk_page_make_current(h, pg);
    return pg;
}

/* The TLS list of class cls is empty: refill it and return one block (NULL:
 * out of memory).  The common case, a batch or more of blocks freed into the
 * current page and nothing else to do, stays short. */
void *hk_refill(unsigned cls)
{
    struct hk_heap *h = hk_tls.heap;
    if (cls >= hk_first_medium_class)
        return HK_SECURE_BITMAP_TAKEN(hk_bitmap_alloc(h, cls));
    struct hk_page *pg = h != NULL ? h->current[cls] : NULL;
    /* local_ready, in an order that keeps this path short; the detours
     * last, so that while sampling the quick refill makes these tests
     * once (refill_slow tests the detours itself). */
    if (HK_LIKELY(pg != NULL && pg->local_free != NULL &&
                  atomic_load_explicit(&h->delayed, memory_order_relaxed) == NULL)) {
        unsigned freed = local_freed(pg);
        if (freed * 2 >= hk_classes[cls].batch || pg->unbumped == 0) {
            if (HK_UNLIKELY(hk_refill_detoured()))
                return refill_quick_detoured(h, pg, cls, freed);
            return hand_out(pg, local_take(h, pg, cls, freed), cls);
        }
    }
    return refill_slow(h, cls);
}

/* A local free brought `used` to zero: the page is either empty, or was
 * full and has a free block again. */
void hk_page_event(void *block)
{
    struct hk_page *pg = hk_page_of_block(block);
    struct hk_heap *h = pg->heap;
    switch (pg->state) {
    case HK_PAGE_FULL: /* all its blocks out but the class's `regain` */
        pg->used = pg->capacity - hk_classes[pg->cls].regain;
        hk_page_regained(h, pg);
        break;
    case HK_PAGE_AVAILABLE:
        hk_page_drained(h, pg);
        break;
    default:
        /* The current page emptied (its TLS list is empty too, as used is
         * zero). */
        hk_page_current_emptied(h, pg);
        break;
    }
}

/* The current page of its class holds no block any more.  It is retired,
 * so that its memory goes back if the thread now idles; but when the class
 * takes it straight back, it is kept from then on (keep_empty), or a class
 * that takes and gives back one block would retire a page every time (a
 * malloc/free pair of 100 KiB: 55 ns instead of 16).  Only while it
 * holds little memory, though (no more than idle_keep): a kept page is
 * never purged, so a program that idles after filling and emptying it
 * would keep all it touched.  A page of an arena other than the heap's
 * first always goes: it would keep that arena mapped. */
void hk_page_current_emptied(struct hk_heap *h, struct hk_page *pg)
{
    size_t touched = pg->kind == HK_SMALL ? (size_t)1 << HK_SMALL_PAGE_SHIFT
                                          : (size_t)pg->touched * pg->block_size;
    if (!pg->keep_empty || !hk_in_first_arena(h, pg) || touched > hk_config.idle_keep) {
        h->retired_current[pg->cls] = pg;
        hk_page_leave_current(h, pg);
    }
}

void hk_page_retire(struct hk_page *pg)
{
    struct hk_heap *h = pg->heap;
    HK_ASSERT(pg->used == 0 && pg->state != HK_PAGE_FREE);
    uint64_t now = hk_clock_ms();
    bool over_keep = hk_arena_page_free(pg, now);
    hk_purge_schedule(h, now, over_keep);
}
