/*
 * free.  The fast path recognises a block of the calling thread's own small
 * region with one rotate, one shift and one compare: rotating the address
 * right by 4 moves its low bits to the top, so a pointer that is not 16-byte
 * aligned can never equal the thread's key.  Then the page header is found by
 * masking, and the block is pushed on the page's local list.  The thread's
 * own medium and large blocks are found the same way, in the arena's upper
 * half.  Anything else (NULL, another thread's block, huge blocks, foreign
 * pointers) goes to hk_free_slow, which validates before it touches memory.
 */
#include "block_home.h"
#include "hakmem.h"
#include "internal.h"

static inline void free_block(void *p, const char *call)
{
    /* The hardened build trusts no pointer: every free is validated.  Past
     * page_key (~0 once the thread's frees go to its lists), the thread's
     * own small blocks go to hk_free_other as well. */
    if (HK_LIKELY(!HK_SECURE_ON && hk_half_key(p) == hk_tls.page_key)) {
        uintptr_t u = (uintptr_t)p;
        /* hk_page_free_local, spelled so that gcc addresses both fields from
         * the page base and decrements `used` in memory. */
        char *header = (char *)(u & ~(((uintptr_t)1 << HK_SMALL_PAGE_SHIFT) - 1));
        void **local_free = (void **)(header + offsetof(struct hk_page, local_free));
        int32_t *used = (int32_t *)(header + offsetof(struct hk_page, used));
        hk_set_next(p, *local_free);
        *local_free = p;
        int32_t left = *used - 1;
        *used = left;
        if (HK_UNLIKELY(left == 0))
            hk_page_event(p);
        return;
    }
    /* The thread's own medium and large blocks: as trusted as the small ones
     * (nothing else can live in the thread's own arena). */
    if (!HK_SECURE_ON && hk_own_bitmap(p)) {
        hk_bitmap_free(hk_bitmap_page_of(p), p, call);
        return;
    }
#ifdef HK_SECURE
    if (HK_LIKELY(hk_own_small(p))) {
        hk_secure_free_own(p, call);
        return;
    }
#endif
    hk_free_other(p, call);
}

HK_API HK_HOT void hak_free(void *p)
{
    free_block(p, "free");
}
HK_ALIAS(free, hak_free)
HK_ALIAS(cfree, hak_free)

/* C++ operator delete in every form: the size and alignment arguments carry
 * nothing hakmem needs, and the x86-64 and AArch64 calling conventions let a
 * function ignore trailing arguments, so each is free itself.  (The
 * hardened build checks the size of the sized ones: cxx.c.) */
HK_ALIAS(_ZdlPv, hak_free)
HK_ALIAS(_ZdaPv, hak_free)
#ifndef HK_SECURE
HK_ALIAS(_ZdlPvm, hak_free)
HK_ALIAS(_ZdaPvm, hak_free)
#endif
HK_ALIAS(_ZdlPvRKSt9nothrow_t, hak_free)
HK_ALIAS(_ZdaPvRKSt9nothrow_t, hak_free)
HK_ALIAS(_ZdlPvSt11align_val_t, hak_free)
HK_ALIAS(_ZdaPvSt11align_val_t, hak_free)
#ifndef HK_SECURE
HK_ALIAS(_ZdlPvmSt11align_val_t, hak_free)
HK_ALIAS(_ZdaPvmSt11align_val_t, hak_free)
#endif
HK_ALIAS(_ZdlPvSt11align_val_tRKSt9nothrow_t, hak_free)
HK_ALIAS(_ZdaPvSt11align_val_tRKSt9nothrow_t, hak_free)

/* p, in page pg, goes home to another thread's heap.  Its owner checks
 * it there, but a span page's slice inside a block out (span_page.c) is
 * told from a block's start only by the page's run map: read here, so that
 * such a free is reported where it was made; a sampled span block leaves
 * the heap profile here too, not when its owner gets to it.  (A block out
 * starts there until this thread frees it: no race with the owner.) */
static inline void send_home(struct hk_heap *owner, struct hk_page *pg, unsigned cls, void *p,
                             const char *call)
{
    if (HK_UNLIKELY(cls == HK_SPAN_CLASS)) {
        uint8_t run = hk_span_runs(pg)[hk_span_slice(pg, p)];
        if (run == 0)
            hk_invalid_pointer(call, p);
        if (run & HK_SPAN_SAMPLED)
            hk_span_sample_freed(pg, p);
    }
    hk_remote_free(owner, p);
}

/* Block p of an arena, in page pg (of class cls) of heap owner, that the
 * calling thread does not keep: freed by its owner, or sent home. */
