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

#ifdef __cplusplus
}
#endif

#endif /* HAKMEM_H */
