/*
 * alignment.c: every pointer the malloc family returns is 16-byte aligned
 * whatever the size, and usable for its whole size.
 *
 * malloc is tried with every size up to 64 KiB and with the sizes around
 * every power of two up to 64 MiB; calloc, realloc and reallocarray with a
 * spread of sizes; valloc and pvalloc must give page-aligned blocks.
 * Recent blocks stay live and patterned, so overlapping blocks fail too.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "blocks.h"
#include "check.h"

#define ALIGNED(p, a) (((uintptr_t)(p) & ((uintptr_t)(a) - 1)) == 0)

static struct block_set live;

static void release(void *p)
{
	free(p);
}

/* Checks one fresh block of n requested bytes, then keeps it live. */
static void take(const char *fn, void *p, size_t n, size_t align)
{
	if (!CHECKF(p != NULL, "%s(%zu) returned NULL", fn, n))
		return;
	CHECKF(ALIGNED(p, align), "%s(%zu) = %p is not %zu-byte aligned", fn, n,
	       p, align);
	CHECKF(malloc_usable_size(p) >= n, "%s(%zu): usable size %zu", fn, n,
	       malloc_usable_size(p));
	blocks_add(&live, p, n);
}

static void test_malloc_every_small_size(void)
{
	for (size_t n = 0; n <= 65536; n++)
		take("malloc", malloc(n), n, 16);
	blocks_clear(&live);
}

static void test_malloc_around_powers_of_two(void)
{
	static const long delta[] = { -17, -16, -15, -1, 0, 1, 15, 16, 17 };
	for (unsigned k = 5; k <= 26; k++)
		for (size_t d = 0; d < sizeof delta / sizeof *delta; d++) {
			size_t n = ((size_t)1 << k) + (size_t)delta[d];
			take("malloc", malloc(n), n, 16);
		}
	blocks_clear(&live);
}

static void test_calloc(void)
{
	for (size_t n = 0; n <= 4096; n++)
		take("calloc", calloc(1, n), n, 16);
	for (size_t n = 4096; n <= ((size_t)32 << 20); n = n * 3 / 2 + 1)
		take("calloc", calloc(n, 1), n, 16);
	blocks_clear(&live);
}

static void *realloc_checked(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!CHECKF(q != NULL, "realloc(%zu) returned NULL", n))
		return p;
	CHECKF(ALIGNED(q, 16), "realloc(%zu) = %p not 16-aligned", n, q);
	return q;
}

static void test_realloc_chain(void)
{
	/* One block grown step by step through every size class up to 1 MiB
	 * and shrunk back: each intermediate result must be aligned. */
	void *p = NULL;
	size_t n = 1;
	for (; n <= ((size_t)1 << 20); n += 1 + n / 64)
		p = realloc_checked(p, n);
	while (n > 1) {
		n -= 1 + n / 64;
		p = realloc_checked(p, n);
	}
	free(p);

	for (size_t m = 0; m < 3000; m += 7)
		take("reallocarray", reallocarray(NULL, m, 3), m * 3, 16);
	blocks_clear(&live);
}

static void test_page_aligned(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	static const size_t sizes[] = { 0, 1, 16, 100, 4095, 4096, 4097, 20000,
					65536, 1000000, 5000000 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i];
		take("valloc", valloc(n), n, page);
		/* pvalloc rounds the size up to whole pages. */
		take("pvalloc", pvalloc(n), (n + page - 1) / page * page, page);
	}
	blocks_clear(&live);
}

int main(void)
{
	check_init("alignment");
	blocks_init(&live, 64, (size_t)256 << 20, release);
	test_malloc_every_small_size();
	test_malloc_around_powers_of_two();
	test_calloc();
	test_realloc_chain();
	test_page_aligned();
	return check_finish();
}
