/*
 * Invariant checks of the debug build (HK_DEBUG: `make debug`, and the
 * sanitizer and fuzz builds of `make test`).  The release build compiles
 * none of this: HK_ASSERT and HK_CHECK_PAGE are empty there.
 *
 * hk_page_check verifies a page in use against its own counters, by the
 * owner (the only thread that writes them).  Every block is in exactly one
 * place, and the counts agree:
 *   small page: with the user, held by another thread or on its way back
 *     from one (all counted in `used`, with the owner's TLS list when the
 *     page is current), in local_free, or never carved (`unbumped`, at the
 *     end), so used + local_free + unbumped = capacity; a full page has none
 *     uncarved, fewer than `regain` in local_free and used = regain minus
 *     those; local_free and the TLS list (after the other heaps' blocks it
 *     starts with, no more than the thread counts) hold carved blocks of
 *     this page, each once, at a block boundary;
 *   medium and large page: used = capacity - free bits below capacity, the
 *     bits from capacity on are set, touched and reach within capacity;
 *   every page: its class's geometry; CURRENT is its class's current page,
 *   AVAILABLE is linked in its class's queue, FULL and CURRENT in none.
 */
#include "internal.h"

#ifdef HK_DEBUG

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "hakmem: <what> at <file>:<line>: <detail> (page 0x...)", then abort. */
static __attribute__((noreturn)) void fail(const char *what, const char *detail,
                                           const void *pg, const char *file, int line)
{
    char buf[512];
    size_t len = 0;
    const char *parts[] = {"hakmem: ", what, " at ", file, ":"};
    for (unsigned i = 0; i < 5; i++) {
        size_t n = strlen(parts[i]);
        if (len + n < sizeof buf - 64) {
            memcpy(buf + len, parts[i], n);
            len += n;
        }
    }
    char digits[16];
    unsigned nd = 0;
    for (unsigned v = (unsigned)line; nd == 0 || v != 0; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd > 0)
        buf[len++] = digits[--nd];
    buf[len++] = ':';
    buf[len++] = ' ';
    size_t n = strlen(detail);
    if (len + n > sizeof buf - 40)
        n = sizeof buf - 40 - len;
    memcpy(buf + len, detail, n);
    len += n;
    if (pg != NULL) {
        static const char hex[] = "0123456789abcdef";
        memcpy(buf + len, " (page 0x", 9);
        len += 9;
        for (int shift = 60; shift >= 0; shift -= 4)
            buf[len++] = hex[((uintptr_t)pg >> shift) & 15];
        buf[len++] = ')';
    }
    buf[len++] = '\n';
    (void)!write(STDERR_FILENO, buf, len);
    abort();
}

void hk_assert_failed(const char *what, const char *file, int line)
{
    fail("assertion failed", what, NULL, file, line);
}

#define PAGE_FAIL(detail) fail("page check failed", (detail), pg, file, line)

/* Walk a list of pg's blocks, marking each in `seen`: each must be a carved
 * block of pg, at a block boundary, and in no list walked before.  Returns
 * its length. */
static unsigned walk(const struct hk_page *pg, const void *list, uint64_t *seen,
                     const char *file, int line)
{
    unsigned carved = (unsigned)(pg->capacity - pg->unbumped);
    unsigned n = 0;
    for (const void *b = list; b != NULL; b = hk_next(b)) {
        uintptr_t off = (uintptr_t)b - (uintptr_t)pg->blocks;
        if ((uintptr_t)b < (uintptr_t)pg->blocks || off % pg->block_size != 0)
            PAGE_FAIL("a free list holds an address that is not a block of the page");
        uintptr_t i = off / pg->block_size;
        if (i >= carved)
            PAGE_FAIL("a free list holds a block that was never carved");
        if (seen[i / 64] >> (i % 64) & 1)
            PAGE_FAIL("a block is twice in the free lists (a double free?)");
        seen[i / 64] |= (uint64_t)1 << (i % 64);
        n++;
    }
    return n;
}

