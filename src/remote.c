/*
 * Frees of blocks that belong to another thread's heap.
 *
 * A small block is first reused where it was freed: it goes on the freeing
 * thread's own list of its class (thread_lists.c), and that thread's next
 * malloc of the class takes it, still in its cache.  Sending it home
 * instead costs its cache line twice more (the owner reads it to drain it,
 * then writes it when it hands it out), which is where a server whose
 * requests move between threads spends its time.  The block stays counted
 * as out in its own page (it is: this thread holds it), so no page header
 * is written.  hk_free_slow validates such a block and pushes it; once the
 * thread's frees go to its lists, free pushes it itself.
 *
 * Only blocks of a cache line or more are kept (a smaller one shares its
 * line with blocks other threads may be writing), and only as many as the
 * list takes (keep_cap, size_class.c), or a thread that frees what others
 * allocate and allocates little would hoard them.  The rest go home, as
 * every other remote free does (medium and large blocks, those of a thread
 * without a heap):
 *
 * the freeing thread collects their addresses in messages of its own, for
 * up to four owner heaps at a time, and sends an owner's with one atomic
 * exchange onto its delayed stack.  The owner drains that stack on its next refill,
 * freeing each block as its own, and gives the messages back to the pool.
 * A list linked through the blocks, as it was, made the owner wait for
 * each block's line, which the freeing thread's core held, before it knew
 * the next block (prodcons spent 40% of its time there); the sender wrote
 * each block's line, too, and now writes none.  The freeing thread reads no page header (it validates
 * the pointer in the arena's class map), so the owner's cache lines stay
 * with the owner.
 */
#include <limits.h>
#include <string.h>

#include "internal.h"
#include "lock.h"
#include "stats.h"

/* Blocks collected per owner before one exchange sends them: a message's
 * worth.  A thread without a heap (bench prodcons' consumer, which only
 * frees) sent four messages at a time, for speed: prodcons ran 1.04 times
 * as fast as with one (9 paired rounds), but its blocks waited longer to go
 * home while the producer carved fresh ones, and the peak RSS was 2.74 MiB
 * against one message's 2.40 and Debian mimalloc's 2.47 (medians of 21
 * interleaved runs).  Threads with heaps held more memory with larger
 * batches too (xthread-90: +0.6 MiB at 512). */
#define REMOTE_BATCH HK_REMOTE_MSG_BLOCKS

/* The messages no one uses: a sender takes them, an owner gives back all
 * it drained at once.  They come from the OS 64 KiB at a time, handed out
 * in turn (so that only those used are touched), and stay.  At most 64 a
 * live thread (at least 256) are out at once: an owner that does not drain
 * (a thread waiting on others that free what it allocated) would otherwise
 * hold 8 bytes of messages for every block sent to it (2 MiB more on
 * working-set, whose worker frees the 256 K blocks the main thread made);
 * past the limit a block is sent as itself, linked through its first
 * words, which costs no memory.  The limit grows with the threads because
 * each holds messages in flight (its stash, its batches, those waiting for
 * their owner's next refill): with a fixed 256, 16 threads freeing each
 * other's blocks (bench xthread) were always at it.  A sender at the limit
 * is refused without the lock: every remote free of such a thread asks
 * again, and on 16 cores the lock they all took made xthread 4-7 times
 * slower than every peer.
 *
 * A thread takes them MSG_TAKE at a time, and keeps up to MSG_STASH of
 * those it drained for its own sends: a thread freeing blocks of many
 * owners sends a message for every few blocks (its batches hold four
 * owners), and taking them one at a time under the lock, 16 such threads
 * on 16 cores spent 11-17 s in the kernel's futex calls for 1-2 s of run
 * (xstress, xthread, prodcons).  The pool is a stack of chains of up to
 * MSG_TAKE messages (linked by next; the chains through their first
 * message's blocks[0], which holds the chain's last message in blocks[1]
 * and its length in count), so that the lock is held for a few stores
 * whatever the number moved: walking messages under it would wait for each
 * one's line, last written on the core that drained it. */
#define MSG_CHUNK ((size_t)64 << 10)
#define MSG_LIMIT_MIN 256   /* 128 KiB of messages */
#define MSG_PER_THREAD 64   /* 32 KiB a thread */
#define MSG_TAKE 16
#define MSG_STASH 32
#define MSG_PARK 32
static struct hk_lock msg_lock = HK_LOCK_INIT;
static struct hk_remote_msg *msg_pool; /* the first chain */
static struct hk_remote_msg *msg_fresh, *msg_fresh_end; /* the chunk's untouched part */
static _Atomic unsigned msgs_out; /* taken or stashed, not in the pool */
static unsigned msgs_made; /* carved from the chunks so far */

