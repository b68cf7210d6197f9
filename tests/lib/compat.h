/*
 * compat.h: functions hakmem exports that glibc 2.36 does not have.
 *
 * Declared weak, so one test binary links against glibc alone (and then
 * sees NULL here and skips those parts) and also picks up hakmem's
 * definitions when hakmem is preloaded or linked.
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

#ifdef __cplusplus
}
#endif

#endif
