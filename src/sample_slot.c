/*
 * Sample slots: the blocks that stand in for sampled allocations of a size
 * class below 64 KiB while the heap profiler runs (heap_profile.c; larger
 * ones are huge blocks, from memory faulted in by 2 MiB).
 *
 * A sampled block must be told apart when it is freed, by any thread, with
 * no test on the fast paths: so it is not a block of an arena, and free,
 * realloc and malloc_usable_size reach it only after hk_block_home has said
 * no.  Slots live in one range of address space of their own (SLOT_SPACE),
 * reserved at the first sample (none under an address-space limit) and
 * committed a chunk at a time; a pointer in the range is a slot's if the
 * 16 bytes before it, the slot's header, hold its own address.  The slots
 * of a class sit at a stride that keeps the alignment its blocks have in a
 * page (the largest power of two that divides its size), which an aligned
 * allocation served by the class relies on, with the header just before
 * the block.
 *
 * Everything here but hk_slot_purge runs under the heap profiler's lock,
 * which a sample takes anyway to record its site and to count its free:
 * one lock per sampled malloc and one per its free.  A stand-in from the
 * huge registry took the registry's lock twice more, with its hash and its
 * spare mappings.
 */
#include <sys/resource.h>

#include "internal.h"

/* Reserved address space counts against an address-space limit even
 * untouched: under one (RLIMIT_AS), there are no slots, and samples are
 * huge blocks as a class's blocks beyond the range's room are. */
#define SLOT_SPACE ((size_t)256 << 20)
#define CHUNK_MIN ((size_t)256 << 10)
/* Free slots whose memory is still there, at most (all classes): beyond,
 * a freed slot's memory goes back, out of the lock.  A purge at every free
 * above 1 MiB a class held the lock through madvise and halved xstress
 * profiled (1035 madvise calls; 1594 futex waits against 100). */
#define KEEP_DIRTY ((size_t)8 << 20)
/* The range is committed (mprotect) this much at a time, not a class's
 * chunk at a time: each commit is a system call under the profiler's lock,
 * which another thread's sample then waits for (xstress profiled, 2
 * threads: 40 chunks, and the lock's waiters slept on it 23 times). */
#define COMMIT_STEP ((size_t)2 << 20)

#define PURGED 1 /* a free slot whose block's memory went back */
_Static_assert(sizeof(struct slot_header) == 16, "a slot header is 16 bytes");

struct slot_class {
    struct slot_header *free; /* free slots' headers, linked through self's place */
    uintptr_t next, end;      /* the class's chunk: slots not handed out yet */
    size_t stride;            /* from slot to slot (stride_of), set as the range is reserved */
};

_Atomic uintptr_t hk_slot_lo, hk_slot_hi;
static bool reserve_failed;
/* What samples write (under the profiler's lock), apart from the range's
 * bounds, which any thread's free reads without it. */
static struct __attribute__((aligned(64))) {
    size_t dirty;         /* bytes of free slots whose memory is there */
    uintptr_t space_next; /* the reserved range's first byte not in a chunk */
    uintptr_t committed;  /* ... and the first not committed (COMMIT_STEP) */
    struct slot_class classes[HK_NCLASSES];
} held;

static size_t align_of(size_t size)
{
    return size & -size;
}

static size_t stride_of(size_t size)
{
    size_t a = align_of(size);
    return (size + sizeof(struct slot_header) + a - 1) & ~(a - 1);
}

