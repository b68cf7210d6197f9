/*
 * Span pages: blocks of the classes of 64 KiB and up share large pages.
 * A class with pages of its own touches memory of its own, so a program
 * holds about the sum of each class's peak: eight live blocks of 64-512 KiB,
 * replaced at random (bench large-512k), drove the 13 classes' pages to
 * 13.2 MiB where 2-4 MiB were live, and nearly all of the run's time was
 * the page faults of that memory.
 *
 * A span page is a large page (4 MiB) of the span class, whose blocks are
 * 16 KiB slices; a block is a run of slices as long as its malloc's size,
 * rounded up to a slice (not to its class: less memory touched), taken
 * from the heap's lowest span page that has a run long enough, the
 * shortest such run there, so that the blocks out gather low and the high
 * pages drain and go back.  The bitmap says which slices are free, as for
 * any medium or large page, so trimming, purging and the checks of a free
 * work unchanged on slices; the byte of a run's first slice in the page's
 * run map (hk_span_runs) holds its length while the block is out, which
 * tells free how much to give back, malloc_usable_size the block's size,
 * and a block's start from its inside.
 *
 * Span pages are never current: every span page of a heap is on its
 * class's queue, lowest address first, so that each free of a span block
 * reaches hk_bitmap_page_event (hk_bitmap_put) and the free fast path of
 * the other pages pays nothing for them.  Which mallocs come here:
 * hk_span_serves (internal.h), asked by hk_bitmap_malloc's path for a
 * class without a page (class_without_page, bitmap_page.c, says why a
 * class in steady use gets pages of its own) and by aligned allocations
 * up to 16 KiB of alignment (a slice's start is so aligned); a larger
 * alignment takes a block of its class's own pages, which are aligned to
 * the class's size.  Not in the hardened build, whose checks know a block
 * by its page's class.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define SLICES_PER_PAGE (HK_BITMAP_WORDS * 64)

_Static_assert(((size_t)1 << HK_LARGE_PAGE_SHIFT) / HK_SPAN_SLICE == SLICES_PER_PAGE,
               "a span page's slices fill its bitmap");
_Static_assert(SLICES_PER_PAGE * (1 + sizeof(uint32_t)) + HK_PAGE_HEADER_SIZE <= HK_OS_PAGE,
               "the run map, the sites and the header fit in the header's OS page, in "
               "the last slice, which is no block's");
_Static_assert((HK_SPAN_MIN & (HK_SPAN_SLICE - 1)) == 0 && HK_SPAN_MIN >= HK_MEDIUM_MAX &&
                   HK_LARGE_MAX / HK_SPAN_SLICE < HK_SPAN_SAMPLED,
               "span classes are large, and a run's length fits its byte");

/* The first bit at or above `from` and below `end` that is set (free: `set`)
 * or clear, or end. */
static inline unsigned next_bit(const uint64_t *map, unsigned from, unsigned end, bool set)
{
    while (from < end) {
        unsigned w = from / 64;
        uint64_t bits = (set ? map[w] : ~map[w]) >> (from % 64);
        if (bits != 0) {
            unsigned i = from + (unsigned)__builtin_ctzll(bits);
            return i < end ? i : end;
        }
        from = (w + 1) * 64;
    }
    return end;
}

/* Bits [i, i + n) set (free) or cleared; n > 0. */
static inline void set_range(uint64_t *map, unsigned i, unsigned n, bool set)
{
    unsigned last = i + n - 1, w0 = i / 64, w1 = last / 64;
    uint64_t m0 = ~(uint64_t)0 << (i % 64), m1 = ~(uint64_t)0 >> (63 - last % 64);
    if (w0 == w1)
        m0 &= m1;
    for (unsigned w = w0; w <= w1; w++) {
        uint64_t m = w == w0 ? m0 : w == w1 ? m1 : ~(uint64_t)0;
        map[w] = set ? map[w] | m : map[w] & ~m;
    }
}

/* The block that starts at slice i of pg. */
static inline void *slice_block(const struct hk_page *pg, unsigned i)
{
    return pg->blocks + ((size_t)i << HK_SPAN_SLICE_SHIFT);
}

/* The shortest run of at least n free slices of pg (the lowest of those),
 * or its capacity if none; a search that fails leaves the longest run it
 * saw in `longest`. */
