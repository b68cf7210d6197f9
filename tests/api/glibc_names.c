/*
 * glibc_names.c: glibc's other names for the malloc family (__libc_malloc,
 * __libc_calloc, __libc_realloc, __libc_free, __libc_memalign,
 * __libc_valloc, __libc_pvalloc, and __posix_memalign, which glibc itself
 * does not export) are the same allocator as the standard names.  A block
 * allocated under either name is resized and freed under either, in every
 * combination, with its function's alignment, size and zeroing.  Before
 * hakmem provided them, a block of glibc's __libc_malloc reached hakmem's
 * free as a foreign pointer and the program died.
 */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "compat.h"
#include "pattern.h"

#define PAGE 4096
#define ALIGNED(p, a) (((uintptr_t)(p) & ((a) - 1)) == 0)

enum fn { MALLOC, CALLOC, REALLOC_NULL, MEMALIGN, VALLOC, PVALLOC, POSIX_MEMALIGN, NFNS };
static const char *const fn_names[NFNS][2] = {
	{ "malloc", "__libc_malloc" },     { "calloc", "__libc_calloc" },
	{ "realloc(NULL)", "__libc_realloc(NULL)" },
	{ "memalign", "__libc_memalign" }, { "valloc", "__libc_valloc" },
	{ "pvalloc", "__libc_pvalloc" },   { "posix_memalign", "__posix_memalign" },
};

/* Sizes in each kind of block: small, medium, large, huge. */
static const size_t sizes[] = { 1, 100, 4000, 20000, 300000, (size_t)2 << 20 };
static const size_t aligns[] = { 64, PAGE, (size_t)1 << 20 };

/* What the block's function promises. */
static size_t alignment_of(enum fn f, size_t align)
{
	return f == MEMALIGN || f == POSIX_MEMALIGN ? align : f == VALLOC || f == PVALLOC ? PAGE : 16;
}

static size_t usable_at_least(enum fn f, size_t n)
{
	return f == PVALLOC ? (n + PAGE - 1) & ~(size_t)(PAGE - 1) : n;
}

static void *allocate(enum fn f, bool libc, size_t n, size_t align)
{
	void *p = NULL;
	switch (f) {
	case MALLOC:
		return libc ? __libc_malloc(n) : malloc(n);
	case CALLOC:
		return libc ? __libc_calloc(n, 1) : calloc(n, 1);
	case REALLOC_NULL:
		return libc ? __libc_realloc(NULL, n) : realloc(NULL, n);
	case MEMALIGN:
		return libc ? __libc_memalign(align, n) : memalign(align, n);
	case VALLOC:
		return libc ? __libc_valloc(n) : valloc(n);
	case PVALLOC:
		return libc ? __libc_pvalloc(n) : pvalloc(n);
	case POSIX_MEMALIGN:
		if ((libc ? __posix_memalign(&p, align, n) : posix_memalign(&p, align, n)) != 0)
			return NULL;
		return p;
	default:
		return NULL;
	}
}

/* A block of n bytes, used and freed, so that calloc gets memory that
 * held something (a block of the same size is reused first). */
static void dirty_memory(size_t n)
{
	void *p = malloc(n);
	if (p != NULL) {
		memset(p, 0xa5, n);
		free(p);
	}
}

/* Block by f under one name, resized (0: not, 1: realloc, 2:
 * __libc_realloc) and freed (free or __libc_free). */
static void one_combination(enum fn f, bool libc, size_t n, size_t align, int resize,
			    bool libc_free)
{
	const char *name = fn_names[f][libc];
	if (f == CALLOC)
		dirty_memory(n);
	void *p = allocate(f, libc, n, align);
	if (!CHECKF(p != NULL, "%s(%zu, align %zu) = NULL", name, n, align))
		return;
	size_t want = alignment_of(f, align);
	CHECKF(ALIGNED(p, want), "%s(%zu, align %zu) = %p, not %zu-aligned", name, n, align, p,
	       want);
	CHECKF(malloc_usable_size(p) >= usable_at_least(f, n), "%s(%zu): usable size %zu", name,
	       n, malloc_usable_size(p));
	if (f == CALLOC)
		CHECKF(find_nonzero(p, n) == (size_t)-1, "%s(%zu, 1): byte %zu is not zero", name, n,
		       find_nonzero(p, n));
	uint64_t seed = n * 131 + (uint64_t)f * 7 + (uint64_t)libc;
	pattern_fill(p, n, seed);
	if (resize != 0) {
		size_t m = 2 * n + 100;
		void *q = resize == 1 ? realloc(p, m) : __libc_realloc(p, m);
		if (CHECKF(q != NULL, "%s of a %s block: NULL",
			   resize == 1 ? "realloc" : "__libc_realloc", name)) {
			p = q;
			CHECKF(pattern_ok(p, n, seed) && malloc_usable_size(p) >= m,
			       "%s block of %zu grown to %zu by %s: contents or size lost", name, n,
			       m, resize == 1 ? "realloc" : "__libc_realloc");
		}
	}
	if (libc_free)
		__libc_free(p);
	else
		free(p);
}

static void test_every_combination(void)
{
	for (int f = 0; f < NFNS; f++) {
		for (int libc = 0; libc < 2; libc++) {
			if (f == POSIX_MEMALIGN && libc && !__posix_memalign) {
				check_skip("__posix_memalign not present (glibc has none)");
				continue;
			}
			for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
				for (int resize = 0; resize < 3; resize++)
					for (int by_libc = 0; by_libc < 2; by_libc++)
						one_combination((enum fn)f, libc, sizes[i],
								aligns[i % 3], resize, by_libc);
		}
	}
}

/* The edge cases of the standard names hold under the glibc names too. */
static void test_edges(void)
{
	__libc_free(NULL);
	void *p = __libc_realloc(NULL, 0);
	CHECK(p != NULL);
	errno = 0;
	CHECK(__libc_realloc(p, 0) == NULL); /* as glibc: frees, returns NULL */
	errno = 0;
	CHECK(__libc_malloc(SIZE_MAX) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(__libc_calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	p = __libc_memalign(100, 10); /* as glibc: rounded up to 128 */
	CHECK(p != NULL && ALIGNED(p, 128));
	free(p);
	if (__posix_memalign) {
		CHECK(__posix_memalign(&p, 24, 10) == EINVAL);
		CHECK(__posix_memalign(&p, 0, 10) == EINVAL);
	}
	/* One block passed back and forth between the names. */
	p = __libc_malloc(10);
	pattern_fill(p, 10, 1);
	for (size_t n = 10; n < ((size_t)8 << 20); n = n * 3 + 1) {
		void *q = (n & 1) ? realloc(p, n * 3 + 1) : __libc_realloc(p, n * 3 + 1);
		if (!CHECK(q != NULL))
			break;
		p = q;
		CHECKF(pattern_ok(p, 10, 1), "contents lost growing to %zu", n * 3 + 1);
	}
	__libc_free(p);
}

int main(void)
{
	check_init("glibc_names");
	test_every_combination();
	test_edges();
	return check_finish();
}