static HK_NOINLINE bool new_chunk(struct slot_class *c, size_t size)
{
    if (hk_slot_lo == 0) {
        if (reserve_failed)
            return false;
        struct rlimit as;
        void *space = NULL;
        if (getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY)
            space = hk_os_reserve_aligned(SLOT_SPACE, (size_t)1 << 21);
        if (space == NULL) {
            reserve_failed = true; /* an address-space limit: huge stand-ins instead */
            return false;
        }
        held.space_next = held.committed = (uintptr_t)space;
        for (unsigned k = 1; k < HK_NCLASSES; k++)
            held.classes[k].stride = stride_of(hk_classes[k].block_size);
        hk_slot_hi = (uintptr_t)space + SLOT_SPACE;
        hk_slot_lo = (uintptr_t)space;
    }
    size_t stride = c->stride, align = align_of(size);
    if (align < HK_OS_PAGE)
        align = HK_OS_PAGE;
    size_t len = stride * 4 > CHUNK_MIN ? stride * 4 : CHUNK_MIN;
    len = (len + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    uintptr_t start = (held.space_next + align - 1) & ~(uintptr_t)(align - 1);
    if (start + len > hk_slot_hi)
        return false;
    if (start + len > held.committed) {
        uintptr_t end = start + len > held.committed + COMMIT_STEP ? start + len
                                                                   : held.committed + COMMIT_STEP;
        end = end < hk_slot_hi ? end : hk_slot_hi;
        if (!hk_os_commit((void *)held.committed, end - held.committed))
            return false;
        held.committed = end;
    }
    held.space_next = start + len;
    c->next = start;
    c->end = start + len;
    return true;
}

void *hk_slot_alloc(unsigned cls)
{
    struct slot_class *c = &held.classes[cls];
    struct slot_header *h = c->free;
    if (h != NULL) {
        c->free = (struct slot_header *)h->self;
        if (h->site != PURGED)
            held.dirty -= c->stride;
    } else {
        size_t size = hk_classes[cls].block_size;
        /* A stride of 0: the range is not reserved yet (new_chunk sets them). */
        if ((c->stride == 0 || c->end - c->next < c->stride) && !new_chunk(c, size))
            return NULL;
        h = (struct slot_header *)(c->next + c->stride - size - sizeof *h);
        c->next += c->stride;
    }
    return h + 1;
}

/* The whole pages of a free slot's block go back (its header's stays). */
static void purge(struct slot_header *h, size_t block)
{
    uintptr_t p = (uintptr_t)(h + 1);
    uintptr_t lo = (p + HK_OS_PAGE - 1) & ~(uintptr_t)(HK_OS_PAGE - 1);
    uintptr_t hi = (p + block) & ~(uintptr_t)(HK_OS_PAGE - 1);
    if (hi > lo)
        hk_os_purge((void *)lo, hi - lo);
    h->site = PURGED;
}

/* p's header if p is a live slot's block, else NULL. */
static inline struct slot_header *live_header(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    if (u - hk_slot_lo >= held.space_next - hk_slot_lo || (u & 15) != 0 || u < hk_slot_lo + 16)
        return NULL;
    struct slot_header *h = (struct slot_header *)u - 1;
    return h->self == u ? h : NULL;
}

size_t hk_slot_usable_size(const void *p)
{
    struct slot_header *h = live_header(p);
    return h == NULL ? 0 : hk_classes[h->cls].block_size;
}

static inline void push(struct slot_class *c, struct slot_header *h)
{
    if (h->site != PURGED)
        held.dirty += c->stride;
    h->self = (uintptr_t)c->free;
    c->free = h;
}

void hk_slot_push(struct slot_header *h)
{
    push(&held.classes[h->cls], h);
}

struct slot_header *hk_slot_free(void *p, uint32_t *site, unsigned *cls, bool *to_purge)
{
    struct slot_header *h = live_header(p);
    if (h == NULL)
        return NULL;
    struct slot_class *c = &held.classes[h->cls];
    *site = h->site;
    *cls = h->cls;
    h->self = 0;
    h->site = 0;
    *to_purge = held.dirty + c->stride > KEEP_DIRTY;
    if (!*to_purge)
        push(c, h);
    return h;
}

void hk_slot_purge(struct slot_header *h)
{
    purge(h, hk_classes[h->cls].block_size);
}

void hk_slot_release_free(void)
{
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++) {
        struct slot_header *h = held.classes[cls].free;
        while (h != NULL) {
            if (h->site != PURGED) {
                purge(h, hk_classes[cls].block_size);
                held.dirty -= held.classes[cls].stride;
            }
            h = (struct slot_header *)h->self;
        }
    }
}