static unsigned find_run(struct hk_page *pg, unsigned n)
{
    unsigned end = pg->capacity, longest = 0, best = end, best_len = ~0u;
    for (unsigned i = next_bit(pg->free_map, 0, end, true); i < end;) {
        unsigned j = next_bit(pg->free_map, i + 1, end, false);
        unsigned len = j - i;
        if (len >= n && len < best_len) {
            best = i;
            best_len = len;
            if (len == n)
                break;
        }
        if (len > longest)
            longest = len;
        i = next_bit(pg->free_map, j, end, true);
    }
    if (best == end)
        pg->longest = (uint16_t)longest;
    return best;
}

/* The n slices of the block at slice i of pg are free again. */
static void release_run(struct hk_page *pg, unsigned i, unsigned n)
{
    pg->heap->span_blocks[hk_span_index(hk_span_run_class(n))]--;
    hk_span_runs(pg)[i] = 0;
    set_range(pg->free_map, i, n, true);
    pg->used -= (int32_t)n;
    /* The run the block joins may be the page's longest now: unknown until
     * the next search that fails (cheaper than finding its ends here). */
    pg->longest = pg->capacity;
}

/* pg holds no block any more.  The heap's lowest span page stays while it
 * holds little memory, as a class's current page does (keep_empty): a
 * malloc and free of 100 KiB in a loop would take and retire a page each
 * time.  Others go (and any of an arena other than the heap's first, which
 * they would keep mapped). */
static void emptied(struct hk_heap *h, struct hk_page *pg)
{
    if (pg == h->queue[HK_SPAN_CLASS] && hk_in_first_arena(h, pg) &&
        (size_t)pg->touched * HK_SPAN_SLICE <= hk_config.idle_keep)
        return;
    hk_page_drained(h, pg);
}

/* The heap's trim budget ran out at the block of n slices, of class cls,
 * just taken at slice i of pg: the tick, or while sampling, the profiler's
 * point.  A profiled point's sample is the block itself, marked in the run
 * map with its site beside (a stand-in, a huge block of its own, cost
 * large-512k profiled 2.4 times its unprofiled time: 4 in 10 of its blocks
 * are sampled, and each faulted its memory in afresh); a guarded point's
 * is served instead. */
static HK_NOINLINE void *budget_spent(struct hk_heap *h, struct hk_page *pg, unsigned i,
                                      unsigned n, size_t cls)
{
    void *block = slice_block(pg, i);
    if (!HK_UNLIKELY(hk_heap_sampling)) {
        hk_bitmap_tick(h);
        return block;
    }
    void *sampled;
    uint32_t site = hk_heap_sample_span(h, (uint64_t)n << HK_SPAN_SLICE_SHIFT, (unsigned)cls,
                                        &sampled);
    if (site != 0) {
        hk_span_runs(pg)[i] |= HK_SPAN_SAMPLED;
        hk_span_sites(pg)[i] = site;
    }
    if (sampled == NULL)
        return block;
    hk_count(&h->returned[cls], 1);
    release_run(pg, i, n);
    if (pg->used == 0)
        emptied(h, pg);
    return sampled;
}

/* Take the block of n slices, of class cls, at slice i of pg. */
static void *take(struct hk_heap *h, struct hk_page *pg, unsigned i, unsigned n, size_t cls)
{
    set_range(pg->free_map, i, n, false);
    pg->used += (int32_t)n;
    h->span_blocks[hk_span_index(cls)]++;
    hk_span_runs(pg)[i] = (uint8_t)n;
    if (i + n > pg->reach)
        pg->reach = (uint16_t)(i + n);
    if (i + n > pg->touched)
        pg->touched = (uint16_t)(i + n);
    hk_count(&h->supplied[cls], 1);
    HK_CHECK_PAGE(pg);
    h->trim_budget -= (int64_t)n << HK_SPAN_SLICE_SHIFT;
    if (HK_UNLIKELY(h->trim_budget < 0))
        return budget_spent(h, pg, i, n, cls);
    return slice_block(pg, i);
}

/* A run of n free slices in pg, mapping more of it if its arena is compact
 * (hk_arena_page_extend), or pg's capacity. */
