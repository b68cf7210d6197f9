/*
 * malloc.  The fast path: size to class by one shift and a byte table, pop
 * the class's TLS free list.  Sizes above 4 KiB up to 512 KiB go to
 * hk_bitmap_malloc; everything else (refill, huge sizes, the first call of a
 * thread) to hk_refill and hk_malloc_slow.
 */
#include <errno.h>
#include <stdint.h>

#include "hakmem.h"
#include "internal.h"

HK_API HK_HOT void *hak_malloc(size_t size)
{
    if (HK_LIKELY(size <= HK_FAST_MAX)) {
        size_t cls = hk_tls.class_of[(size + 15) >> 4];
        void **list = &hk_tls.free[cls];
        /* The head is a link (thread_lists.c): the block's address under
         * a count of pushed blocks; the block's own link goes in its place
         * as it is. */
        void *block = hk_link_block(*list);
        if (HK_LIKELY(block != NULL)) {
            void *next = hk_next(block);
            HK_SECURE_TAKEN(block, next, cls);
            *list = next;
            return block;
        }
        if (HK_LIKELY(cls != 0))
            return hk_refill((unsigned)cls);
    } else if (HK_LIKELY(size <= HK_LARGE_MAX)) {
        return hk_bitmap_malloc(size);
    }
    return hk_malloc_slow(size);
}
HK_ALIAS(malloc, hak_malloc)

/* A block of class cls: the TLS list's first, or a refill's. */
static inline void *alloc_from_class(unsigned cls)
{
    void *block = hk_tls_pop(cls);
    return HK_LIKELY(block != NULL) ? block : hk_refill(cls);
}

HK_NOINLINE void *hk_malloc_slow(size_t size)
{
    if (HK_UNLIKELY(size > HK_LARGE_MAX))
        return hk_huge_alloc(size, HK_OS_PAGE, false);
    /* The class table: another library's constructor may call malloc
     * before hakmem's has run (libselinux's fopen does, in mkdir or tar). */
    if (HK_UNLIKELY(hk_tls.heap == NULL))
        hk_init();
    unsigned cls = hk_size_class(size);
    return alloc_from_class(cls);
}

/* hk_aligned where its class's TLS list is empty, or no class fits. */
HK_NOINLINE void *hk_aligned_slow(size_t align, size_t size)
{
    if (align <= 16)
        return hak_malloc(size);
    if (size > PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    if (HK_UNLIKELY(hk_tls.heap == NULL))
        hk_init(); /* the class table; a thread with a heap has it already */
    unsigned cls = hk_aligned_class(size, align);
    if (cls == 0)
        return hk_huge_alloc(size, align, false);
    /* A span page's blocks (64 KiB and up) start at a slice, aligned to
     * 16 KiB (a size below 64 KiB that the alignment took to a class of
     * them asks for 64 KiB).  A larger alignment takes a block of its
     * class's own pages, aligned to the class's size.  (Not malloc's path:
     * a block from the huge chunk is aligned to a page only.) */
    struct hk_heap *h = hk_tls.heap;
    if (align <= HK_SPAN_SLICE && h != NULL && h->current[cls] == NULL && hk_span_serves(h, cls))
        return hk_span_malloc(h, size > HK_SPAN_MIN ? size : HK_SPAN_MIN, cls);
    return alloc_from_class(cls);
}
