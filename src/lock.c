/* The contended half of hk_lock (lock.h). */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "lock.h"

/* About the length of the sections it guards, spun before sleeping: a
 * holder that runs on another CPU is usually done by then. */
#define SPINS 100

static inline void cpu_relax(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

HK_NOINLINE void hk_lock_wait(struct hk_lock *l)
{
    for (unsigned i = 0; i < SPINS; i++) {
        cpu_relax();
        uint32_t free_state = 0;
        if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_weak_explicit(&l->state, &free_state, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
    }
    /* From here on the lock is taken as 2: the thread does not know whether
     * others sleep, so its release must wake one. */
    int saved = errno; /* free and malloc's callers must see errno unchanged */
    while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
    errno = saved;
}

HK_NOINLINE void hk_lock_wake(struct hk_lock *l)
{
    int saved = errno;
    syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    errno = saved;
}
