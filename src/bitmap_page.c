/*
 * Medium and large pages (blocks of 5 KiB .. 512 KiB) keep their free
 * blocks in a bitmap in the page header, not in a list through the blocks:
 *
 *   - a free block is never written, so its memory can go back to the OS
 *     while the page stays in use;
 *   - a malloc takes the lowest free block, so the blocks out gather at the
 *     bottom of the page and the free ones above them form one range;
 *   - a double free finds its bit already set.
 *
 * Purging whole pages (arena.c) cannot return what a page in use touched:
 * a class whose demand breathes would keep, in each of its pages, the memory
 * of its highest peak so far, and its footprint would creep up for as long
 * as the program runs (the running maximum of a random demand keeps
 * rising).  So each page remembers how far it has touched (`touched`) and
 * how far its blocks reached in the current and the previous trim period
 * (`reach`, `reach_before`).  Every trim period, twice the purge delay, the
 * owner gives back what the page touched above both reaches: a page keeps
 * the memory of its peaks of the last one to two periods, not of its
 * highest ever.  Dips smaller than TRIM_MIN_BYTES are left alone, so that a
 * demand that wobbles does not pay a system call and page faults each
 * period.
 *
 * Medium and large blocks never enter the thread's TLS lists: malloc of a
 * size above 4 KiB comes here (hk_bitmap_malloc), an aligned allocation
 * through hk_refill.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "stats.h"

/* A page gives back memory above its reach only when there is at least
 * this much of it: smaller dips are left for the next peak. */
#define TRIM_MIN_BYTES (64u << 10)

void hk_bitmap_init(struct hk_page *pg)
{
    /* Every block free; so are the bits past the last block, so that a
     * free of an address in the page's tail finds its bit set.  malloc
     * takes none of them: its search of a full page ends at the first, and
     * hk_bitmap_take_new sees it is past the last block. */
    for (unsigned w = 0; w < HK_BITMAP_WORDS; w++)
        pg->free_map[w] = ~(uint64_t)0;
    pg->unbumped = 0;
    /* A page taken from the dirty list may hold memory anywhere. */
    pg->touched = pg->capacity;
    pg->reach = 0;
    pg->reach_before = 0;
}

/* One past the highest block out, 0 when none is. */
static unsigned blocks_end(const struct hk_page *pg)
{
    for (unsigned w = HK_BITMAP_WORDS; w-- > 0;) {
        unsigned valid = pg->capacity > w * 64 ? pg->capacity - w * 64 : 0;
        if (valid == 0)
            continue;
        uint64_t mask = valid >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << valid) - 1;
        uint64_t out = ~pg->free_map[w] & mask;
        if (out != 0)
            return w * 64 + 64 - (unsigned)__builtin_clzll(out);
    }
    return 0;
}

/* Give back the OS pages wholly inside blocks [from, to) of pg. */
static size_t give_back(struct hk_page *pg, unsigned from, unsigned to)
{
    uintptr_t base = (uintptr_t)pg->blocks;
    uintptr_t start = (base + (uintptr_t)from * pg->block_size + HK_OS_PAGE - 1) &
                      ~(uintptr_t)(HK_OS_PAGE - 1);
    uintptr_t end = (base + (uintptr_t)to * pg->block_size) & ~(uintptr_t)(HK_OS_PAGE - 1);
    if (end <= start)
        return 0;
    hk_os_purge((void *)start, end - start);
    return end - start;
}

/* Give back what pg touched above the blocks that were out in the last two
 * trim periods (`all`: above the blocks out now, and the free blocks below
 * them). */
static size_t trim_page(struct hk_page *pg, bool all)
{
    unsigned end = blocks_end(pg);
    unsigned keep = end;
    if (!all) {
        keep = pg->reach > keep ? pg->reach : keep;
        keep = pg->reach_before > keep ? pg->reach_before : keep;
    }
    size_t bytes = 0;
    if (pg->touched > keep &&
        (all || (size_t)(pg->touched - keep) * pg->block_size >= TRIM_MIN_BYTES)) {
        bytes += give_back(pg, keep, pg->touched);
        pg->touched = (uint16_t)keep;
    }
    if (all) {
        for (unsigned i = 0; i < end;) {
            unsigned w = i / 64, b = i % 64;
            if (!(pg->free_map[w] >> b & 1)) {
                i++;
                continue;
            }
            unsigned j = i + 1;
            while (j < end && (pg->free_map[j / 64] >> (j % 64) & 1))
                j++;
            bytes += give_back(pg, i, j);
            i = j;
        }
    }
    pg->reach_before = pg->reach;
    pg->reach = (uint16_t)end;
    return bytes;
}