static unsigned page_run(struct hk_page *pg, unsigned n)
{
    for (;;) {
        if ((unsigned)(pg->capacity - pg->used) >= n && pg->longest >= n) {
            unsigned i = find_run(pg, n);
            if (i < pg->capacity)
                return i;
        }
        if (pg->capacity == hk_classes[HK_SPAN_CLASS].capacity || !hk_arena_page_extend(pg))
            return pg->capacity;
        pg->longest = pg->capacity; /* the new slices join the runs below */
    }
}

/* pg, new, joins the heap's span pages, which stay in address order. */
static void queue_insert(struct hk_heap *h, struct hk_page *pg)
{
    struct hk_page *prev = NULL;
    for (struct hk_page *q = h->queue[HK_SPAN_CLASS]; q != NULL && q < pg; q = q->next)
        prev = q;
    pg->prev = prev;
    pg->next = prev != NULL ? prev->next : h->queue[HK_SPAN_CLASS];
    if (pg->next != NULL)
        pg->next->prev = pg;
    if (prev != NULL)
        prev->next = pg;
    else
        h->queue[HK_SPAN_CLASS] = pg;
    pg->state = HK_PAGE_AVAILABLE;
}

static struct hk_page *page_new(struct hk_heap *h)
{
    struct hk_page *pg = hk_page_new(h, HK_SPAN_CLASS);
    if (pg == NULL)
        return NULL;
    memset(hk_span_runs(pg), 0, SLICES_PER_PAGE);
    pg->longest = pg->capacity;
    queue_insert(h, pg);
    HK_CHECK_PAGE(pg);
    return pg;
}

void *hk_span_malloc(struct hk_heap *h, size_t size, size_t cls)
{
    unsigned n = (unsigned)((size + HK_SPAN_SLICE - 1) >> HK_SPAN_SLICE_SHIFT);
    for (bool drained = false;; drained = true) {
        for (struct hk_page *pg = h->queue[HK_SPAN_CLASS]; pg != NULL; pg = pg->next) {
            unsigned i = page_run(pg, n);
            if (i < pg->capacity)
                return take(h, pg, i, n, cls);
        }
        /* No room: what other threads freed may make some, before a page
         * is taken (the delayed list is drained at every tick too). */
        if (drained || atomic_load_explicit(&h->delayed, memory_order_relaxed) == NULL)
            break;
        hk_heap_drain_delayed(h);
    }
    hk_count(&h->refills[cls], 1);
    hk_purge_poll();
    struct hk_page *pg = page_new(h);
    if (pg == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    unsigned i = page_run(pg, n);
    if (i >= pg->capacity) { /* a compact arena that cannot map the block */
        emptied(h, pg);
        errno = ENOMEM;
        return NULL;
    }
    return take(h, pg, i, n, cls);
}

/* hk_bitmap_free has checked that p is a slice's start whose bit was
 * clear, set that bit and counted one slice back. */
void hk_span_free(struct hk_page *pg, void *p, const char *call)
{
    unsigned i = hk_span_slice(pg, p);
    uint8_t run = hk_span_runs(pg)[i];
    pg->used++; /* release_run counts the whole run back */
    if (run == 0) { /* inside a block out, not its start */
        set_range(pg->free_map, i, 1, false);
        hk_invalid_pointer(call, p);
    }
    if (HK_UNLIKELY(run & HK_SPAN_SAMPLED))
        hk_span_sample_freed(pg, p);
    release_run(pg, i, hk_span_run_length(run));
    if (pg->used == 0)
        emptied(pg->heap, pg);
    else
        HK_CHECK_PAGE(pg);
}

void hk_span_sample_freed(struct hk_page *pg, const void *p)
{
    uint32_t *site = &hk_span_sites(pg)[hk_span_slice(pg, p)];
    if (*site == 0) /* another thread freed it, and sent it home */
        return;
    hk_heap_sample_freed(*site, hk_span_block_size(pg, p));
    *site = 0;
}

/* malloc_trim: empty span pages go, the lowest too (emptied keeps it, and
 * so does an abandoned heap, for its next owner). */
void hk_span_release_empty(struct hk_heap *h)
{
    struct hk_page *pg = h->queue[HK_SPAN_CLASS];
    while (pg != NULL) {
        struct hk_page *next = pg->next;
        if (pg->used == 0)
            hk_page_drained(h, pg);
        pg = next;
    }
}
