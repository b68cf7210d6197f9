/*
 * The rest of the malloc family, built on malloc, free and hk_aligned, with
 * the C library's contract for sizes, alignments and errno.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "hakmem.h"
#include "internal.h"

static bool is_power_of_two(size_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

static HK_NOINLINE void *calloc_slow(size_t total)
{
    if (total > HK_LARGE_MAX)
        return hk_huge_alloc(total, HK_OS_PAGE, true);
    void *p = hak_malloc(total);
#ifdef HK_SECURE
    /* The hardened build hands out blocks cleared when they were freed:
     * reading them is cheaper than clearing them again, and finds any
     * byte written after the free, where malloc checks only some. */
    size_t checked = (total + 15) & ~(size_t)15; /* classes are multiples of 16 */
    if (p != NULL && HK_UNLIKELY(!hk_secure_zeroed(p, checked)))
        hk_report("write to a freed block", "calloc", p, hk_page_of_block(p)->block_size);
#else
    if (p != NULL)
        memset(p, 0, total);
#endif
    return p;
}

/* A small block from the thread's list is cleared by a tail call of memset:
 * no frame, and no call of malloc through the GOT (its name is exported). */
HK_API void *hak_calloc(size_t count, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
#ifndef HK_SECURE
    void *p = hk_small_pop(total);
    if (HK_LIKELY(p != NULL))
        return memset(p, 0, total);
#endif
    return calloc_slow(total);
}
HK_ALIAS(calloc, hak_calloc)

/* A block of a span page: its run of slices. */
static HK_NOINLINE size_t span_usable_size(const struct hk_page *pg, const void *p,
                                           const char *call)
{
    size_t size = hk_span_block_size(pg, p);
    if (size == 0) /* inside a block, or free */
        hk_invalid_pointer(call, p);
    return size;
}

/* Everything but the thread's own blocks: out of line, so that
 * hk_usable_size's common path keeps no stack frame. */
static HK_NOINLINE size_t usable_size_slow(const void *p, const char *call)
{
    if (p == NULL)
        return 0;
    struct hk_page *pg = hk_page_of(p);
    if (pg != NULL) {
        HK_SECURE_LIVE(pg, p, call);
        return pg->cls == HK_SPAN_CLASS ? span_usable_size(pg, p, call) : pg->block_size;
    }
    size_t size = hk_heap_sample_slot_usable(p);
    if (size == 0)
        size = hk_huge_usable_size(p);
    if (size == 0)
        size = hk_guard_usable_size(p);
    if (size == 0)
        hk_invalid_pointer(call, p);
    return size;
}

/* Usable size of a live block, or 0 for NULL; aborts on a foreign pointer.
 * The thread's own blocks are found by masking, as free finds them. */
size_t hk_usable_size(const void *p, const char *call)
{
    if (!HK_SECURE_ON && hk_own_arena(p)) {
        const struct hk_page *pg = hk_page_of_any_block(p);
        if (HK_UNLIKELY(pg->cls == HK_SPAN_CLASS))
            return span_usable_size(pg, p, call);
        return pg->block_size;
    }
    return usable_size_slow(p, call);
}

HK_API size_t hak_malloc_usable_size(const void *p)
{
    return hk_usable_size(p, "malloc_usable_size");
}
HK_ALIAS(malloc_usable_size, hak_malloc_usable_size)

/* Growing within the block, or shrinking it a little, keeps it. */
static inline bool realloc_keeps(size_t size, size_t old)
{
    return size != 0 && size <= old && (size >= old / 2 || old <= 32);
}

/* realloc of a block of `old` usable bytes that must move (or be freed).
 * A block of a span page came with its page's slice size (hak_realloc
 * reads no run map): its own size decides again. */