static HK_NOINLINE void free_home(void *p, struct hk_page *pg, struct hk_heap *owner,
                                  unsigned cls, const char *call)
{
    if (owner == hk_tls.heap)
        hk_page_free_local(pg, p, call);
    else
        send_home(owner, pg, cls, p, call);
}

/* Not a block of an arena, nor in the sample slots' range: a huge or
 * guarded block, or what hakmem did not hand out. */
static HK_NOINLINE void free_huge_or_guarded(void *p, const char *call)
{
    if (!hk_huge_free(p) && !hk_guard_free(p, call))
        hk_invalid_pointer(call, p);
}

/* Not a block of an arena.  The slots' range is the profiler's own, so a
 * pointer in it is a slot's or invalid, which hk_heap_sample_slot_free
 * tells: one test and a tail call from hk_free_slow, which reaches here
 * once its frame is let go. */
static inline void free_other(void *p, const char *call)
{
    if (hk_slot_range(p))
        hk_heap_sample_slot_free(p, call);
    else
        free_huge_or_guarded(p, call);
}

/* A free that is not of the thread's own small block going back to its
 * page, nor of its own medium or large block.  Once the thread's frees go
 * to its lists (thread_lists.c), a small block of a full-size arena,
 * whoever's, goes on the list of its class, with no branch on whose it is,
 * but for another heap's block under a cache line; the rest is
 * hk_free_slow's. */
HK_NOINLINE void hk_free_other(void *p, const char *call)
{
    struct hk_tls *t = &hk_tls;
    uintptr_t key = hk_half_key(p);
    if (hk_listed_half(key) && t->page_key != t->small_key) {
        /* 1 when p is the thread's own, with no branch (keys are below
         * 2^37, so the difference's top bit is its only borrow). */
        uint64_t own = ((key ^ t->small_key) - 1) >> 63;
        t->lists_count += (own << 32) + 1;
        size_t cls = hk_class_map(key << HK_SMALL_REGION_SHIFT)[(uint32_t)(uintptr_t)p >>
                                                              HK_SMALL_PAGE_SHIFT];
        /* The class first: the owner test is taken only for blocks under
         * a cache line, where it is the branch no predictor learns.  (Two
         * pushes, not one under `||`: gcc then tested the owner first.) */
        if (HK_LIKELY(cls >= HK_LINE_CLASS)) {
            hk_list_push(cls, p);
            return;
        }
        if (key == t->small_key) {
            hk_list_push(cls, p);
            return;
        }
    }
    hk_free_slow(p, call);
}

/* Anything but the thread's own blocks: validated, then freed.  Another
 * thread's small block, which servers free all the time, is kept here with
 * no call (every call is a tail call: no frame). */
HK_NOINLINE void hk_free_slow(void *p, const char *call)
{
    if (p == NULL)
        return;
    struct hk_block_home home;
    if (!hk_find_block_home(p, &home)) {
        free_other(p, call);
        return;
    }
    HK_SECURE_FREEING(home.page, p, call);
    struct hk_heap *mine = hk_tls.heap;
    if (HK_LIKELY(home.heap != mine && mine != NULL)) {
        if (HK_UNLIKELY((++mine->foreign_frees & (HK_LISTS_LOOK - 1)) == 0))
            hk_lists_consider(mine);
        /* A small block of a line or more goes on the list, whose push
         * decides at the cap and while sampling (hk_list_push). */
        if (HK_LIKELY(home.cls >= HK_LINE_CLASS && hk_classes[home.cls].keep_cap != 0)) {
            hk_foreign_keep(mine, home.cls, p);
            return;
        }
    }
    /* A thread without a heap (a consumer that only frees) sends every
     * block home: straight there. */
    if (mine == NULL) {
        send_home(home.heap, home.page, home.cls, p, call);
        return;
    }
    free_home(p, home.page, home.heap, home.cls, call);
}

/* The sized and aligned forms carry information hakmem does not need. */
HK_API void hak_free_sized(void *p, size_t size)
{
#ifdef HK_SECURE
    hk_secure_sized_free(p, size, 0, false, "free_sized");
#endif
    (void)size;
    free_block(p, "free_sized");
}
HK_ALIAS(free_sized, hak_free_sized)

HK_API void hak_free_aligned_sized(void *p, size_t alignment, size_t size)
{
#ifdef HK_SECURE
    hk_secure_sized_free(p, size, alignment, false, "free_aligned_sized");
#endif
    (void)alignment;
    (void)size;
    free_block(p, "free_aligned_sized");
}
HK_ALIAS(free_aligned_sized, hak_free_aligned_sized)
