/*
 * Sample slots: the blocks that stand in for sampled allocations of a size
 * class while the heap profiler runs (heap_profile.c; guarded ones, and
 * those the range has no room for, are huge blocks).
 *
 * A sampled block must be told apart when it is freed, by any thread, with
 * no test on the fast paths: so it is not a block of an arena, and free,
 * realloc and malloc_usable_size reach it only after hk_block_home has said
 * no.  Slots live in one range of address space of their own (SLOT_SPACE),
 * reserved at the first sample (none under an address-space limit) and
 * committed a step at a time; a pointer in the range is a slot's if the
 * 16 bytes before it, the slot's header, hold its own address.  A slot is
 * carved where the range's last one ended, whatever its class: its block at
 * the alignment the class's blocks have in a page (the largest power of two
 * that divides its size), which an aligned allocation served by the class
 * relies on, with the header just before it.  (A chunk of 256 KiB or more
 * per class put each class's first sample on an OS page of its own.)  A
 * freed slot waits on its class's free list for the class's next sample.
 *
 * Everything here but hk_slot_purge runs under the heap profiler's lock,
 * which a sample takes anyway to record its site and to count its free:
 * one lock per sampled malloc and one per its free.  A stand-in from the
 * huge registry took the registry's lock twice more, with its hash and its
 * spare mappings.
 */
#include <sys/resource.h>

#include "sample_slot.h"

/* Reserved address space counts against an address-space limit even
 * untouched: under one (RLIMIT_AS), there are no slots, and samples are
 * huge blocks as a class's blocks beyond the range's room are. */
#define SLOT_SPACE ((size_t)256 << 20)
/* The range is committed (mprotect) this much at a time, not a class's
 * chunk at a time: each commit is a system call under the profiler's lock,
 * which another thread's sample then waits for (xstress profiled, 2
 * threads: 40 chunks, and the lock's waiters slept on it 23 times). */
#define COMMIT_STEP ((size_t)2 << 20)

_Static_assert(sizeof(struct slot_header) == 16, "a slot header is 16 bytes");

_Atomic uintptr_t hk_slot_lo, hk_slot_hi;
static bool reserve_failed;
struct hk_slots hk_slots;

static size_t align_of(size_t size)
{
    return size & -size;
}

/* The range is reserved at the first sample. */
static HK_NOINLINE bool reserve(void)
{
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
    hk_slots.space_next = hk_slots.committed = (uintptr_t)space;
    for (unsigned k = 1; k < HK_NCLASSES; k++)
        hk_slots.classes[k].size = hk_classes[k].block_size;
    hk_slot_hi = (uintptr_t)space + SLOT_SPACE;
    hk_slot_lo = (uintptr_t)space;
    return true;
}

void *hk_slot_carve(unsigned cls)
{
    if (hk_slot_lo == 0 && !reserve())
        return NULL;
    /* Block sizes are multiples of 16, the header's size: the block's
     * alignment leaves room for the header before it. */
    size_t size = hk_classes[cls].block_size, align = align_of(size);
    HK_ASSERT(align >= sizeof(struct slot_header));
    uintptr_t block = (hk_slots.space_next + sizeof(struct slot_header) + align - 1) &
                      ~(uintptr_t)(align - 1);
    if (block + size > hk_slot_hi)
        return NULL;
    if (block + size > hk_slots.committed) {
        uintptr_t end = block + size > hk_slots.committed + COMMIT_STEP
                            ? block + size
                            : hk_slots.committed + COMMIT_STEP;
        end = (end + HK_OS_PAGE - 1) & ~(uintptr_t)(HK_OS_PAGE - 1);
        end = end < hk_slot_hi ? end : hk_slot_hi;
        if (!hk_os_commit((void *)hk_slots.committed, end - hk_slots.committed))
            return NULL;
        hk_slots.committed = end;
    }
    hk_slots.space_next = block + size;
    return (void *)block;
}

/* The whole pages of a free slot's block go back (its header's stays). */
static void purge(struct slot_header *h, size_t block)
{
    uintptr_t p = (uintptr_t)(h + 1);
    uintptr_t lo = (p + HK_OS_PAGE - 1) & ~(uintptr_t)(HK_OS_PAGE - 1);
    uintptr_t hi = (p + block) & ~(uintptr_t)(HK_OS_PAGE - 1);
    if (hi > lo)
        hk_os_purge((void *)lo, hi - lo);
    h->site = HK_SLOT_PURGED;
}

size_t hk_slot_usable_size(const void *p)
{
    struct slot_header *h = hk_slot_live(p);
    return h == NULL ? 0 : hk_classes[h->cls].block_size;
}

void hk_slot_push(struct slot_header *h)
{
    hk_slot_put(&hk_slots.classes[h->cls], h);
}

void hk_slot_purge(struct slot_header *h)
{
    purge(h, hk_classes[h->cls].block_size);
}

void hk_slot_release_free(void)
{
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++) {
        struct hk_slot_class *c = &hk_slots.classes[cls];
        for (struct slot_header *h = c->free; h != NULL; h = (struct slot_header *)h->self)
            if (h->site != HK_SLOT_PURGED) {
                purge(h, c->size);
                hk_slots.dirty -= c->size;
            }
    }
}
