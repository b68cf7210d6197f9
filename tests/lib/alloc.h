/*
 * alloc.h: the allocation calls of the stress tests and the fuzzer.
 *
 * The same test source is built two ways: against the C names (malloc...),
 * which LD_PRELOAD or -lhakmem route to hakmem, and with -DTEST_HAK_NAMES
 * against hakmem's own hak_* names, for the sanitizer builds of the
 * allocator that do not replace malloc.
 */
#ifndef TESTS_ALLOC_H
#define TESTS_ALLOC_H

#include <stddef.h>

#ifdef TEST_HAK_NAMES
#include "hakmem.h"
#define t_malloc hak_malloc
#define t_calloc hak_calloc
#define t_realloc hak_realloc
#define t_reallocarray hak_reallocarray
#define t_free hak_free
#define t_free_sized hak_free_sized
#define t_free_aligned_sized hak_free_aligned_sized
#define t_posix_memalign hak_posix_memalign
#define t_aligned_alloc hak_aligned_alloc
#define t_memalign hak_memalign
#define t_usable_size hak_malloc_usable_size
#define t_collect hak_collect
#else
#include <malloc.h>
#include <stdlib.h>
#include "compat.h"
#define t_malloc malloc
#define t_calloc calloc
#define t_realloc realloc
#define t_reallocarray reallocarray
#define t_free free
#define t_posix_memalign posix_memalign
#define t_aligned_alloc aligned_alloc
#define t_memalign memalign
#define t_usable_size malloc_usable_size
/* free_sized and hak_collect are missing from glibc: fall back there. */
static inline void t_free_sized(void *p, size_t n)
{
	if (free_sized)
		free_sized(p, n);
	else
		free(p);
}
static inline void t_free_aligned_sized(void *p, size_t a, size_t n)
{
	if (free_aligned_sized)
		free_aligned_sized(p, a, n);
	else
		free(p);
}
static inline void t_collect(void)
{
	if (hak_collect)
		hak_collect();
	else
		malloc_trim(0);
}
#endif

#endif