static HK_NOINLINE void *realloc_move(void *p, size_t size, size_t old)
{
    if (size == 0) { /* as glibc: free and return NULL */
        hak_free(p);
        return NULL;
    }
    if (old == HK_SPAN_SLICE && (old = hk_usable_size(p, "realloc")) != HK_SPAN_SLICE &&
        realloc_keeps(size, old))
        return p;
    if (old > HK_LARGE_MAX && size > HK_LARGE_MAX) {
        void *q = hk_huge_realloc(p, size); /* the kernel moves the pages */
        if (q != NULL)
            return q; /* else (a range mremap cannot move): copy */
    }
    void *q = hak_malloc(size);
    if (q == NULL)
        return NULL;
    memcpy(q, p, size < old ? size : old);
    hak_free(p);
    return q;
}

/* Not the thread's own block (hak_realloc has tested that). */
static HK_NOINLINE void *realloc_slow(void *p, size_t size)
{
    if (p == NULL)
        return hak_malloc(size);
    size_t old = usable_size_slow(p, "realloc");
    return realloc_keeps(size, old) ? p : realloc_move(p, size, old);
}

/* The thread's own block that stays where it is (a string grown by a few
 * bytes) is answered with no stack frame and no call.  A block of a span
 * page reads as its page's slice, 16 KiB, here: one asked down to 8-16 KiB
 * stays where it is, larger, and any other goes to realloc_move. */
HK_API void *hak_realloc(void *p, size_t size)
{
    if (!HK_SECURE_ON && hk_own_arena(p)) {
        size_t old = hk_page_of_any_block(p)->block_size;
        return realloc_keeps(size, old) ? p : realloc_move(p, size, old);
    }
    return realloc_slow(p, size);
}
HK_ALIAS(realloc, hak_realloc)

HK_API void *hak_reallocarray(void *p, size_t count, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return hak_realloc(p, total);
}
HK_ALIAS(reallocarray, hak_reallocarray)

/* errno is the program's: kept. */
static HK_NOINLINE int posix_memalign_slow(void **out, size_t alignment, size_t size)
{
    int saved = errno;
    void *p = hk_aligned_slow(alignment, size);
    errno = saved;
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

HK_API int hak_posix_memalign(void **out, size_t alignment, size_t size)
{
    if (!is_power_of_two(alignment) || alignment % sizeof(void *) != 0)
        return EINVAL;
    void *p = hk_aligned_pop(alignment, size);
    if (HK_UNLIKELY(p == NULL))
        return posix_memalign_slow(out, alignment, size);
    *out = p;
    return 0;
}
HK_ALIAS(posix_memalign, hak_posix_memalign)

HK_API void *hak_aligned_alloc(size_t alignment, size_t size)
{
    if (!is_power_of_two(alignment)) {
        errno = EINVAL;
        return NULL;
    }
    return hk_aligned(alignment, size);
}
HK_ALIAS(aligned_alloc, hak_aligned_alloc)

/* As glibc: an alignment that is not a power of two is rounded up to one. */
HK_API void *hak_memalign(size_t alignment, size_t size)
{
    if (alignment > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    if (!is_power_of_two(alignment))
        alignment = alignment <= 1 ? 1 : (size_t)1 << (64 - __builtin_clzl(alignment - 1));
    return hk_aligned(alignment, size);
}
HK_ALIAS(memalign, hak_memalign)

HK_API void *hak_valloc(size_t size)
{
    return hk_aligned(HK_OS_PAGE, size);
}
HK_ALIAS(valloc, hak_valloc)

HK_API void *hak_pvalloc(size_t size)
{
    size_t rounded = (size + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    if (rounded < size) {
        errno = ENOMEM;
        return NULL;
    }
    return hk_aligned(HK_OS_PAGE, rounded == 0 ? HK_OS_PAGE : rounded);
}
HK_ALIAS(pvalloc, hak_pvalloc)

static size_t collect(void)
{
    size_t bytes = hk_heaps_collect_all();
    return bytes + hk_huge_cache_purge(true);
}

HK_API void hak_collect(void)
{
    collect();
}

/* glibc's name for the same request: 1 if memory went back, as in glibc. */
HK_API int hak_malloc_trim(size_t pad)
{
    (void)pad;
    return collect() != 0;
}
HK_ALIAS(malloc_trim, hak_malloc_trim)
