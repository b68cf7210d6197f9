/*
 * usable_size.c: malloc_usable_size(p) is at least the requested size, the
 * same on every call, and every one of those bytes is the caller's: blocks
 * written over their whole usable size must not overlap each other or the
 * allocator's own data.  It is not much more: rounding wastes less than a
 * quarter, and less than an eighth for a power of two of 1-8 KiB and a
 * header (sqlite's pages of 4096 + 272 bytes, z3's 8192 + 8).
 */
#include <malloc.h>
#include <stdlib.h>

#include "blocks.h"
#include "check.h"
#include "pattern.h"

static struct block_set live;

static void release(void *p)
{
	free(p);
}

/* Checks the usable size of a fresh block and claims all of it. */
static void claim(const char *fn, void *p, size_t n)
{
	if (!CHECKF(p != NULL, "%s(%zu) = NULL", fn, n))
		return;
	size_t u = malloc_usable_size(p);
	CHECKF(u >= n, "%s(%zu): usable size %zu", fn, n, u);
	CHECKF(malloc_usable_size(p) == u, "%s(%zu): usable size changed", fn, n);
	blocks_add(&live, p, u);
}

static void test_sizes(void)
{
	for (size_t n = 0; n <= 8192; n++)
		claim("malloc", malloc(n), n);
	for (size_t n = 8192; n <= ((size_t)16 << 20); n += n / 8 + 13)
		claim("malloc", malloc(n), n);
	blocks_clear(&live);
}

static void test_other_functions(void)
{
	for (size_t n = 1; n <= ((size_t)4 << 20); n = n * 2 + 5) {
		claim("calloc", calloc(1, n), n);
		claim("aligned_alloc", aligned_alloc(256, n), n);
		void *p = malloc(n / 2 + 1);
		claim("realloc", realloc(p, n), n);
	}
	blocks_clear(&live);
}

/* The rounding of size classes, on live blocks (a size may be served
 * differently once freed into a cache of another size). */
static void test_rounding(void)
{
	for (size_t n = 129; n <= ((size_t)512 << 10); n += 1 + n / 64) {
		void *p = malloc(n);
		size_t u = malloc_usable_size(p);
		CHECKF(p != NULL && u - n < n / 4 + 16, "malloc(%zu): usable size %zu", n, u);
		free(p);
	}
	for (size_t base = 1024; base <= 8192; base *= 2)
		for (size_t header = 1; header <= base / 8; header += header < 16 ? 7 : header / 2) {
			size_t n = base + header;
			void *p = malloc(n);
			size_t u = malloc_usable_size(p);
			CHECKF(p != NULL && u - n <= n / 8, "malloc(%zu): usable size %zu", n, u);
			free(p);
		}
}

/* Fill whole pages of one size class to the last usable byte, all blocks
 * live at once: a usable size that reaches into a neighbour or into
 * per-page metadata shows up as a changed pattern or a broken next round. */
static void test_full_pages(void)
{
	enum { COUNT = 20000 };
	static void *p[COUNT];
	static const size_t sizes[] = { 16, 48, 100, 1000, 3000 };
	for (int round = 0; round < 2; round++)
		for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
			for (size_t i = 0; i < COUNT; i++) {
				p[i] = malloc(sizes[s]);
				if (CHECK(p[i] != NULL))
					pattern_fill(p[i], malloc_usable_size(p[i]), i);
			}
			for (size_t i = 0; i < COUNT; i++) {
				if (!p[i])
					continue;
				CHECKF(pattern_ok(p[i], malloc_usable_size(p[i]), i),
				       "block %zu of size %zu changed", i, sizes[s]);
				free(p[i]);
			}
		}
}

int main(void)
{
	check_init("usable_size");
	/* A window of 256 live blocks: neighbours stay live while written. */
	blocks_init(&live, 256, (size_t)256 << 20, release);
	test_sizes();
	test_other_functions();
	test_full_pages();
	test_rounding();
	return check_finish();
}
