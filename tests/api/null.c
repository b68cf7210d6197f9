/*
 * null.c: NULL is accepted wherever C and glibc accept it: free(NULL) and
 * the sized frees do nothing, realloc(NULL, n) and reallocarray(NULL, ...)
 * act as malloc, malloc_usable_size(NULL) is 0.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "compat.h"
#include "pattern.h"

int main(void)
{
	check_init("null");

	free(NULL);
	CHECK(malloc_usable_size(NULL) == 0);
	if (free_sized) {
		free_sized(NULL, 0);
		free_sized(NULL, 100);
		free_aligned_sized(NULL, 64, 0);
		free_aligned_sized(NULL, 4096, 100);
	} else {
		check_skip("free_sized is not provided (glibc)");
	}

	/* NULL frees must not touch any live block. */
	void *keep = malloc(48);
	pattern_fill(keep, 48, 7);
	for (int i = 0; i < 100; i++)
		free(NULL);
	CHECK(pattern_ok(keep, 48, 7));
	free(keep);

	static const size_t sizes[] = { 1, 16, 1000, 70000, 3000000 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i];
		void *p = realloc(NULL, n);
		if (CHECKF(p != NULL, "realloc(NULL, %zu) = NULL", n)) {
			CHECK(((uintptr_t)p & 15) == 0);
			CHECK(malloc_usable_size(p) >= n);
			pattern_fill(p, n, n);
			CHECK(pattern_ok(p, n, n));
		}
		free(p);
		p = reallocarray(NULL, n, 2);
		if (CHECKF(p != NULL, "reallocarray(NULL, %zu, 2) = NULL", n)) {
			CHECK(malloc_usable_size(p) >= 2 * n);
			pattern_fill(p, 2 * n, n);
			CHECK(pattern_ok(p, 2 * n, n));
		}
		free(p);
	}
	return check_finish();
}
