/*
 * A lock for the cold paths that take it once or twice per call: the heap
 * profiler's samples and the huge registry.  Uncontended, taking it is one
 * compare-and-swap and releasing it one exchange, where glibc's adaptive
 * mutex spent about 31 instructions on each (a profiled sample of a medium
 * block took and released four of them).  Contended, it spins briefly, then
 * waits in the kernel (futex): the state says whether anyone waits, so
 * that a release wakes only then.
 */
#ifndef HK_LOCK_H
#define HK_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* 0: free; 1: held; 2: held, and threads may be waiting. */
struct hk_lock {
    _Atomic uint32_t state;
};
#define HK_LOCK_INIT {0}

void hk_lock_wait(struct hk_lock *l); /* until taken; lock.c */
void hk_lock_wake(struct hk_lock *l); /* one waiter; lock.c */

static inline void hk_lock(struct hk_lock *l)
{
    uint32_t free_state = 0;
    if (__builtin_expect(!atomic_compare_exchange_strong_explicit(
                             &l->state, &free_state, 1, memory_order_acquire, memory_order_relaxed),
                         0))
        hk_lock_wait(l);
}

static inline bool hk_trylock(struct hk_lock *l)
{
    uint32_t free_state = 0;
    return atomic_compare_exchange_strong_explicit(&l->state, &free_state, 1, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void hk_unlock(struct hk_lock *l)
{
    if (__builtin_expect(atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2, 0))
        hk_lock_wake(l);
}

/* In a fork child, where the thread that held it is gone. */
static inline void hk_lock_reset(struct hk_lock *l)
{
    atomic_store_explicit(&l->state, 0, memory_order_relaxed);
}

#endif