#define CHAIN_NEXT(m) ((struct hk_remote_msg *)(m)->blocks[0])
#define CHAIN_LAST(m) ((struct hk_remote_msg *)(m)->blocks[1])

/* A chain of messages from the pool (or fresh) onto the thread's stash;
 * false when none could be had. */
static bool stash_fill(struct hk_tls *t)
{
    unsigned limit = MSG_PER_THREAD * hk_heap_threads_live();
    if (limit < MSG_LIMIT_MIN)
        limit = MSG_LIMIT_MIN;
    if (atomic_load_explicit(&msgs_out, memory_order_relaxed) >= limit)
        return false;
    struct hk_remote_msg *chain = NULL;
    unsigned n = 0;
    hk_lock(&msg_lock);
    if (msg_pool != NULL) {
        chain = msg_pool;
        msg_pool = CHAIN_NEXT(chain);
        n = chain->count;
    } else {
        if (msg_fresh == msg_fresh_end && (msg_fresh = hk_os_map(MSG_CHUNK)) != NULL) {
            hk_stat_add(&hk_os_stats.reserved_bytes, MSG_CHUNK);
            hk_stat_add(&hk_os_stats.committed_bytes, MSG_CHUNK);
            msg_fresh_end = msg_fresh + MSG_CHUNK / sizeof *msg_fresh;
        }
        if (msg_fresh != NULL) {
            chain = msg_fresh;
            n = (unsigned)(msg_fresh_end - msg_fresh) < MSG_TAKE
                    ? (unsigned)(msg_fresh_end - msg_fresh) : MSG_TAKE;
            msg_fresh += n;
            msgs_made += n;
        } else {
            msg_fresh_end = NULL;
        }
    }
    atomic_fetch_add_explicit(&msgs_out, n, memory_order_relaxed);
    hk_unlock(&msg_lock);
    if (chain == NULL)
        return false;
    struct hk_remote_msg *last;
    if (chain->count == 0) { /* fresh, side by side */
        for (unsigned i = 0; i + 1 < n; i++)
            chain[i].next = &chain[i + 1];
        last = &chain[n - 1];
    } else {
        HK_ASSERT(n <= MSG_TAKE);
        last = CHAIN_LAST(chain);
    }
    last->next = t->msg_stash;
    t->msg_stash = chain;
    t->msg_stash_n += n;
    return true;
}

/* The chains the owner parked for its senders, onto the thread's stash;
 * false when there were none. */
static bool stash_from_owner(struct hk_tls *t, struct hk_heap *owner)
{
    if (atomic_load_explicit(&owner->msgs_back, memory_order_relaxed) == NULL)
        return false;
    struct hk_remote_msg *chain =
        atomic_exchange_explicit(&owner->msgs_back, NULL, memory_order_acquire);
    if (chain == NULL)
        return false;
    while (chain != NULL) {
        struct hk_remote_msg *next = CHAIN_NEXT(chain);
        CHAIN_LAST(chain)->next = t->msg_stash;
        t->msg_stash = chain;
        t->msg_stash_n += chain->count;
        chain = next;
    }
    return true;
}

static struct hk_remote_msg *msg_take(struct hk_heap *owner)
{
    struct hk_tls *t = &hk_tls;
    if (t->msg_stash == NULL && !stash_from_owner(t, owner) && !stash_fill(t))
        return NULL; /* the block goes as itself */
    struct hk_remote_msg *m = t->msg_stash;
    t->msg_stash = m->next;
    t->msg_stash_n--;
    m->count = 0;
    return m;
}

/* Up to MSG_TAKE messages from *first on, made a chain (its last's next
 * left as it was); *first moves past them.  Returns the chain's length. */
static unsigned chain_cut(struct hk_remote_msg **first)
{
    struct hk_remote_msg *chain = *first, *m = chain;
    unsigned len = 1;
    for (; len < MSG_TAKE && m->next != NULL; len++)
        m = m->next;
    *first = m->next;
    chain->count = len;
    chain->blocks[1] = m;
    return len;
}

/* A stack of chains, as the pool and a heap's parked messages are: the
 * first chain in *top, the last in *bottom.  Messages from *first on (a
 * list linked by next) are cut into chains, each ended by NULL, until at
 * least `most` are taken or the list ends, before any lock or exchange;
 * *first moves past them.  Returns how many were taken. */
