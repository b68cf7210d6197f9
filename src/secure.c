/*
 * The hardened build (`make secure`, -DHK_SECURE): checks of blocks as
 * they are freed and handed out, and clearer reports of bad pointers.
 * secure.h says what a free block holds; this file checks it.  In the
 * default build this file compiles to nothing.
 */
#include "internal.h"

#ifdef HK_SECURE

#include <string.h>
#include <sys/random.h>
#include <time.h>

struct hk_secure_keys hk_secure_keys;

/* Runs in hk_init, before any block exists: no link or tag was written
 * with other secrets.  A fork keeps them, with the blocks. */
void hk_secure_init(void)
{
    uintptr_t k[2];
    if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
        /* Early in boot, without entropy yet: weaker, but distinct. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uintptr_t x = (uintptr_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uintptr_t)&ts;
        k[0] = x ^ (uintptr_t)&hk_secure_keys;
        k[1] = (x << 17 | x >> 47) * 0xff51afd7ed558ccdu;
    }
    hk_secure_keys.link = k[0];
    hk_secure_keys.tag = k[1];
}

/* The block holds a link and its tag: it is free. */
static inline bool is_free(const void *b)
{
    const uintptr_t *w = b;
    return w[1] == hk_secure_seal(b, w[0]);
}

/* The tag of a free medium or large block: its size (a page reused for
 * another class may have another's tags where its blocks begin), sealed. */
static inline void bitmap_seal(void *b, size_t size)
{
    ((uintptr_t *)b)[0] = size;
    ((uintptr_t *)b)[1] = hk_secure_seal(b, size);
}

/* Zero bytes from 16 on: a freed block shows nothing of its old contents.
 * The first 16 get the link and tag (hk_set_next) right after. */
static inline void clear_rest(void *b, size_t size)
{
    memset((char *)b + 16, 0, size - 16);
}

void hk_secure_fresh(void *block, size_t size)
{
    clear_rest(block, size);
}

/* Whether the bitmap of pg (medium or large) says block p is free.  Read
 * by any thread: a block the caller may name is out, and its bit stays 0
 * until it is freed. */
static bool bit_free(const struct hk_page *pg, const void *p)
{
    size_t i = (size_t)((const char *)p - pg->blocks) / pg->block_size;
    uint64_t word = __atomic_load_n(&pg->free_map[i / 64], __ATOMIC_RELAXED);
    return (word >> (i % 64)) & 1;
}

/* p was validated by hk_page_of: the start of a block of pg. */
void hk_secure_freeing(struct hk_page *pg, void *p, const char *call)
{
    if (HK_UNLIKELY(is_free(p) || (pg->kind != HK_SMALL && bit_free(pg, p))))
        hk_report("double free", call, p, pg->block_size);
    if (pg->kind != HK_SMALL) {
        memset(p, 0, pg->block_size);
        bitmap_seal(p, pg->block_size);
        return;
    }
    /* A block never carved was never handed out (the owner's field: only
     * the owner reads it). */
    if (pg->heap == hk_tls.heap) {
        size_t index = (size_t)((char *)p - pg->blocks) / pg->block_size;
        if (HK_UNLIKELY(index >= (size_t)(pg->capacity - pg->unbumped)))
            hk_report("free of a block never handed out", call, p, pg->block_size);
    }
    clear_rest(p, pg->block_size);
}

void hk_secure_live(struct hk_page *pg, const void *p, const char *call)
{
    if (HK_UNLIKELY(is_free(p) || (pg->kind != HK_SMALL && bit_free(pg, p))))
        hk_report("use after free", call, p, pg->block_size);
}

/* n bytes at p (16-byte aligned, n a multiple of 16) are all zero: 64
 * bytes a step, in vector registers, where most of the hardened build's
 * time would otherwise go. */
typedef uint64_t hk_v2 __attribute__((vector_size(16)));
static inline bool all_zero(const char *p, size_t n)
{
    const hk_v2 *v = (const hk_v2 *)p;
    hk_v2 a = { 0, 0 }, b = { 0, 0 };
    size_t i = 0, words = n / 16;
    for (; i + 4 <= words; i += 4) {
        a |= v[i] | v[i + 1];
        b |= v[i + 2] | v[i + 3];
    }
    for (; i < words; i++)
        a |= v[i];
    a |= b;
    return (a[0] | a[1]) == 0;
}

/* A medium or large block trades the link it had on the way for the tag
 * of a free one.  (A small one gets a new link.) */
void hk_secure_drained(void *b)
{
    const struct hk_page *pg = hk_page_of_block(b);
    if (pg->kind != HK_SMALL)
        bitmap_seal(b, pg->block_size);
}

/* A medium or large block leaves its page.  One with the tag of its size
 * was freed and cleared: a byte not zero after the tag was written
 * since.  One without was never freed in this page's life (its memory is
 * fresh, trimmed, or another page's cleared blocks, links and tags), or
 * its tag was written over: it is cleared now.  Either way the user gets
 * zeros. */
void *hk_secure_bitmap_taken(void *p)
{
    /* A guarded block stands in for one of a page (guard.c): not a page's. */
    if (p == NULL || (HK_UNLIKELY(hk_guard_on) && hk_page_of(p) == NULL))
        return p;
    size_t size = hk_page_of_block(p)->block_size;
    if (((uintptr_t *)p)[0] == size && is_free(p)) {
        if (HK_UNLIKELY(!all_zero((char *)p + 16, size - 16)))
            hk_report("write to a freed block", "malloc", p, size);
        ((uintptr_t *)p)[0] = 0;
        ((uintptr_t *)p)[1] = 0;
    } else if (!all_zero(p, size)) {
        memset(p, 0, size);
    }
    return p;
}

/* The block, its link and its tag were written when it was freed or
 * carved; what differs now was written after the free. */
void hk_secure_taken(void *block, void *next, unsigned cls)
{
    uintptr_t *w = block;
    size_t size = hk_classes[cls].block_size;
    uintptr_t page_mask = ~(((uintptr_t)1 << HK_SMALL_PAGE_SHIFT) - 1);
    if (HK_UNLIKELY(!is_free(block)))
        hk_report("write to a freed block", "malloc", block, size);
    if (HK_UNLIKELY(next != NULL && ((uintptr_t)next & page_mask) != ((uintptr_t)block & page_mask)))
        hk_report("write to a freed block", "malloc", block, size);
    if (HK_UNLIKELY(!all_zero((const char *)block + 16, size - 16)))
        hk_report("write to a freed block", "malloc", block, size);
    w[0] = 0;
    w[1] = 0;
}

/* p failed validation.  If it lies in a block of a page in use, say how. */
void hk_secure_bad_pointer(const char *call, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    struct hk_arena *a = hk_arena_of(p);
    if (a == NULL)
        return;
    uintptr_t off = p & (HK_ARENA_SIZE - 1);
    unsigned kind = off < HK_MEDIUM_REGION_OFFSET ? HK_SMALL
                  : off < HK_LARGE_REGION_OFFSET ? HK_MEDIUM : HK_LARGE;
    unsigned shift = hk_page_shift(kind);
    const struct hk_region *r = &a->region[kind];
    uint32_t index = (uint32_t)((off - hk_region_offset(kind)) >> shift);
    uint32_t hwm = atomic_load_explicit(&r->hwm, memory_order_acquire);
    if (index - r->first >= hwm - r->first)
        return;
    struct hk_page *pg = hk_page_header(p & ~(((uintptr_t)1 << shift) - 1), shift);
    uint32_t size = pg->block_size;
    if (size == 0 && pg->cls != 0) {
        /* A free page that still knows its last class (not purged): every
         * block of it was freed, so the start of one is freed again. */
        size = hk_classes[pg->cls].block_size;
        uintptr_t first = (p & ~(((uintptr_t)1 << shift) - 1)) + hk_classes[pg->cls].first_block;
        if (p >= first && (p - first) % size == 0 && (p - first) / size < pg->capacity)
            hk_report("double free", call, ptr, size);
        return;
    }
    if (size == 0 || p < (uintptr_t)pg->blocks)
        return;
    uint64_t block = (p - (uintptr_t)pg->blocks) / size;
    if (block >= pg->capacity)
        return;
    if (p != (uintptr_t)pg->blocks + block * size)
        hk_report("pointer inside a block", call, ptr, size);
    /* The start of a medium or large block whose bit says free. */
    if (kind != HK_SMALL && (pg->free_map[block / 64] >> (block % 64)) & 1)
        hk_report("double free", call, ptr, size);
}

#else
typedef int hk_secure_unused; /* ISO C wants something in a file */
#endif
