/* A bounded single-producer single-consumer queue of pointers: how the
 * multi-threaded workloads hand blocks to the thread that will free them. */
#ifndef BENCH_RING_H
#define BENCH_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define RING_SIZE 1024 /* a power of two */

/* head and tail on separate cache lines: the consumer writes head, the
 * producer tail.  Each side also keeps the other's index as it last read
 * it, on its own line, and reads the other's line again only when that
 * copy says the ring is empty (consumer) or full (producer): otherwise
 * every push and pop would move a line between the two cores, and the
 * figure would be the ring's, swinging fourfold with how the two threads
 * happen to interleave. */
struct ring {
    _Alignas(64) _Atomic size_t head; /* next slot to read */
    size_t tail_seen;                 /* the consumer's copy of tail */
    _Alignas(64) _Atomic size_t tail; /* next slot to write */
    size_t head_seen;                 /* the producer's copy of head */
    _Alignas(64) void *slot[RING_SIZE];
};

static inline bool ring_push(struct ring *r, void *p)
{
    size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (tail - r->head_seen == RING_SIZE) {
        r->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
        if (tail - r->head_seen == RING_SIZE)
            return false;
    }
    r->slot[tail & (RING_SIZE - 1)] = p;
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
    return true;
}

static inline void *ring_pop(struct ring *r)
{
    size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (head == r->tail_seen) {
        r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head == r->tail_seen)
            return NULL;
    }
    void *p = r->slot[head & (RING_SIZE - 1)];
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return p;
}

#endif
