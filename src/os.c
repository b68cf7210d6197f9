/*
 * The operating system behind one small layer: reserving address space,
 * committing it, giving memory back, and the clock used for purge delays.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* System calls made here, for the statistics (a relaxed add next to a
 * system call costs nothing that matters). */
static _Atomic uint64_t syscalls;

static void count_syscall(void)
{
    atomic_fetch_add_explicit(&syscalls, 1, memory_order_relaxed);
}

uint64_t hk_os_syscalls(void)
{
    return atomic_load_explicit(&syscalls, memory_order_relaxed);
}

/* Address space only: no memory and no commit charge until hk_os_commit. */
void *hk_os_reserve_aligned(size_t size, size_t align)
{
    size_t span = size + align;
    char *p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    count_syscall();
    char *start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    if (start > p)
        hk_os_unmap(p, (size_t)(start - p));
    if (start + size < p + span)
        hk_os_unmap(start + size, (size_t)(p + span - (start + size)));
    return start;
}

/* Memory at exactly addr, or false if any of it is taken (errno EEXIST)
 * or there is no room (ENOMEM). */
bool hk_os_map_at(void *addr, size_t size)
{
    count_syscall();
    void *p = mmap(addr, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        return false;
    if (p != addr) { /* a kernel older than 4.17 took the address as a hint */
        hk_os_unmap(p, size);
        errno = EEXIST;
        return false;
    }
    return true;
}

bool hk_os_commit(void *p, size_t size)
{
    count_syscall();
    return mprotect(p, size, PROT_READ | PROT_WRITE) == 0;
}

/* Make a range inaccessible (a guard page, a quarantined block: guard.c);
 * hk_os_commit makes it usable again. */
bool hk_os_protect(void *p, size_t size)
{
    count_syscall();
    return mprotect(p, size, PROT_NONE) == 0;
}

/* Ask for transparent huge pages for a range, or that none be made there
 * again (khugepaged would fill purged holes back in).  Only advice: where
 * the kernel has THP off, nothing changes. */
void hk_os_huge_pages(void *p, size_t size, bool on)
{
    count_syscall();
    madvise(p, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

/* The memory goes back to the OS; the range stays usable and reads as zero. */
void hk_os_purge(void *p, size_t size)
{
    count_syscall();
    madvise(p, size, MADV_DONTNEED);
}

void *hk_os_map(size_t size)
{
    count_syscall();
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* A mapping of at least size bytes starting at a multiple of align (a power
 * of two above the OS page size); *mapped receives its length. */
void *hk_os_map_aligned(size_t size, size_t align, size_t *mapped)
{
    if (align <= HK_OS_PAGE) {
        *mapped = size;
        return hk_os_map(size);
    }
    if (size + align < size)
        return NULL;
    char *p = hk_os_map(size + align);
    if (p == NULL)
        return NULL;
    char *start = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    if (start > p)
        hk_os_unmap(p, (size_t)(start - p));
    size_t tail = (size_t)(p + size + align - (start + size));
    if (tail > 0)
        hk_os_unmap(start + size, tail);
    *mapped = size;
    return start;
}

void hk_os_unmap(void *p, size_t size)
{
    count_syscall();
    munmap(p, size);
}

/* Move or grow a mapping without copying: the kernel moves its pages. */
void *hk_os_remap(void *p, size_t old_size, size_t new_size)
{
    count_syscall();
    void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
}

/* Grow [p, p + old_size) to new_size: in place if the kernel can, else
 * moved to a new range that starts at a multiple of align (a mapping made
 * there first, which mremap replaces). */
void *hk_os_remap_aligned(void *p, size_t old_size, size_t new_size, size_t align)
{
    count_syscall();
    void *q = mremap(p, old_size, new_size, 0); /* in place keeps the alignment */
    if (q != MAP_FAILED)
        return q;
    size_t mapped;
    void *dst = hk_os_map_aligned(new_size, align, &mapped);
    if (dst == NULL)
        return NULL;
    count_syscall();
    q = mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    if (q == MAP_FAILED) {
        hk_os_unmap(dst, new_size);
        return NULL;
    }
    return q;
}

/* vm.overcommit_memory is 2 (strict accounting: every writable private
 * byte mapped is charged against a limit), as read at start-up. */
static bool strict_overcommit;

void hk_os_init(void)
{
    int saved = errno;
    char c = '0';
    int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &c, 1) != 1)
            c = '0';
        close(fd);
    }
    strict_overcommit = c == '2';
    errno = saved;
}

bool hk_os_strict_overcommit(void)
{
    return strict_overcommit;
}

uint64_t hk_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
