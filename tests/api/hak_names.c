/*
 * hak_names.c: the hak_* entry points of include/hakmem.h behave as their C
 * namesakes and are the same allocator: a block from malloc can be freed
 * by hak_free and the other way round.  Skipped where hakmem is absent.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "hakmem.h"
#include "pattern.h"

/* Weak, so the same binary also runs (and skips) under plain glibc. */
#pragma weak hak_malloc
#pragma weak hak_calloc
#pragma weak hak_realloc
#pragma weak hak_reallocarray
#pragma weak hak_free
#pragma weak hak_free_sized
#pragma weak hak_free_aligned_sized
#pragma weak hak_posix_memalign
#pragma weak hak_aligned_alloc
#pragma weak hak_memalign
#pragma weak hak_valloc
#pragma weak hak_pvalloc
#pragma weak hak_malloc_usable_size
#pragma weak hak_collect

#define ALIGNED(p, a) (((uintptr_t)(p) & ((a) - 1)) == 0)

static void test_each_function(void)
{
	void *p = hak_malloc(100);
	CHECK(p && ALIGNED(p, 16) && hak_malloc_usable_size(p) >= 100);
	pattern_fill(p, 100, 3);
	p = hak_realloc(p, 5000);
	CHECK(p && pattern_ok(p, 100, 3));
	p = hak_reallocarray(p, 10, 1000);
	CHECK(p && pattern_ok(p, 100, 3) && hak_malloc_usable_size(p) >= 10000);
	hak_free(p);

	p = hak_calloc(100, 30);
	CHECK(p && find_nonzero(p, 3000) == (size_t)-1);
	hak_free_sized(p, 3000);

	p = hak_aligned_alloc(4096, 100);
	CHECK(p && ALIGNED(p, 4096));
	hak_free_aligned_sized(p, 4096, 100);
	CHECK(hak_posix_memalign(&p, (size_t)1 << 20, 10) == 0 && ALIGNED(p, (size_t)1 << 20));
	hak_free(p);
	p = hak_memalign(256, 1);
	CHECK(p && ALIGNED(p, 256));
	hak_free(p);
	p = hak_valloc(1);
	CHECK(p && ALIGNED(p, 4096));
	hak_free(p);
	p = hak_pvalloc(1);
	CHECK(p && ALIGNED(p, 4096) && hak_malloc_usable_size(p) >= 4096);
	hak_free(p);

	CHECK(hak_malloc_usable_size(NULL) == 0);
	hak_free(NULL);
	p = hak_malloc(0);
	CHECK(p != NULL);
	hak_free(p);
	hak_collect();

	errno = 0;
	CHECK(hak_malloc(SIZE_MAX) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(hak_calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	CHECK(hak_posix_memalign(&p, 24, 10) == EINVAL);
	errno = 0;
	CHECK(hak_aligned_alloc(24, 10) == NULL && errno == EINVAL);
}

static void test_mixed_names(void)
{
	for (size_t n = 1; n < ((size_t)4 << 20); n = n * 4 + 1) {
		void *p = malloc(n);
		if (!CHECK(p != NULL))
			continue;
		CHECK(hak_malloc_usable_size(p) == malloc_usable_size(p));
		hak_free(p);
		p = hak_malloc(n);
		if (!CHECK(p != NULL))
			continue;
		pattern_fill(p, n, n);
		p = realloc(p, n + 100);
		CHECK(p && pattern_ok(p, n, n));
		free(p);
	}
}

int main(void)
{
	check_init("hak_names");
	if (!hak_malloc) {
		check_skip("hak_* functions not present (not running on hakmem)");
		return check_finish();
	}
	test_each_function();
	test_mixed_names();
	return check_finish();
}
