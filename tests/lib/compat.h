/*
 * compat.h: functions hakmem exports that glibc 2.36 does not have, and
 * glibc's __libc_* names, which it exports but declares in no header.
 *
 * The former are declared weak, so one test binary links against glibc
 * alone (and then sees NULL here and skips those parts) and also picks up
 * hakmem's definitions when hakmem is preloaded or linked.
 */
#ifndef TESTS_COMPAT_H
#define TESTS_COMPAT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void free_sized(void *ptr, size_t size) __attribute__((weak));
void free_aligned_sized(void *ptr, size_t alignment, size_t size)
	__attribute__((weak));
void hak_collect(void) __attribute__((weak));
/* glibc has the __libc_* names below, but no __posix_memalign. */
int __posix_memalign(void **memptr, size_t alignment, size_t size)
	__attribute__((weak));

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void __libc_free(void *ptr);
void *__libc_memalign(size_t alignment, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);

#ifdef __cplusplus
}
#endif

#endif
