/* A bounded single-producer single-consumer queue of pointers: how the
 * multi-threaded workloads hand blocks to the thread that will free them. */
#ifndef BENCH_RING_H
#define BENCH_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define RING_SIZE 1024 /* a power of two */

/* head and tail on separate cache lines: the producer writes one, the
 * consumer the other. */
struct ring {
    _Alignas(64) _Atomic size_t head; /* next slot to read */
    _Alignas(64) _Atomic size_t tail; /* next slot to write */
    _Alignas(64) void *slot[RING_SIZE];
};

static inline bool ring_push(struct ring *r, void *p)
{
    size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (tail - atomic_load_explicit(&r->head, memory_order_acquire) == RING_SIZE)
        return false;
    r->slot[tail & (RING_SIZE - 1)] = p;
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
    return true;
}

static inline void *ring_pop(struct ring *r)
{
    size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (head == atomic_load_explicit(&r->tail, memory_order_acquire))
        return NULL;
    void *p = r->slot[head & (RING_SIZE - 1)];
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return p;
}

#endif
