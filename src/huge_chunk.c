/*
 * Fresh address space for huge blocks, carved one after another from a
 * chunk advised MADV_HUGEPAGE.  A block in a mapping of its own ends in a
 * part of a 2 MiB page that the mapping does not cover, which the kernel
 * backs with 4 KiB pages, a fault each (about 20 us on this project's VM);
 * carved side by side, a block's last 2 MiB page is also its neighbour's
 * first, and the whole block faults in by 2 MiB.  The chunk's uncarved
 * rest is address space, not memory: at most the one huge page a block's
 * end shares with it is resident ahead of use.
 *
 * A block of 2 MiB or more opens a chunk; smaller huge blocks (512 KiB up)
 * join one that is open, but open none: a program whose biggest buffers
 * are 1 MiB keeps them on 4 KiB pages and is not rounded up to 2 MiB.
 *
 * Where address space is limited (RLIMIT_AS) or every mapped byte is
 * charged (strict overcommit), the chunk's unused rest would cost what the
 * program may need elsewhere: there, as where huge pages are off
 * (HAKMEM_THP=0, lean) and for blocks above a quarter of a chunk, each
 * block has its own mapping (huge.c).
 */
#include <pthread.h>
#include <sys/resource.h>

#include "internal.h"

#define CHUNK_SIZE ((size_t)256 << 20) /* address space: only what blocks touch is memory */

static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t chunk_start, chunk_next, chunk_end; /* the uncarved rest: [next, end) */
static _Atomic int chunk_allowed = -1;  /* -1: not decided yet */
static _Atomic bool chunk_opened;       /* a chunk was mapped: never false again */

/* Decided at the first huge allocation (a limit set later leaves the
 * chunk mapped, as it does the arenas). */
static bool allowed(void)
{
    int a = atomic_load_explicit(&chunk_allowed, memory_order_relaxed);
    if (a < 0) {
        struct rlimit as;
        bool unlimited = getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY;
        a = unlimited && !hk_os_strict_overcommit() && hk_config.thp_from != 0;
        atomic_store_explicit(&chunk_allowed, a, memory_order_relaxed);
    }
    return a;
}

/* A new chunk in place of the current one, whose rest is unmapped. */
static bool new_chunk(void)
{
    size_t mapped;
    void *p = hk_os_map_aligned(CHUNK_SIZE, HK_OS_HUGE_PAGE, &mapped);
    if (p == NULL)
        return false;
    hk_os_huge_pages(p, CHUNK_SIZE, true);
    if (chunk_end > chunk_next)
        hk_os_unmap((void *)chunk_next, chunk_end - chunk_next);
    atomic_store_explicit(&chunk_opened, true, memory_order_relaxed);
    chunk_start = chunk_next = (uintptr_t)p;
    chunk_end = chunk_next + CHUNK_SIZE;
    return true;
}

bool hk_huge_chunk_serves(size_t len)
{
    /* The open chunk first: a large class without a page asks each time. */
    if (len < HK_OS_HUGE_PAGE && !atomic_load_explicit(&chunk_opened, memory_order_relaxed))
        return false;
    return len <= CHUNK_SIZE / 4 && allowed();
}

/* A fresh range of len bytes (a multiple of the OS page), zero; 0 if no
 * chunk could be mapped. */
uintptr_t hk_huge_chunk_carve(size_t len)
{
    uintptr_t addr = 0;
    pthread_mutex_lock(&chunk_lock);
    if (chunk_end - chunk_next >= len || new_chunk()) {
        addr = chunk_next;
        chunk_next += len;
    }
    pthread_mutex_unlock(&chunk_lock);
    return addr;
}

/* Where the uncarved rest begins (0: no chunk); *start: where the chunk
 * does (a range ending at the rest from below it is another mapping). */
uintptr_t hk_huge_chunk_rest(uintptr_t *start)
{
    pthread_mutex_lock(&chunk_lock);
    uintptr_t rest = chunk_next;
    *start = chunk_start;
    pthread_mutex_unlock(&chunk_lock);
    return rest;
}

/* [addr, addr + have) grown in place to len bytes if it ends where the
 * uncarved rest begins and the rest is long enough. */
bool hk_huge_chunk_extend(uintptr_t addr, size_t have, size_t len)
{
    bool done = false;
    pthread_mutex_lock(&chunk_lock);
    if (addr >= chunk_start && addr + have == chunk_next && len - have <= chunk_end - chunk_next) {
        chunk_next = addr + len;
        done = true;
    }
    pthread_mutex_unlock(&chunk_lock);
    return done;
}

/* The rest's first huge page may be resident (faulted in with the end of
 * the block carved before it): given back, by malloc_trim or when the huge
 * cache has emptied (once per carve: a program that keeps freeing a huge
 * block the cache cannot hold pays no system call for it).  The kernel
 * splits that huge page, so its given-back part could only fault back by
 * 4 KiB: carving goes on at the next one, and that part is unmapped.
 * (Purged and left mapped, it outlived the blocks around it as a mapping
 * of its own: a program that allocated, freed and trimmed a 3 MiB block in
 * a loop gained a mapping a cycle, and at the kernel's limit of 65,530
 * its malloc failed with ENOMEM.) */
void hk_huge_chunk_trim(void)
{
    static uintptr_t trimmed; /* chunk_next at the last trim: nothing new since */
    pthread_mutex_lock(&chunk_lock);
    uintptr_t edge = (chunk_next + HK_OS_HUGE_PAGE - 1) & ~(HK_OS_HUGE_PAGE - 1);
    if (edge > chunk_end)
        edge = chunk_end;
    if (edge > chunk_next && chunk_next != trimmed) {
        hk_os_unmap((void *)chunk_next, edge - chunk_next);
        chunk_next = edge;
    }
    trimmed = chunk_next;
    pthread_mutex_unlock(&chunk_lock);
}

void hk_huge_chunk_lock(void)
{
    pthread_mutex_lock(&chunk_lock);
}

void hk_huge_chunk_unlock(void)
{
    pthread_mutex_unlock(&chunk_lock);
}

void hk_huge_chunk_reset_lock(void)
{
    pthread_mutex_init(&chunk_lock, NULL);
}