static unsigned chains_stack(struct hk_remote_msg **first, unsigned most,
                             struct hk_remote_msg **top, struct hk_remote_msg **bottom)
{
    struct hk_remote_msg *chains = NULL;
    unsigned n = 0;
    while (*first != NULL && n < most) {
        struct hk_remote_msg *chain = *first;
        n += chain_cut(first);
        CHAIN_LAST(chain)->next = NULL;
        chain->blocks[0] = chains;
        if (chains == NULL)
            *bottom = chain;
        chains = chain;
    }
    *top = chains;
    return n;
}

/* The messages in the stack of chains from top; its last chain in *bottom
 * where bottom is not NULL. */
static unsigned chains_count(struct hk_remote_msg *top, struct hk_remote_msg **bottom)
{
    unsigned n = 0;
    for (struct hk_remote_msg *c = top; c != NULL; c = CHAIN_NEXT(c)) {
        n += c->count;
        if (bottom != NULL)
            *bottom = c;
    }
    return n;
}

/* A stack of chains of n messages onto the pool's: a few stores under the
 * lock, whatever n is. */
static void pool_push(struct hk_remote_msg *top, struct hk_remote_msg *bottom, unsigned n)
{
    atomic_fetch_sub_explicit(&msgs_out, n, memory_order_relaxed);
    hk_lock(&msg_lock);
    bottom->blocks[0] = msg_pool;
    msg_pool = top;
    hk_unlock(&msg_lock);
}

/* The messages from first on (linked by next, the last's NULL) back to
 * the pool. */
static void pool_put(struct hk_remote_msg *first)
{
    struct hk_remote_msg *top, *bottom;
    unsigned n = chains_stack(&first, UINT_MAX, &top, &bottom);
    if (n != 0)
        pool_push(top, bottom, n);
}

/* Chains of the messages from *first on onto the owner's stack for its
 * senders, up to MSG_PARK (and the rest of a chain); *first moves past
 * them.  Only the owner parks and its senders only take all there is, so
 * that the owner knows how many may still be there: as many as it parked
 * since it last saw none. */
static void park_for_senders(struct hk_heap *h, struct hk_remote_msg **first)
{
    struct hk_remote_msg *old = atomic_load_explicit(&h->msgs_back, memory_order_relaxed);
    if (old == NULL)
        h->msgs_parked = 0;
    if (h->msgs_parked >= MSG_PARK)
        return;
    struct hk_remote_msg *top, *bottom;
    unsigned n = chains_stack(first, MSG_PARK - h->msgs_parked, &top, &bottom);
    if (n == 0)
        return;
    h->msgs_parked += n;
    do
        bottom->blocks[0] = old;
    while (!atomic_compare_exchange_weak_explicit(&h->msgs_back, &old, top,
                                                  memory_order_release, memory_order_relaxed));
}

void hk_remote_msgs_release(struct hk_heap *park, struct hk_remote_msg *first)
{
    struct hk_tls *t = &hk_tls;
    while (first != NULL && t->msg_stash_n < MSG_STASH) {
        struct hk_remote_msg *next = first->next;
        first->next = t->msg_stash;
        t->msg_stash = first;
        t->msg_stash_n++;
        first = next;
    }
    if (first != NULL && park != NULL)
        park_for_senders(park, &first);
    if (first != NULL)
        pool_put(first);
}

void hk_remote_stash_release(struct hk_heap *h)
{
    struct hk_tls *t = &hk_tls;
    if (t->msg_stash != NULL) {
        pool_put(t->msg_stash);
        t->msg_stash = NULL;
        t->msg_stash_n = 0;
    }
    struct hk_remote_msg *top =
        h != NULL ? atomic_exchange_explicit(&h->msgs_back, NULL, memory_order_acquire) : NULL;
    if (top != NULL) {
        struct hk_remote_msg *bottom;
        unsigned n = chains_count(top, &bottom);
        pool_push(top, bottom, n);
    }
}

void hk_remote_msg_counts(unsigned *made, unsigned *out)
{
    hk_lock(&msg_lock);
    *made = msgs_made;
    *out = atomic_load_explicit(&msgs_out, memory_order_relaxed);
    hk_unlock(&msg_lock);
}

void hk_remote_fork_lock(void)
{
    hk_lock(&msg_lock);
}

/* Messages in a list linked by next; blocks sent as themselves are not. */
static unsigned msgs_in(const struct hk_remote_msg *m)
{
    unsigned n = 0;
    for (; m != NULL; m = m->next)
        n += m->count != 0;
    return n;
}

