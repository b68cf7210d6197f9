/*
 * free_sized.c: free_sized and free_aligned_sized (C23) release blocks
 * given their requested size (and alignment): free_sized for blocks from
 * malloc, calloc, realloc and reallocarray, free_aligned_sized for blocks
 * from aligned_alloc, as C23 allows.  The memory is then reused without
 * corrupting live blocks.  glibc 2.36 lacks both: the test skips there.
 */
#include <malloc.h>
#include <stdlib.h>

#include "blocks.h"
#include "check.h"
#include "compat.h"
#include "pattern.h"

static struct block_set live;

static void release(void *p)
{
	free(p);
}

/* Verifies the n-byte pattern of p before the sized free. */
static void verified(void *p, size_t n, uint64_t seed)
{
	CHECKF(pattern_ok(p, n, seed), "block of %zu bytes changed before free", n);
}

static void round_of(size_t n)
{
	void *p = malloc(n);
	if (CHECK(p != NULL)) {
		pattern_fill(p, n, 1);
		verified(p, n, 1);
		free_sized(p, n);
	}
	p = calloc(n, 3);
	if (CHECK(p != NULL))
		free_sized(p, n * 3);
	p = realloc(malloc(n / 2 + 1), n);
	if (CHECK(p != NULL))
		free_sized(p, n);
	p = reallocarray(NULL, n, 2);
	if (CHECK(p != NULL))
		free_sized(p, n * 2);

	for (size_t a = 16; a <= ((size_t)4 << 20); a *= 8) {
		p = aligned_alloc(a, n);
		if (CHECK(p != NULL)) {
			pattern_fill(p, n, a);
			verified(p, n, a);
			free_aligned_sized(p, a, n);
		}
	}
	/* Keep some blocks live between rounds to catch reuse mistakes. */
	blocks_add(&live, malloc(n), n);
}

int main(void)
{
	check_init("free_sized");
	if (!free_sized || !free_aligned_sized) {
		check_skip("free_sized/free_aligned_sized not provided (glibc)");
		return check_finish();
	}
	blocks_init(&live, 64, (size_t)64 << 20, release);
	for (size_t n = 1; n <= ((size_t)4 << 20); n = n * 5 / 4 + 1)
		round_of(n);
	for (size_t n = 0; n < 2000; n++) {
		void *p = malloc(n);
		if (CHECK(p != NULL))
			free_sized(p, n);
	}
	blocks_clear(&live);
	return check_finish();
}
