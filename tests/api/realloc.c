/*
 * realloc.c: realloc and reallocarray keep the contents (up to the smaller
 * of the two sizes) when growing, shrinking or keeping the size, across
 * every kind of block, and leave neighbouring blocks alone.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "blocks.h"
#include "check.h"
#include "pattern.h"

static const size_t sizes[] = {
	0, 1, 8, 15, 16, 17, 31, 32, 100, 255, 256, 1000, 1024, 1025, 4095,
	4096, 4097, 5000, 16384, 65535, 65536, 65537, 100000, 262144, 524287,
	524288, 524289, (size_t)1 << 20, ((size_t)1 << 20) + 1, (size_t)3 << 20,
	(size_t)8 << 20,
};
#define NSIZES (sizeof sizes / sizeof *sizes)
#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* realloc p (holding n bytes of pattern seed) to m bytes and check it. */
static void *resize(void *p, size_t n, size_t m, uint64_t seed)
{
	void *q = realloc(p, m);
	if (m == 0) {
		/* Either freed (NULL) or a minimal block: nothing to keep. */
		return q;
	}
	if (!CHECKF(q != NULL, "realloc(%zu -> %zu) = NULL", n, m))
		return p;
	CHECKF(((uintptr_t)q & 15) == 0, "realloc(%zu -> %zu) = %p unaligned", n, m, q);
	CHECKF(malloc_usable_size(q) >= m, "realloc(%zu -> %zu): usable %zu", n, m,
	       malloc_usable_size(q));
	size_t bad = pattern_find_mismatch(q, MIN(n, m), seed);
	CHECKF(bad == (size_t)-1, "realloc(%zu -> %zu) lost byte %zu", n, m, bad);
	return q;
}

static void test_every_pair(void)
{
	uint64_t seed = 1;
	for (size_t i = 0; i < NSIZES; i++)
		for (size_t j = 0; j < NSIZES; j++) {
			size_t a = sizes[i], b = sizes[j];
			void *p = malloc(a);
			if (!CHECKF(p != NULL, "malloc(%zu) = NULL", a))
				continue;
			pattern_fill(p, a, ++seed);
			p = resize(p, a, b, seed);
			if (b == 0) {
				free(p);
				continue;
			}
			pattern_fill(p, b, ++seed);
			p = resize(p, b, a ? a : 1, seed);
			free(p);
		}
}

/* Grow one byte at a time: every step keeps everything written so far. */
static void test_byte_steps(void)
{
	void *p = NULL;
	for (size_t n = 1; n <= 6000; n++) {
		void *q = realloc(p, n);
		if (!CHECKF(q != NULL, "realloc to %zu = NULL", n))
			break;
		p = q;
		if (n > 1)
			CHECKF(pattern_ok(p, n - 1, 42), "growing to %zu lost data", n);
		pattern_fill(p, n, 42);
	}
	free(p);
}

/* Same size and in-place changes within the usable size keep the data. */
static void test_same_size(void)
{
	for (size_t i = 1; i < NSIZES; i++) {
		size_t n = sizes[i];
		void *p = malloc(n);
		if (!p)
			continue;
		pattern_fill(p, n, n);
		p = resize(p, n, n, n);
		p = resize(p, n, malloc_usable_size(p), n);
		free(p);
	}
}

static struct block_set neighbours;

static void release(void *p)
{
	free(p);
}

/* Growing a block in place must not spill into its live neighbours. */
static void test_neighbours(void)
{
	blocks_init(&neighbours, 256, (size_t)64 << 20, release);
	for (size_t i = 0; i < NSIZES; i++) {
		void *mid[16];
		for (int k = 0; k < 16; k++) {
			blocks_add(&neighbours, malloc(sizes[i] + 1), sizes[i] + 1);
			mid[k] = malloc(sizes[i] + 1);
			if (mid[k])
				pattern_fill(mid[k], sizes[i] + 1, 900 + (uint64_t)k);
		}
		for (int k = 0; k < 16; k++)
			if (mid[k]) {
				mid[k] = resize(mid[k], sizes[i] + 1, sizes[i] * 2 + 64,
						900 + (uint64_t)k);
				free(mid[k]);
			}
		blocks_clear(&neighbours);
	}
}

/* Blocks with a large alignment keep their contents through realloc. */
static void test_aligned_blocks(void)
{
	static const size_t aligns[] = { 64, 4096, 65536, (size_t)2 << 20 };
	for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++) {
		void *p = NULL;
		if (!CHECK(posix_memalign(&p, aligns[i], 3000) == 0))
			continue;
		pattern_fill(p, 3000, aligns[i]);
		p = resize(p, 3000, 100, aligns[i]);
		p = resize(p, 100, 500000, aligns[i]);
		free(p);
	}
}

static void test_reallocarray(void)
{
	void *p = reallocarray(NULL, 10, 16);
	if (!CHECK(p != NULL))
		return;
	pattern_fill(p, 160, 5);
	for (size_t count = 20; count <= 200000; count *= 3) {
		void *q = reallocarray(p, count, 16);
		if (!CHECKF(q != NULL, "reallocarray(%zu, 16) = NULL", count))
			break;
		CHECKF(pattern_ok(q, 160, 5), "reallocarray(%zu, 16) lost data", count);
		CHECK(malloc_usable_size(q) >= count * 16);
		p = q;
	}
	void *q = reallocarray(p, 5, 16);
	if (CHECK(q != NULL)) {
		CHECK(pattern_ok(q, 80, 5));
		p = q;
	}
	free(p);
}

int main(void)
{
	check_init("realloc");
	test_every_pair();
	test_byte_steps();
	test_same_size();
	test_neighbours();
	test_aligned_blocks();
	test_reallocarray();
	return check_finish();
}