/* In a fork child, the messages the other threads kept or were filling are
 * gone with them: out of the pool are only those this thread holds and
 * those on their way to a heap or parked in one. */
static void recount_out_in_child(void)
{
    struct hk_tls *t = &hk_tls;
    unsigned out = t->msg_stash_n;
    for (unsigned i = 0; i < HK_REMOTE_OWNERS; i++)
        out += msgs_in(t->remote[i].msg);
    for (struct hk_heap *h = hk_heaps_first(); h != NULL; h = h->next) {
        out += msgs_in(atomic_load_explicit(&h->delayed, memory_order_relaxed));
        out += chains_count(atomic_load_explicit(&h->msgs_back, memory_order_relaxed), NULL);
    }
    atomic_store_explicit(&msgs_out, out, memory_order_relaxed);
}

void hk_remote_fork_unlock(bool child)
{
    if (child) {
        hk_lock_reset(&msg_lock);
        recount_out_in_child();
    } else {
        hk_unlock(&msg_lock);
    }
}

void hk_remote_send(struct hk_heap *h, struct hk_remote_msg *first, struct hk_remote_msg *last)
{
    struct hk_remote_msg *old = atomic_load_explicit(&h->delayed, memory_order_relaxed);
    do
        last->next = old;
    while (!atomic_compare_exchange_weak_explicit(&h->delayed, &old, first,
                                                  memory_order_release, memory_order_relaxed));
}

static void batch_send(struct hk_remote_batch *b)
{
    if (b->msg == NULL)
        return;
    hk_remote_send(b->heap, b->msg, b->last);
    b->msg = b->last = NULL;
    b->count = 0;
}

void hk_remote_flush(void)
{
    for (unsigned i = 0; i < HK_REMOTE_OWNERS; i++)
        batch_send(&hk_tls.remote[i]);
}

/* The thread's batch for owner, moved to the front (the batches are kept
 * most recently used first): its own, or the least recently used one's,
 * sent and taken over. */
static struct hk_remote_batch *batch_front(struct hk_tls *t, struct hk_heap *owner)
{
    if (t->remote[0].heap == owner)
        return &t->remote[0];
    unsigned i = 1;
    while (i < HK_REMOTE_OWNERS - 1 && t->remote[i].heap != owner)
        i++;
    struct hk_remote_batch b = t->remote[i];
    if (b.heap != owner) {
        batch_send(&t->remote[i]);
        b = (struct hk_remote_batch){.heap = owner};
    }
    memmove(&t->remote[1], &t->remote[0], i * sizeof t->remote[0]);
    t->remote[0] = b;
    return &t->remote[0];
}

/* hk_remote_free where p does not just join the front batch's message. */
static HK_NOINLINE void remote_free_slow(struct hk_tls *t, struct hk_heap *owner, void *p)
{
    struct hk_remote_batch *b = batch_front(t, owner);
    struct hk_remote_msg *m = b->msg;
    if (m == NULL && t->heap == NULL)
        hk_heap_watch_exit(); /* so that the blocks go out at exit */
    /* A message of count 0 is a block sent as itself: nothing to add to. */
    if (m == NULL || m->count == 0 || m->count == HK_REMOTE_MSG_BLOCKS) {
        struct hk_remote_msg *fresh = msg_take(owner);
        if (fresh == NULL) {
            /* Over the limit, or out of memory: the block goes as itself. */
            fresh = p;
            fresh->count = 0;
        }
        fresh->next = m;
        b->msg = fresh;
        if (m == NULL)
            b->last = fresh;
        m = fresh;
    }
    if (m != p)
        m->blocks[m->count++] = p;
    if (++b->count >= REMOTE_BATCH)
        batch_send(b);
}

/* Mostly p joins the message the thread fills for owner, its most recent
 * owner, with room left and the batch not due: that is done here, in 19
 * instructions with no stack frame; the rest, which needs one, out of line. */
void hk_remote_free(struct hk_heap *owner, void *p)
{
    struct hk_tls *t = &hk_tls;
    struct hk_remote_batch *b = &t->remote[0];
    struct hk_remote_msg *m = b->msg;
    HK_SECURE_SENT(p);
    if (HK_LIKELY(b->heap == owner && m != NULL && m->count - 1u < HK_REMOTE_MSG_BLOCKS - 1u &&
                  b->count + 1 < REMOTE_BATCH)) {
        m->blocks[m->count++] = p;
        b->count++;
        return;
    }
    remote_free_slow(t, owner, p);
}