static void check_small(const struct hk_page *pg, const char *file, int line)
{
    uint64_t seen[(((size_t)1 << HK_SMALL_PAGE_SHIFT) / 16 + 63) / 64] = {0};
    if (pg->unbumped > pg->capacity)
        PAGE_FAIL("more blocks uncarved than the page has");
    unsigned local = walk(pg, pg->local_free, seen, file, line);
    const struct hk_heap *h = pg->heap;
    unsigned cached = 0;
    if (hk_tls.heap == h) {
        /* The thread's list of the class: blocks of the class, of any
         * heap's pages (thread_lists.c); those of this page count as used.
         * Each link counts the pushed blocks from the one it points to
         * down: at most one more than the next link's, 0 at the end, and
         * none above the class's cap. */
        unsigned count = hk_link_pushed(hk_tls.free[pg->cls]);
        if (count > hk_classes[pg->cls].keep_cap)
            PAGE_FAIL("the thread's list holds more pushed blocks than its cap");
        for (const void *b = hk_link_block(hk_tls.free[pg->cls]); b != NULL; b = hk_list_next(b)) {
            unsigned next = hk_link_pushed(hk_next(b));
            if (next > count || count - next > 1)
                PAGE_FAIL("a link of the thread's list miscounts its pushed blocks");
            count = next;
            const struct hk_page *home = hk_page_of(b);
            if (home == NULL || home->cls != pg->cls)
                PAGE_FAIL("the thread's list holds a block that is not one of its class");
            if (home != pg)
                continue;
            uintptr_t i = ((uintptr_t)b - (uintptr_t)pg->blocks) / pg->block_size;
            if (i >= (unsigned)(pg->capacity - pg->unbumped))
                PAGE_FAIL("the thread's list holds a block that was never carved");
            if (seen[i / 64] >> (i % 64) & 1)
                PAGE_FAIL("a block is twice in the free lists (a double free?)");
            seen[i / 64] |= (uint64_t)1 << (i % 64);
            cached++;
        }
        if (count != 0)
            PAGE_FAIL("a link of the thread's list miscounts its pushed blocks");
    }
    if (pg->state == HK_PAGE_FULL) {
        unsigned regain = hk_classes[pg->cls].regain;
        if (pg->unbumped != 0 || local >= regain || (unsigned)pg->used != regain - local)
            PAGE_FAIL("a full page has blocks to give, or used is not regain - local_free");
        return;
    }
    if ((unsigned)pg->used + local + pg->unbumped != pg->capacity)
        PAGE_FAIL("used + local_free + unbumped is not the capacity");
    if ((unsigned)pg->used < cached)
        PAGE_FAIL("the thread's list holds more blocks than used counts");
}

/* A block pushed on the thread's list of its class must not be on it
 * already: a double free, which free does not see.  The newest blocks are
 * looked at, where a block freed twice in a row lies. */
#define PUSH_LOOK 64

void hk_list_check_push(unsigned cls, const void *p, const char *file, int line)
{
    unsigned n = 0;
    for (const void *b = hk_link_block(hk_tls.free[cls]); b != NULL && n < PUSH_LOOK;
         b = hk_list_next(b), n++)
        if (b == p)
            fail("page check failed", "a block is twice in the free lists (a double free?)",
                 hk_page_of(p), file, line);
}

static void check_bitmap(const struct hk_page *pg, const char *file, int line)
{
    unsigned free_blocks = 0;
    for (unsigned i = 0; i < HK_BITMAP_WORDS * 64; i++) {
        bool free_bit = pg->free_map[i / 64] >> (i % 64) & 1;
        if (i < pg->capacity)
            free_blocks += free_bit;
        else if (!free_bit)
            PAGE_FAIL("a bit past the last block is clear");
    }
    if (pg->used < 0 || (unsigned)pg->used + free_blocks != pg->capacity)
        PAGE_FAIL("used does not match the bitmap");
    if (pg->state == HK_PAGE_FULL && pg->used != pg->capacity)
        PAGE_FAIL("a full page has free blocks");
    if (pg->touched > pg->capacity || pg->reach > pg->capacity ||
        pg->reach_before > pg->capacity)
        PAGE_FAIL("touched or reach beyond the last block");
}

