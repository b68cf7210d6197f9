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

/* Read by every malloc and free of every thread: a cache line of its own,
 * which no thread's write takes away (the purger's lock was beside it). */
struct hk_secure_keys hk_secure_keys __attribute__((aligned(HK_CACHE_LINE)));

#if defined(__x86_64__)
static bool has_avx2; /* hk_secure_clear and hk_secure_zeroed read 32 bytes at a time */
#endif

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
#if defined(__x86_64__)
    __builtin_cpu_init(); /* this may run before the constructors */
    has_avx2 = __builtin_cpu_supports("avx2");
#endif
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

/* Zero `size` bytes at b (a multiple of 64, b 16-aligned), writing only
 * the cache lines that are not zero already: a medium, large or huge
 * block, which its last free or the OS left zero and which a program
 * seldom writes all of.  Reading a line that stays clean costs the memory
 * half what writing it does (no write-back), and a block freed cold is
 * read from far away either way (random-mixed 4..32 KiB: half the user
 * time of a memset; with blocks up to 1 KiB, which stay in the cache, a
 * memset is faster). */
static void clear_16(void *b, size_t size)
{
    hk_v2 *v = b, zero = { 0, 0 };
    for (size_t i = 0; i < size / 16; i += 4) {
        hk_v2 a = v[i] | v[i + 1] | v[i + 2] | v[i + 3];
        if ((a[0] | a[1]) != 0)
            v[i] = v[i + 1] = v[i + 2] = v[i + 3] = zero;
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

/* The same, 128 bytes a step in 32-byte registers: a block in the cache is
 * read about 1.5 times as fast as 64 bytes a step in 16-byte ones. */
__attribute__((target("avx2"))) static void clear_32(void *b, size_t size)
{
    __m256i *v = b, zero = _mm256_setzero_si256();
    size_t n = size / 32, i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i a = _mm256_or_si256(_mm256_loadu_si256(v + i), _mm256_loadu_si256(v + i + 1));
        __m256i c = _mm256_or_si256(_mm256_loadu_si256(v + i + 2), _mm256_loadu_si256(v + i + 3));
        a = _mm256_or_si256(a, c);
        if (!_mm256_testz_si256(a, a)) {
            _mm256_storeu_si256(v + i, zero);
            _mm256_storeu_si256(v + i + 1, zero);
            _mm256_storeu_si256(v + i + 2, zero);
            _mm256_storeu_si256(v + i + 3, zero);
        }
    }
    if (i < n)
        clear_16(v + i, size - i * 32);
}

/* hk_secure_zero, 128 bytes a step in 32-byte registers. */
__attribute__((target("avx2"))) static bool zero_32(const void *p, size_t n)
{
    const __m256i *v = p;
    __m256i a = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 4 <= n / 32; i += 4) {
        a = _mm256_or_si256(a, _mm256_or_si256(_mm256_loadu_si256(v + i), _mm256_loadu_si256(v + i + 1)));
        a = _mm256_or_si256(a, _mm256_or_si256(_mm256_loadu_si256(v + i + 2), _mm256_loadu_si256(v + i + 3)));
    }
    return _mm256_testz_si256(a, a) && hk_secure_zero(v + i, n - i * 32);
}
#endif

void hk_secure_clear(void *b, size_t size)
{
#if defined(__x86_64__)
    if (has_avx2) {
        clear_32(b, size);
        return;
    }
#endif
    clear_16(b, size);
}

bool hk_secure_zeroed(const void *p, size_t n)
{
#if defined(__x86_64__)
    if (has_avx2)
        return zero_32(p, n);
#endif
    return hk_secure_zero(p, n);
}

/* Zero bytes from 16 on: a freed block shows nothing of its old contents.
 * The first 16 get the link and tag (hk_set_next) right after. */
static inline void clear_rest(void *b, size_t size)
{
    memset((char *)b + 16, 0, size - 16);
}

/* The carving thread's random numbers (splitmix64), seeded from the
 * secrets and the thread's own address on its first carve. */
static __thread uint64_t carve_state;

