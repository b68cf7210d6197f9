/*
 * Frees of blocks that belong to another thread's heap.
 *
 * A small block is first reused where it was freed: it goes on the freeing
 * thread's own TLS list of its class, and that thread's next malloc of the
 * class takes it, still in its cache.  Sending it home instead costs its
 * cache line twice more (the owner reads it to drain it, then writes it when
 * it hands it out), which is where a server whose requests move between
 * threads spends its time.  The block stays counted as out in its own page
 * (it is: this thread holds it), so no page header is written.
 *
 * Only blocks of a cache line or more are kept (a smaller one shares its
 * line with blocks other threads may be writing), and only so many per class
 * (foreign_cap, size_class.c), or a thread that frees what others allocate
 * and allocates little would hoard them.
 * Since a class's list gets the current page's blocks only when it runs
 * empty, the other heaps' blocks on it always come first: counting them
 * walks just those.  When the bound is reached and they still fill half of
 * it, they go home, as every other remote free does (medium and large
 * blocks, smaller ones, those of a thread without a heap):
 *
 * the freeing thread collects them in a small list of its own, per owner
 * heap, and sends the whole list with one atomic exchange onto the owner's
 * delayed list.  The owner drains that list on its next refill, freeing each
 * block as its own.  The freeing thread reads no page header (it validates
 * the pointer in the arena's class map), so the owner's cache lines stay
 * with the owner.
 */
#include "internal.h"
#include "stats.h"

/* Blocks collected per owner before one exchange sends them.  A thread
 * without a heap never refills, where others also send what they hold, so
 * it collects more: a consumer thread that only frees (bench prodcons) ran
 * 1.5 times as fast with 512, holding 0.2 MiB more; threads with heaps
 * held more memory with larger batches (xthread-90: +0.6 MiB at 512). */
#define REMOTE_BATCH 64
#define REMOTE_BATCH_NO_HEAP 512

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
    if (++t->remote_count >= (t->heap != NULL ? REMOTE_BATCH : REMOTE_BATCH_NO_HEAP))
        hk_remote_flush();
}

/* Send the other heaps' blocks at the head of class cls's TLS list home. */
void hk_foreign_send(struct hk_heap *h, unsigned cls)
{
    struct hk_tls *t = &hk_tls;
    void *b = t->free[cls];
    uint64_t n = 0;
    while (b != NULL && hk_foreign_block(h, cls, b)) {
        void *next = hk_next(b);
        hk_remote_free(hk_heap_of_block(b), b);
        b = next;
        n++;
    }
    t->free[cls] = b;
    t->foreign[cls] = 0;
    hk_count(&h->returned[cls], n);
}

/* Free p, a small block of class cls of another heap than h, the calling
 * thread's: keep it for this thread's mallocs. */
void hk_foreign_free(struct hk_heap *h, unsigned cls, void *p)
{
    struct hk_tls *t = &hk_tls;
    unsigned cap = hk_classes[cls].foreign_cap;
    if (HK_UNLIKELY(t->foreign[cls] >= cap)) {
        /* Count those still there: mallocs may have taken some. */
        unsigned n = 0;
        for (void *b = t->free[cls]; b != NULL && hk_foreign_block(h, cls, b); b = hk_next(b))
            n++;
        if (n * 2 >= cap)
            hk_foreign_send(h, cls);
        else
            t->foreign[cls] = (uint16_t)n;
    }
    hk_set_next(p, t->free[cls]);
    t->free[cls] = p;
    t->foreign[cls]++;
    hk_count(&h->supplied[cls], 1);
}