/* A span page (span_page.c): every slice out belongs to exactly one run,
 * which starts where the run map says its length (that of a block of a
 * span class); every other slice is free and starts nothing.  No run of
 * free slices is longer than `longest`.  A span page is always on its
 * heap's queue, and the queue is in address order. */
static void check_span(const struct hk_page *pg, const char *file, int line)
{
    const uint8_t *runs = hk_span_runs(pg);
    unsigned run = 0, free_run = 0;
    for (unsigned i = 0; i < pg->capacity; i++) {
        bool free_bit = pg->free_map[i / 64] >> (i % 64) & 1;
        if (runs[i] != 0) {
            if (run != 0)
                PAGE_FAIL("a block starts inside another");
            run = hk_span_run_length(runs[i]);
            if (!hk_span_run_fits(run))
                PAGE_FAIL("a span block of no span class's size");
        }
        if (run != 0) {
            if (free_bit)
                PAGE_FAIL("a slice of a block out is free");
            run--;
        } else if (!free_bit) {
            PAGE_FAIL("a slice out belongs to no block");
        }
        free_run = free_bit ? free_run + 1 : 0;
        if (free_run > pg->longest)
            PAGE_FAIL("a run of free slices is longer than `longest`");
    }
    if (run != 0)
        PAGE_FAIL("a span block runs past the page's capacity");
    for (unsigned i = pg->capacity; i < HK_BITMAP_WORDS * 64; i++)
        if (runs[i] != 0)
            PAGE_FAIL("a block starts past the page's capacity");
    if (pg->state != HK_PAGE_AVAILABLE)
        PAGE_FAIL("a span page is not on its queue");
    if ((pg->prev != NULL && pg->prev >= pg) || (pg->next != NULL && pg->next <= pg))
        PAGE_FAIL("the span pages are out of address order");
}

void hk_page_check(const struct hk_page *pg, const char *file, int line)
{
    if (pg->state == HK_PAGE_FREE) {
        if (pg->block_size != 0)
            PAGE_FAIL("a free page has a block size");
        return;
    }
    const struct hk_heap *h = pg->heap;
    if (h == NULL || pg->cls == 0 || pg->cls >= HK_PAGE_CLASSES)
        PAGE_FAIL("no owner, or no size class");
    const struct hk_class *k = &hk_classes[pg->cls];
    if (pg->block_size != k->block_size || pg->kind != k->kind ||
        pg->first_block != k->first_block || pg->div_magic != k->div_magic ||
        pg->capacity == 0 || pg->capacity > k->capacity ||
        pg->blocks != hk_page_base(pg) + pg->first_block)
        PAGE_FAIL("the page's geometry is not its class's");
    switch (pg->state) {
    case HK_PAGE_CURRENT:
        if (h->current[pg->cls] != pg)
            PAGE_FAIL("a current page is not its class's current page");
        /* fall through */
    case HK_PAGE_FULL:
        if (pg->next != NULL || pg->prev != NULL)
            PAGE_FAIL("a current or full page is linked in a queue");
        break;
    case HK_PAGE_AVAILABLE:
        if (pg->prev != NULL ? pg->prev->next != pg : h->queue[pg->cls] != pg)
            PAGE_FAIL("an available page is not linked in its class's queue");
        if (pg->next != NULL && pg->next->prev != pg)
            PAGE_FAIL("the queue's links do not agree");
        if (h->current[pg->cls] == pg)
            PAGE_FAIL("an available page is also the current page");
        break;
    default:
        PAGE_FAIL("no such state");
    }
    if (pg->kind == HK_SMALL)
        check_small(pg, file, line);
    else
        check_bitmap(pg, file, line);
    if (pg->cls == HK_SPAN_CLASS)
        check_span(pg, file, line);
}

#else

/* The release build: nothing is checked. */
typedef int hk_check_is_empty;

#endif
