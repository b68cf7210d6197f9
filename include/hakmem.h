/*
 * hakmem: a fast general-purpose memory allocator.
 *
 * Linking libhakmem (or preloading libhakmem.so) replaces malloc, free and the
 * rest of the malloc family for the whole program.  The functions below are
 * the same entry points under hakmem's own names, for programs that want to
 * call hakmem explicitly; they behave exactly as their C library namesakes.
 */
#ifndef HAKMEM_H
#define HAKMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HAKMEM_VERSION_MAJOR 0
#define HAKMEM_VERSION_MINOR 1
#define HAKMEM_VERSION_PATCH 0
#define HAKMEM_VERSION_STRING "0.1.0"

/* The malloc family.  Every pointer is 16-byte aligned; failures return NULL
 * and set errno to ENOMEM (or EINVAL for a bad alignment). */
void *hak_malloc(size_t size);
void *hak_calloc(size_t count, size_t size);
void *hak_realloc(void *ptr, size_t size);
void *hak_reallocarray(void *ptr, size_t count, size_t size);
void hak_free(void *ptr);
void hak_free_sized(void *ptr, size_t size);
void hak_free_aligned_sized(void *ptr, size_t alignment, size_t size);
int hak_posix_memalign(void **out, size_t alignment, size_t size);
void *hak_aligned_alloc(size_t alignment, size_t size);
void *hak_memalign(size_t alignment, size_t size);
void *hak_valloc(size_t size);
void *hak_pvalloc(size_t size);
size_t hak_malloc_usable_size(const void *ptr);

/* Return to the operating system every free page that can be returned now,
 * without waiting for the purge delay.  Safe to call from any thread. */
void hak_collect(void);

/* glibc's malloc_trim under hakmem's name: hak_collect(), then returns 1. */
int hak_malloc_trim(size_t pad);

/* Statistics.  Counting costs nothing on malloc's and free's fast paths:
 * counters move on slow paths only, and per-class figures are derived from
 * the pages when asked for.  HAKMEM_STATS=1 prints the table at exit (to
 * stderr), HAKMEM_STATS=json prints JSON instead. */
#define HAK_STATS_CLASSES 101 /* rows; classes in use have block_size != 0 */

struct hak_class_stats {
    size_t block_size;
    uint64_t mallocs;   /* blocks the thread caches took (see README) */
    uint64_t frees;     /* blocks given back */
    uint64_t live;      /* blocks in use now */
    uint64_t pages;     /* pages holding this class now */
    uint64_t refills;   /* slow-path refills of the thread caches */
};

struct hak_stats {
    uint64_t heaps;            /* thread heaps ever created */
    uint64_t arenas;           /* 4 GiB arenas reserved */
    uint64_t reserved_bytes;   /* address space reserved */
    uint64_t committed_bytes;  /* address space made usable */
    uint64_t resident_bytes;   /* RSS of the process, from /proc */
    uint64_t peak_resident_bytes; /* peak RSS of the process */
    uint64_t purged_bytes;     /* memory given back to the OS so far */
    uint64_t syscalls;         /* mmap, munmap, mprotect, madvise, mremap */
    uint64_t huge_allocs;      /* huge blocks mapped */
    uint64_t huge_cache_hits;  /* huge blocks served from the cache */
    uint64_t huge_live_bytes;  /* bytes in live huge blocks */
    uint64_t small_live_bytes; /* bytes in live blocks of the size classes */
    struct hak_class_stats classes[HAK_STATS_CLASSES];
};

/* Fill *out.  Exact when the other threads are not allocating; while they
 * are, figures of their heaps may lag by a few refills. */
void hak_stats_get(struct hak_stats *out);

/* Print the statistics table to file descriptor fd (2 = stderr); json
 * selects JSON instead of the readable table. */
void hak_stats_print(int fd, bool json);

/* The heap profiler (HAKMEM_HEAP_PROFILE=<path prefix>, see hakmem(3)):
 * write the sampled live and allocated bytes by call stack now, to
 * <prefix>.<pid>.<n>.heap.  0 on success; -1 with errno EINVAL when the
 * profiler is off, EIO when the file could not be written. */
int hak_heap_profile_dump(void);

#ifdef __cplusplus
}
#endif

#endif /* HAKMEM_H */