static size_t trim_heap(struct hk_heap *h, bool all)
{
    size_t bytes = 0;
    for (unsigned cls = hk_first_medium_class; cls < HK_PAGE_CLASSES; cls++) {
        if (h->current[cls] != NULL)
            bytes += trim_page(h->current[cls], all);
        for (struct hk_page *pg = h->queue[cls]; pg != NULL; pg = pg->next)
            bytes += trim_page(pg, all);
    }
    hk_stat_add(&hk_os_stats.purged_bytes, bytes);
    return bytes;
}

size_t hk_bitmap_trim_all(struct hk_heap *h)
{
    return trim_heap(h, true);
}

/* h's thread exits: its life ends a trim period, so that the heap keeps for
 * its next owner what its last two owners reached (the next one's demand,
 * likely), not the running maximum of every owner's.  The free blocks
 * below stay: a thread pool's next thread reuses them without a fault;
 * should no thread adopt the heap within a trim period, they go then
 * (hk_heaps_trim_abandoned). */
size_t hk_bitmap_trim_owner_exit(struct hk_heap *h)
{
    return trim_heap(h, false);
}

uint64_t hk_bitmap_trim_period(void)
{
    return 2 * hk_config.purge_delay_ms;
}

/* Every HK_TRIM_BYTES of blocks handed out: what the small classes do on
 * each refill (start the purger, send and take remote frees), then the
 * trim if it is due. */
void hk_bitmap_tick(struct hk_heap *h)
{
    h->trim_budget = h->trim_budget_set = HK_TRIM_BYTES;
    hk_purge_poll();
    hk_remote_flush();
    if (atomic_load_explicit(&h->delayed, memory_order_relaxed) != NULL)
        hk_heap_drain_delayed(h);
    hk_bitmap_trim_due(h);
}

/* The trim of h's medium and large pages, if it is due (and of abandoned
 * heaps'). */
void hk_bitmap_trim_due(struct hk_heap *h)
{
    uint64_t now = hk_clock_ms();
    hk_heaps_trim_abandoned_due(now);
    if (now < h->trim_at)
        return;
    trim_heap(h, false);
    h->trim_at = now + hk_bitmap_trim_period();
}

/* The lowest free block of pg, i, is at or above the page's reach in this
 * trim period (memory above `touched` is touched for the first time), or
 * past its last block: the page is full. */
HK_NOINLINE void *hk_bitmap_take_new(struct hk_heap *h, struct hk_page *pg, unsigned i)
{
    if (i >= pg->capacity)
        return hk_bitmap_alloc_slow(h, pg->cls);
    pg->reach = (uint16_t)(i + 1);
    if (i >= pg->touched)
        pg->touched = (uint16_t)(i + 1);
    return hk_bitmap_take(h, pg, pg->cls);
}

/* Block i of pg was just taken and the trim budget ran out (while the heap
 * profiler samples, it ends the budget at the next sample point too and
 * counts the ticks itself). */
HK_NOINLINE void *hk_bitmap_taken(struct hk_heap *h, struct hk_page *pg, unsigned i)
{
    if (HK_UNLIKELY(hk_heap_sampling))
        return hk_heap_sample_bitmap(h, pg, i);
    void *block = pg->blocks + (size_t)i * pg->block_size;
    hk_bitmap_tick(h);
    return block;
}

/* A class of blocks of 64 KiB and up that has no page: while the program
 * has a huge chunk open (huge_chunk.c) and the class has served few blocks
 * lately, its block comes from the chunk, else from the heap's span pages
 * (span_page.c), until the class has HK_SPAN_CLASS_BLOCKS blocks out there.
 * A class with pages of its own touches memory of its own, by 4 KiB pages;
 * in the chunk, blocks of every size share the cached ranges and fault in
 * by 2 MiB (bench large-5m, 64 KiB-5 MiB blocks: ~600 of its ~1,500 faults
 * were the first touches of the 12 classes' pages).  A class in steady use,
 * more than ROUTED_MAX blocks a second, is left to the span pages and its
 * own: the chunk's path takes locks and costs ten times a page's (about
 * 100 ns more a block: at most 26 us a second a class).  At 16 a second,
 * large-5m's classes, some 25 blocks each in its run, all got pages after
 * their 16th: 960 faults and 36.0 MiB peak, 633 and 34.7 at 255, 0.86 of
 * the time.
 *
 * A class with many blocks out fills pages of its own well, and in them a
 * block reuses the slot, and the OS pages, of one freed before, where in a
 * span page the blocks' places shift and a program that writes a few bytes
 * of each touches ever more of the page: bench churn-large (16 B-256 KiB,
 * first and last bytes written, about 10 blocks of each class out per
 * thread) ran 1.27x as long with 8 a class in span pages, 1.20x with 4,
 * 2.3x with no bound, 1.07x (0.96-1.18) with 8 and a class's own pages
 * first whenever it has some with room (the rule here).  With 4, large-
 * 512k's peak RSS rose from 5.6 MiB to 7.8. */
