/*
 * memalign.c: posix_memalign, aligned_alloc and memalign honour every
 * power-of-two alignment from 1 byte to 8 MiB (the contract promises at
 * least 4 MiB) with sizes below, at and above the alignment, and reject
 * the alignments that POSIX and C call invalid with EINVAL.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "blocks.h"
#include "check.h"

#define MAX_ALIGN_SHIFT 23

static struct block_set live;

static void release(void *p)
{
	free(p);
}

/* Size 0 may give NULL; any pointer returned must be a valid block. */
static void take(const char *fn, void *p, size_t align, size_t n)
{
	if (n == 0 && p == NULL)
		return;
	if (!CHECKF(p != NULL, "%s(align %zu, size %zu) = NULL", fn, align, n))
		return;
	size_t want = align < 16 ? 16 : align;
	CHECKF(((uintptr_t)p & (want - 1)) == 0,
	       "%s(align %zu, size %zu) = %p is not %zu-aligned", fn, align, n, p, want);
	CHECKF(malloc_usable_size(p) >= n, "%s(align %zu, size %zu): usable %zu",
	       fn, align, n, malloc_usable_size(p));
	blocks_add(&live, p, n);
}

static void test_every_alignment(void)
{
	for (unsigned k = 0; k <= MAX_ALIGN_SHIFT; k++) {
		size_t a = (size_t)1 << k;
		size_t sizes[] = { 0, 1, 16, a > 1 ? a - 1 : 1, a, a + 1, 3 * a, 100000 };
		for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
			size_t n = sizes[i];
			void *p = NULL;
			if (a >= sizeof(void *)) {
				errno = 1234; /* posix_memalign reports in its result, never in errno */
				int rc = posix_memalign(&p, a, n);
				CHECKF(rc == 0, "posix_memalign(%zu, %zu) = %d", a, n, rc);
				CHECKF(errno == 1234, "posix_memalign(%zu, %zu) set errno to %d", a, n, errno);
				take("posix_memalign", rc == 0 ? p : NULL, a, n);
			}
			take("aligned_alloc", aligned_alloc(a, n), a, n);
			take("memalign", memalign(a, n), a, n);
		}
	}
	blocks_clear(&live);
}

/* Many small blocks with a moderate alignment: a page must not be handed
 * out twice when aligned blocks are carved from it. */
static void test_many_aligned(void)
{
	static const size_t aligns[] = { 32, 64, 128, 256, 1024, 4096 };
	for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++)
		for (int k = 0; k < 500; k++)
			take("aligned_alloc", aligned_alloc(aligns[i], 24 + (size_t)k),
			     aligns[i], 24 + (size_t)k);
	blocks_clear(&live);
}

static void test_invalid(void)
{
	static const size_t bad_posix[] = { 0, 1, 2, 3, 4, 5, 7, 12, 24, 40, 48,
					    96, 4097, ((size_t)1 << 20) + 8,
					    SIZE_MAX / 2, SIZE_MAX };
	for (size_t i = 0; i < sizeof bad_posix / sizeof *bad_posix; i++) {
		/* POSIX.1-2008 TC2: memptr is not modified on failure. */
		void *sentinel = &sentinel, *p = sentinel;
		int rc = posix_memalign(&p, bad_posix[i], 64);
		CHECKF(rc == EINVAL, "posix_memalign(alignment %zu) = %d, want EINVAL",
		       bad_posix[i], rc);
		CHECKF(rc == 0 || p == sentinel, "failed posix_memalign changed *memptr");
		if (rc == 0)
			free(p);
	}
	static const size_t bad_c[] = { 0, 3, 5, 6, 12, 24, 48, 100, 4097,
					((size_t)1 << 20) + 16, SIZE_MAX / 2, SIZE_MAX };
	for (size_t i = 0; i < sizeof bad_c / sizeof *bad_c; i++) {
		errno = 0;
		void *p = aligned_alloc(bad_c[i], 64);
		CHECKF(p == NULL && errno == EINVAL,
		       "aligned_alloc(alignment %zu) = %p, errno %d; want NULL, EINVAL",
		       bad_c[i], p, errno);
		free(p);
	}
}

int main(void)
{
	check_init("memalign");
	blocks_init(&live, 48, (size_t)256 << 20, release);
	test_every_alignment();
	test_many_aligned();
	test_invalid();
	return check_finish();
}