static uint64_t carve_random(void)
{
    if (carve_state == 0)
        carve_state = hk_secure_keys.tag ^ (uintptr_t)&carve_state;
    uint64_t z = (carve_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A batch is about 4 KiB of blocks of 16 bytes or more (size_class.c). */
#define CARVE_MAX 256

/* n never-used blocks of `size` bytes from `first` become free blocks,
 * linked in front of `list` in a random order (Fisher-Yates): the order
 * in which a page hands out its blocks, and so which block follows which
 * in memory, cannot be foretold.  Returns the new head. */
void *hk_secure_carve(char *first, size_t size, unsigned n, void *list)
{
    uint16_t order[CARVE_MAX];
    HK_ASSERT(n <= CARVE_MAX);
    for (unsigned i = 0; i < n; i++)
        order[i] = (uint16_t)i;
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)((carve_random() >> 32) * i >> 32);
        uint16_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (unsigned i = 0; i < n; i++) {
        char *b = first + (size_t)order[i] * size;
        clear_rest(b, size);
        hk_set_next(b, list);
        list = b;
    }
    return list;
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

/* p was validated by hk_page_of: the start of a block of pg.  Another
 * thread's block is cleared by its owner when it drains it
 * (hk_secure_drained): the owner's core has its lines, and nobody gets
 * the block before. */
void hk_secure_freeing(struct hk_page *pg, void *p, const char *call)
{
    if (HK_UNLIKELY(is_free(p) || (pg->kind != HK_SMALL && bit_free(pg, p))))
        hk_report("double free", call, p, pg->block_size);
    if (pg->heap != hk_tls.heap)
        return;
    if (pg->kind != HK_SMALL) {
        hk_secure_clear(p, pg->block_size);
        bitmap_seal(p, pg->block_size);
        return;
    }
    /* A block never carved was never handed out (the owner's field: only
     * the owner reads it). */
    size_t index = (size_t)((char *)p - pg->blocks) / pg->block_size;
    if (HK_UNLIKELY(index >= (size_t)(pg->capacity - pg->unbumped)))
        hk_report("free of a block never handed out", call, p, pg->block_size);
    clear_rest(p, pg->block_size);
}

/* A free of p, 16-byte aligned in the calling thread's own small region
 * (hk_own_small): when p is the start of a block carved from a page in use,
 * the block is checked, cleared and freed here, validated as hk_page_of
 * would validate it, less the arena table (the arena is the heap's first);
 * anything else goes to hk_free_slow, which says what it is. */
void hk_secure_free_own(void *p, const char *call)
{
    uintptr_t u = (uintptr_t)p;
    const struct hk_region *r = &((const struct hk_arena *)(u & ~(HK_ARENA_SIZE - 1)))->region[HK_SMALL];
    uint32_t index = (uint32_t)((u & (HK_ARENA_SIZE - 1)) >> HK_SMALL_PAGE_SHIFT);
    if (index - r->first >= atomic_load_explicit(&r->hwm, memory_order_relaxed) - r->first) {
        hk_free_slow(p, call);
        return;
    }
    struct hk_page *pg = (struct hk_page *)(u & ~(((uintptr_t)1 << HK_SMALL_PAGE_SHIFT) - 1));
    uint32_t size = pg->block_size;
    /* Below the first block the offset wraps, and no multiple of the size
     * is that large. */
    uint64_t offset = u - (uintptr_t)pg->blocks;
    uint64_t i = (offset * pg->div_magic) >> 32;
    if (size == 0 || i * size != offset || i >= (uint64_t)(pg->capacity - pg->unbumped)) {
        hk_free_slow(p, call);
        return;
    }
    if (HK_UNLIKELY(is_free(p)))
        hk_report("double free", call, p, size);
    /* hk_page_free_local, with the clear last, where it needs no registers
     * kept: only this thread reads the page's list, and the link and tag
     * are not in the bytes cleared.  A page whose last block this is may
     * be given back by hk_page_event: cleared before. */
    hk_set_next(p, pg->local_free);
    pg->local_free = p;
    if (HK_UNLIKELY(--pg->used == 0)) {
        clear_rest(p, size);
        hk_page_event(p);
        return;
    }
    clear_rest(p, size);
}

void hk_secure_live(struct hk_page *pg, const void *p, const char *call)
{
    if (HK_UNLIKELY(is_free(p) || (pg->kind != HK_SMALL && bit_free(pg, p))))
        hk_report("use after free", call, p, pg->block_size);
}

/* A block leaving a free list is not as it was freed or carved. */
void hk_secure_written(void *block, size_t size)
{
    hk_report("write to a freed block", "malloc", block, size);
}

/* A block another thread freed reaches its owner: cleared, after the link
 * and tag it had on the way (a small one gets a new link; a medium or
 * large one the tag of a free one). */
void hk_secure_drained(void *b)
{
    const struct hk_page *pg = hk_page_of_block(b);
    if (pg->kind == HK_SMALL) {
        clear_rest(b, pg->block_size);
    } else {
        hk_secure_clear(b, pg->block_size);
        bitmap_seal(b, pg->block_size);
    }
}

/* pg, a medium or large page, is set up for class cls.  The memory of a
 * page that held another class's blocks (from the dirty list, not purged)
 * is zeros but for that class's tags, where its blocks began: they go, so
 * that every free block of a page in use is either sealed or all zeros. */
void hk_secure_page_init(struct hk_page *pg, unsigned cls)
{
    unsigned old = pg->cls;
    if (hk_classes[cls].kind == HK_SMALL || old == 0 || old == cls)
        return;
    const struct hk_class *k = &hk_classes[old];
    char *base = hk_page_base(pg);
    size_t end = k->capacity;
    if (hk_arena_of((uintptr_t)base)->compact && pg->mapped / k->block_size < end)
        end = pg->mapped / k->block_size; /* the rest is not mapped */
    for (size_t i = 0; i < end; i++) {
        uintptr_t *w = (uintptr_t *)(base + i * k->block_size);
        if (w[0] != 0 || w[1] != 0)
            w[0] = w[1] = 0;
    }
}

/* A medium or large block leaves its page.  One with the tag of its size
 * was freed and cleared since; one with zeros there was never freed in
 * this page's life, or its memory was given back (hk_secure_page_init):
 * either way a byte not zero where hk_secure_fill_clean looks, or another
 * tag, was written after a free. */
void *hk_secure_bitmap_taken(void *p)
{
    /* A guarded block stands in for one of a page (guard.c): not a page's. */
    if (p == NULL || (HK_UNLIKELY(hk_guard_on) && hk_page_of(p) == NULL))
        return p;
    uintptr_t *w = p;
    size_t size = hk_page_of_block(p)->block_size;
    bool sealed = w[0] == size && is_free(p);
    if (HK_UNLIKELY(!(sealed || (w[0] == 0 && w[1] == 0)) || !hk_secure_fill_clean(p, size)))
        hk_secure_written(p, size);
    w[0] = 0;
    w[1] = 0;
    return p;
}

/* A free that names the block's size (free_sized, free_aligned_sized, the
 * sized operator deletes): the size must be one the block could have been
 * allocated with, or the program frees something else than it thinks
 * (delete of an array, delete[] of one object, a size from another
 * object).  `exact`: the block came from that very size (operator new);
 * otherwise realloc may have kept a larger block (it keeps one when
 * shrinking to half or more).  A pointer hakmem did not hand out is left
 * to the free, which reports it. */
void hk_secure_sized_free(const void *p, size_t size, size_t align, bool exact, const char *call)
{
    if (p == NULL)
        return;
    struct hk_page *pg = hk_page_of(p);
    size_t have;
    unsigned cls;
    if (pg != NULL) {
        have = pg->block_size;
        cls = align > 16 ? hk_aligned_class(size, align) : size > HK_LARGE_MAX ? 0 : hk_size_class(size);
        if (cls == pg->cls || (!exact && align <= 16 && size <= have && (size >= have / 2 || have <= 32)))
            return;
    } else {
        /* A huge block: allocated with a huge size, or shrunk by realloc
         * to half or more of it. */
        have = hk_huge_usable_size(p);
        bool huge = align > 16 ? hk_aligned_class(size, align) == 0 : size > HK_LARGE_MAX;
        if (have == 0 || (size <= have && (huge || (!exact && size >= have / 2))))
            return;
    }
    hk_report("wrong size", call, p, have);
}

/* A huge block is freed into the cache: its tag, and zeros where
 * hk_secure_fill_clean looks, so that a second free and a write after the
 * free are seen while its range is cached.  The rest is cleared when the
 * range serves again (hk_huge_alloc): a block of many MiB is cleared once,
 * and not at all if its range goes back to the OS.  A cached range
 * starts with such a block (a merged one with the lower block, a split
 * one's rest gets a tag of its own). */
void hk_secure_huge_freed(void *p, size_t size)
{
    memset((char *)p + 16, 0, 48);
    memset((char *)p + size - 64, 0, 64);
    bitmap_seal(p, size);
}

/* The cached range of `range` bytes at p is taken, under the cache's lock
 * (no other thread takes the blocks it checks): its first block must be
 * as it was freed. */
void hk_secure_huge_taken(void *p, size_t range)
{
    const uintptr_t *w = p;
    if (HK_UNLIKELY(w[0] > range || !is_free(p)))
        hk_secure_written(p, range);
    if (HK_UNLIKELY(!hk_secure_fill_clean(p, w[0])))
        hk_secure_written(p, w[0]);
}

/* The name of a call on a freed block: a second free, or a use. */
static const char *freed_what(const char *call)
{
    return strcmp(call, "realloc") == 0 || strcmp(call, "malloc_usable_size") == 0
               ? "use after free" : "double free";
}

/* p failed validation and lies in no arena: a huge block's inside, or one
 * freed into the cache. */
static void huge_bad_pointer(const char *call, const void *p)
{
    size_t size = hk_huge_cache_freed(p);
    if (size != 0)
        hk_report(freed_what(call), call, p, size);
    size = hk_huge_inside(p);
    if (size != 0)
        hk_report("pointer inside a block", call, p, size);
}

/* p failed validation.  If it lies in a block of a page in use, or of a
 * huge block, say how. */
void hk_secure_bad_pointer(const char *call, const void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    struct hk_arena *a = hk_arena_of(p);
    if (a == NULL) {
        huge_bad_pointer(call, ptr);
        return;
    }
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
