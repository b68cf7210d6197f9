/*
 * Sample slots (sample_slot.c): what a sampled malloc and a sampled free do
 * with them, inline in the profiler's paths (heap_profile.c), which hold
 * its lock.  Out of line, the two calls cost 43 instructions more a sample
 * (random-mixed 4-32 KiB profiled): the free passed the slot's site, class
 * and purge flag back through memory and tested the slots' range again.
 */
#ifndef HAKMEM_SAMPLE_SLOT_H
#define HAKMEM_SAMPLE_SLOT_H

#include "internal.h"

#define HK_SLOT_PURGED 1 /* a free slot's site: its block's memory went back */
/* Free slots whose memory is still there, at most (all classes): beyond,
 * a freed slot's memory goes back, out of the lock.  A purge at every free
 * above 1 MiB a class held the lock through madvise and halved xstress
 * profiled (1035 madvise calls; 1594 futex waits against 100).  With
 * blocks up to 512 KiB in slots, 8 MiB purged at nearly every free of
 * churn-large profiled (667 K page faults, 60 times its time); so did a
 * bound of twice the most bytes of live slots lately (1.3 times the
 * stand-ins' time: each class keeps free slots of its own, 30-44 MiB in
 * all there, against 20-35 MiB live). */
#define HK_SLOT_KEEP_DIRTY ((size_t)64 << 20)

struct hk_slot_class {
    struct slot_header *free; /* free slots' headers, linked through self's place */
    size_t size;              /* the class's block size, set as the range is reserved */
};

/* What samples write (under the profiler's lock), apart from the range's
 * bounds, which any thread's free reads without it. */
extern struct __attribute__((aligned(64))) hk_slots {
    size_t dirty;         /* bytes of free slots whose memory is there */
    uintptr_t space_next; /* the reserved range's first byte not in a slot */
    uintptr_t committed;  /* ... and the first not committed (COMMIT_STEP) */
    struct hk_slot_class classes[HK_NCLASSES];
} hk_slots;

void *hk_slot_carve(unsigned cls); /* a class with no free slot */

/* A sampled block of class cls: its slot, NULL if there is no room; then,
 * with the lock let go (a fresh slot's header may fault in), hk_slot_stamp
 * keeps site + 1 and the class with it and makes it a live slot. */
static inline void *hk_slot_alloc(unsigned cls)
{
    struct hk_slot_class *c = &hk_slots.classes[cls];
    struct slot_header *h = c->free;
    if (h == NULL)
        return hk_slot_carve(cls);
    c->free = (struct slot_header *)h->self;
    if (h->site != HK_SLOT_PURGED)
        hk_slots.dirty -= c->size;
    return h + 1;
}

/* p's header if p, in the slots' range, is a live slot's block, else NULL.
 * Below space_next the range is committed: the header can be read. */
static inline struct slot_header *hk_slot_live(const void *p)
{
    uintptr_t u = (uintptr_t)p, lo = atomic_load_explicit(&hk_slot_lo, memory_order_relaxed);
    if (u >= hk_slots.space_next || (u & 15) != 0 || u < lo + 16)
        return NULL;
    struct slot_header *h = (struct slot_header *)u - 1;
    return h->self == u ? h : NULL;
}

static inline void hk_slot_put(struct hk_slot_class *c, struct slot_header *h)
{
    if (h->site != HK_SLOT_PURGED)
        hk_slots.dirty += c->size;
    h->self = (uintptr_t)c->free;
    c->free = h;
}

/* h, a live slot's header (hk_slot_live), is free: the slot is free again,
 * or, when true is returned, once hk_slot_purge (which may run out of the
 * lock) and hk_slot_push have had it. */
static inline bool hk_slot_free(struct slot_header *h)
{
    struct hk_slot_class *c = &hk_slots.classes[h->cls];
    h->self = 0;
    h->site = 0;
    if (hk_slots.dirty + c->size > HK_SLOT_KEEP_DIRTY)
        return true;
    hk_slot_put(c, h);
    return false;
}

#endif