#define ROUTED_MIN_SIZE ((size_t)64 << 10)
#define ROUTED_MAX 255 /* h->routed's counts are bytes */
#define ROUTED_PERIOD_MS 1000

/* h->current[cls] is NULL; size is malloc's.  (size first: it arrives
 * there in hk_bitmap_malloc, which then needs no move to keep it.) */
static HK_NOINLINE void *class_without_page(size_t size, struct hk_heap *h, size_t cls)
{
    size_t block_size = hk_classes[cls].block_size;
    /* Not in the hardened build: its sized frees know a block of a class
     * by the class's size, and a huge block may be longer (a cached
     * range's rest too small to keep goes with it). */
    if (!HK_SECURE_ON && block_size >= ROUTED_MIN_SIZE && hk_huge_chunk_serves(block_size)) {
        uint64_t now = hk_clock_ms();
        if (now >= h->route_period_end) {
            memset(h->routed, 0, sizeof h->routed);
            h->route_period_end = now + ROUTED_PERIOD_MS;
        }
        if (h->routed[cls] < ROUTED_MAX) {
            h->routed[cls]++;
            int saved = errno;
            void *block = hk_huge_alloc(block_size, HK_OS_PAGE, false);
            if (block != NULL)
                return block;
            errno = saved; /* no mapping to be had: the span pages may have room */
        }
    }
    if (hk_span_serves(h, cls))
        return hk_span_malloc(h, size, cls);
    return HK_SECURE_BITMAP_TAKEN(hk_bitmap_alloc_slow(h, (unsigned)cls));
}

/* The class table is built by the time the thread has a heap.  As
 * hk_bitmap_alloc, but a class without a page may be served by the chunk
 * (not an aligned allocation: those come through hk_refill). */
HK_NOINLINE void *hk_bitmap_malloc(size_t size)
{
    struct hk_heap *h = hk_tls.heap;
    if (HK_UNLIKELY(h == NULL))
        return HK_SECURE_BITMAP_TAKEN(hk_bitmap_alloc_slow(NULL, hk_size_class_above_128(size)));
    size_t cls = hk_class_above_small(size);
    struct hk_page *pg = h->current[cls];
    if (HK_UNLIKELY(pg == NULL))
        return class_without_page(size, h, cls); /* a huge block, or checked there */
    return HK_SECURE_BITMAP_TAKEN(hk_bitmap_take(h, pg, cls));
}

HK_NOINLINE void *hk_bitmap_alloc_slow(struct hk_heap *h, unsigned cls)
{
    h = hk_refill_begin(h, cls);
    if (h == NULL)
        return NULL;
    hk_purge_poll(); /* nothing taken yet: a malloc there is safe */
    struct hk_page *pg = h->current[cls];
    if (pg != NULL && (pg->used < pg->capacity || hk_arena_page_extend(pg)))
        return hk_bitmap_take(h, pg, cls);
    if (pg != NULL)
        hk_page_leave_current(h, pg); /* full */
    pg = hk_page_next_current(h, cls);
    return pg != NULL ? hk_bitmap_take(h, pg, cls) : NULL;
}

/* Blocks go to the lowest page of the class with room, so that the blocks
 * out gather in the low pages and the high ones drain, retire and give
 * their memory back (a page the class only needs at its peaks is trimmed
 * down to what those peaks reach).  pg, below the current page, just got a
 * free block: it becomes the current page. */
static void make_current(struct hk_heap *h, struct hk_page *pg)
{
    struct hk_page *old = h->current[pg->cls];
    if (pg->state == HK_PAGE_AVAILABLE)
        hk_page_queue_remove(h, pg);
    if (old != NULL)
        hk_page_leave_current(h, old);
    hk_page_make_current(h, pg);
}

/* A free of p (in `call`) into a page that is not the current one, or
 * that emptied it. */
HK_NOINLINE void hk_bitmap_page_event(struct hk_page *pg, void *p, const char *call)
{
    struct hk_heap *h = pg->heap;
    if (pg->state != HK_PAGE_CURRENT) {
        struct hk_page *current = h->current[pg->cls];
        if (current == NULL || pg < current) {
            /* The span class has no current page: its every free comes
             * here (tested here, not first, where other pages' frees pass). */
            if (pg->cls == HK_SPAN_CLASS) {
                hk_span_free(pg, p, call);
                return;
            }
            make_current(h, pg);
        } else if (pg->state == HK_PAGE_FULL) {
            hk_page_regained(h, pg);
        }
    }
    if (pg->used != 0) {
        HK_CHECK_PAGE(pg);
        return;
    }
    if (pg->state == HK_PAGE_AVAILABLE) {
        hk_page_drained(h, pg);
    } else {
        hk_page_current_emptied(h, pg);
    }
}
