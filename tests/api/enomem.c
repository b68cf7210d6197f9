/*
 * enomem.c: sizes that cannot be served (beyond the address space, or
 * overflowing in the size computation) give NULL and errno ENOMEM from
 * every allocating function; a failed realloc leaves the old block intact;
 * and afterwards the allocator works as before.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "blocks.h"
#include "check.h"
#include "pattern.h"

/* The block is used after a realloc on purpose: the realloc failed. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

/* Sizes no allocator can serve on x86-64 or aarch64 (47 or 48-bit user
 * address space), several chosen so that rounding up to a size class, a
 * page or an alignment overflows. */
static const size_t huge[] = {
	SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 15, SIZE_MAX - 16, SIZE_MAX - 4095,
	SIZE_MAX - 4096, SIZE_MAX - ((size_t)2 << 20), SIZE_MAX - ((size_t)4 << 20) - 1,
	SIZE_MAX / 2 + 1, SIZE_MAX / 2, (size_t)1 << 62, (size_t)1 << 49,
	(size_t)1 << 48,
};
#define NHUGE (sizeof huge / sizeof *huge)

/* Evaluates expr (a pointer) with errno cleared; wants NULL and ENOMEM. */
#define EXPECT_ENOMEM(expr, ...)                                              \
	do {                                                                  \
		errno = 0;                                                    \
		void *r_ = (expr);                                            \
		int e_ = errno;                                               \
		CHECKF(r_ == NULL && e_ == ENOMEM,                            \
		       "%s = %p, errno %d; want NULL, ENOMEM (" #expr ")",    \
		       __VA_ARGS__, r_, e_);                                  \
		if (r_)                                                       \
			free(r_);                                             \
	} while (0)

static void test_allocating_functions(void)
{
	char what[64];
	for (size_t i = 0; i < NHUGE; i++) {
		size_t n = huge[i];
		snprintf(what, sizeof what, "size %#zx", n);
		EXPECT_ENOMEM(malloc(n), what);
		EXPECT_ENOMEM(calloc(n, 1), what);
		EXPECT_ENOMEM(calloc(1, n), what);
		EXPECT_ENOMEM(realloc(NULL, n), what);
		EXPECT_ENOMEM(reallocarray(NULL, n, 1), what);
		EXPECT_ENOMEM(aligned_alloc(64, n), what);
		EXPECT_ENOMEM(aligned_alloc(4096, n), what);
		EXPECT_ENOMEM(memalign(64, n), what);
		EXPECT_ENOMEM(valloc(n), what);
		EXPECT_ENOMEM(pvalloc(n), what);
		/* POSIX.1-2008 TC2: memptr is not modified on failure. */
		void *sentinel = &sentinel, *p = sentinel;
		errno = 1234; /* the result says ENOMEM, errno is the program's */
		int rc = posix_memalign(&p, 64, n);
		CHECKF(rc == ENOMEM, "posix_memalign(64, %#zx) = %d, want ENOMEM", n, rc);
		CHECKF(errno == 1234, "failed posix_memalign(64, %#zx) set errno to %d", n, errno);
		CHECKF(rc == 0 || p == sentinel, "failed posix_memalign changed *memptr");
		if (rc == 0)
			free(p);
	}
}

/* n * m overflows size_t: calloc and reallocarray must notice. */
static void test_overflowing_products(void)
{
	static const size_t pairs[][2] = {
		{ SIZE_MAX / 2 + 1, 2 }, { (size_t)1 << 32, (size_t)1 << 32 },
		{ SIZE_MAX, SIZE_MAX }, { 3, SIZE_MAX / 3 + 1 },
		{ (size_t)1 << 33, (size_t)1 << 31 }, { 16, SIZE_MAX / 16 + 1 },
		{ SIZE_MAX / 4096 + 1, 4096 },
	};
	char what[64];
	for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
		size_t a = pairs[i][0], b = pairs[i][1];
		snprintf(what, sizeof what, "%#zx x %#zx", a, b);
		EXPECT_ENOMEM(calloc(a, b), what);
		EXPECT_ENOMEM(calloc(b, a), what);
		EXPECT_ENOMEM(reallocarray(NULL, a, b), what);
	}
}

/* Alignments that are valid but cannot be served. */
static void test_huge_alignments(void)
{
	static const size_t aligns[] = { (size_t)1 << 48, (size_t)1 << 62,
					 (size_t)1 << 63 };
	char what[64];
	for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
		size_t a = aligns[i];
		snprintf(what, sizeof what, "alignment %#zx", a);
		EXPECT_ENOMEM(aligned_alloc(a, 16), what);
		EXPECT_ENOMEM(memalign(a, 16), what);
		void *sentinel = &sentinel, *p = sentinel;
		int rc = posix_memalign(&p, a, 16);
		CHECKF(rc == ENOMEM, "posix_memalign(%#zx, 16) = %d, want ENOMEM", a, rc);
		CHECKF(rc == 0 || p == sentinel, "failed posix_memalign changed *memptr");
		if (rc == 0)
			free(p);
	}
}

/* A failed realloc or reallocarray keeps the block: same address still
 * valid, same contents, same usable size. */
static void test_failed_realloc_keeps_block(void)
{
	static const size_t sizes[] = { 1, 100, 20000, 300000, (size_t)2 << 20 };
	char what[64];
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i];
		void *p = malloc(n);
		if (!CHECK(p != NULL))
			continue;
		pattern_fill(p, n, n);
		size_t usable = malloc_usable_size(p);
		for (size_t h = 0; h < NHUGE; h++) {
			snprintf(what, sizeof what, "realloc(%zu-byte block, %#zx)", n, huge[h]);
			EXPECT_ENOMEM(realloc(p, huge[h]), what);
			EXPECT_ENOMEM(reallocarray(p, huge[h], 1), what);
			EXPECT_ENOMEM(reallocarray(p, 2, huge[h] / 2 + 1), what);
		}
		CHECKF(pattern_ok(p, n, n), "failed realloc changed a %zu-byte block", n);
		CHECKF(malloc_usable_size(p) == usable,
		       "failed realloc changed the usable size of a %zu-byte block", n);
		/* The block is still a normal block: it grows and frees. */
		void *q = realloc(p, n * 2);
		if (CHECK(q != NULL)) {
			CHECK(pattern_ok(q, n, n));
			p = q;
		}
		free(p);
	}
}

static struct block_set live;

static void release(void *p)
{
	free(p);
}

int main(void)
{
	check_init("enomem");
	/* Blocks live across all the failures must come through unchanged. */
	blocks_init(&live, 200, (size_t)64 << 20, release);
	for (size_t n = 1; n < 200000; n = n * 2 + 7)
		blocks_add(&live, malloc(n), n);
	test_allocating_functions();
	test_overflowing_products();
	test_huge_alignments();
	test_failed_realloc_keeps_block();
	blocks_clear(&live);

	/* And the allocator still serves every kind of request. */
	for (size_t n = 1; n < ((size_t)8 << 20); n = n * 3 + 1) {
		void *p = malloc(n);
		if (CHECKF(p != NULL, "malloc(%zu) after the failures = NULL", n))
			blocks_add(&live, p, n);
	}
	blocks_clear(&live);
	return check_finish();
}
