/*
 * malloc_zero.c: malloc(0) gives a unique, 16-byte aligned, freeable
 * pointer, as does realloc(NULL, 0); the other zero-size calls give either
 * NULL or such a pointer.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "pattern.h"

enum { COUNT = 1000 };

static int compare_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a;
	uintptr_t y = (uintptr_t) * (void *const *)b;
	return (x > y) - (x < y);
}

/* COUNT live results of alloc0() must be distinct, aligned, and each as
 * large as its usable size claims (checked by patterning every one). */
static void check_unique(const char *what, void *(*alloc0)(void), int may_be_null)
{
	static void *p[COUNT];
	size_t live = 0;
	for (size_t i = 0; i < COUNT; i++) {
		void *q = alloc0();
		if (q == NULL) {
			CHECKF(may_be_null, "%s returned NULL", what);
			continue;
		}
		CHECKF(((uintptr_t)q & 15) == 0, "%s = %p not 16-aligned", what, q);
		pattern_fill(q, malloc_usable_size(q), (uint64_t)(uintptr_t)q);
		p[live++] = q;
	}
	qsort(p, live, sizeof *p, compare_ptr);
	for (size_t i = 1; i < live; i++)
		CHECKF(p[i] != p[i - 1], "%s returned %p twice", what, p[i]);
	for (size_t i = 0; i < live; i++) {
		CHECKF(pattern_ok(p[i], malloc_usable_size(p[i]), (uint64_t)(uintptr_t)p[i]),
		       "%s: block %p overlaps another", what, p[i]);
		free(p[i]);
	}
}

static void *malloc0(void) { return malloc(0); }
static void *realloc_null0(void) { return realloc(NULL, 0); }
static void *calloc00(void) { return calloc(0, 0); }
static void *calloc0n(void) { return calloc(0, 100); }
static void *callocn0(void) { return calloc(100, 0); }
static void *reallocarray0(void) { return reallocarray(NULL, 0, 8); }

static void *posix_memalign0(void)
{
	void *p = NULL;
	CHECK(posix_memalign(&p, 64, 0) == 0);
	return p;
}

int main(void)
{
	check_init("malloc_zero");
	check_unique("malloc(0)", malloc0, 0);
	check_unique("realloc(NULL, 0)", realloc_null0, 0);
	check_unique("calloc(0, 0)", calloc00, 1);
	check_unique("calloc(0, 100)", calloc0n, 1);
	check_unique("calloc(100, 0)", callocn0, 1);
	check_unique("reallocarray(NULL, 0, 8)", reallocarray0, 1);
	check_unique("posix_memalign(64, 0)", posix_memalign0, 1);

	/* realloc(p, 0) either frees p and returns NULL or returns a block. */
	void *p = malloc(100);
	void *q = realloc(p, 0);
	free(q);
	CHECK(1);
	return check_finish();
}
