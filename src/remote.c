/*
 * Frees of blocks that belong to another thread's heap.  They are not
 * pushed one by one onto shared memory: the freeing thread collects them in
 * a small list of its own, per owner heap, and sends the whole list with one
 * atomic exchange onto the owner's delayed list.  The owner drains that list
 * on its next refill, freeing each block as its own.  The freeing thread only
 * reads the page header (to validate the pointer), so the owner's cache lines
 * stay with the owner.
 */
#include "internal.h"

#define REMOTE_BATCH 64

void hk_remote_flush(void)
{
    struct hk_tls *t = &hk_tls;
    if (t->remote_head == NULL)
        return;
    struct hk_heap *h = t->remote_heap;
    void *old = atomic_load_explicit(&h->delayed, memory_order_relaxed);
    do
        hk_set_next(t->remote_tail, old);
    while (!atomic_compare_exchange_weak_explicit(&h->delayed, &old, t->remote_head,
                                                  memory_order_release, memory_order_relaxed));
    t->remote_head = t->remote_tail = NULL;
    t->remote_count = 0;
}

void hk_remote_free(struct hk_heap *owner, void *p)
{
    struct hk_tls *t = &hk_tls;
    if (owner != t->remote_heap) {
        hk_remote_flush();
        if (t->remote_heap == NULL && t->heap == NULL)
            hk_heap_watch_exit(); /* so that the last blocks go out at exit */
        t->remote_heap = owner;
    }
    if (t->remote_head == NULL)
        t->remote_tail = p;
    hk_set_next(p, t->remote_head);
    t->remote_head = p;
    if (++t->remote_count >= REMOTE_BATCH)
        hk_remote_flush();
}
