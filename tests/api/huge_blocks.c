/*
 * huge_blocks.c: blocks above 512 KiB, which hakmem maps one by one and
 * keeps in a cache that splits and merges freed ranges.  Random rounds of
 * dirty, free and reallocate: calloc'd blocks read as zero, live blocks
 * never overlap (each is patterned over its whole usable size), and realloc
 * grows and shrinks them (in place or not) without losing data.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pattern.h"
#include "rng.h"

enum { LIVE = 24, ROUNDS = 40 };
#define MIN_HUGE ((size_t)520 << 10)
#define MAX_HUGE ((size_t)24 << 20)

struct block {
	unsigned char *p;
	size_t n;       /* bytes patterned: the whole usable size */
	uint64_t seed;
};

static struct block live[LIVE];
static uint64_t rng = 12345;

static size_t huge_size(void)
{
	/* Mostly near the lower bound, where cached ranges get split. */
	if (rng_below(&rng, 3))
		return MIN_HUGE + rng_below(&rng, (size_t)4 << 20);
	return MIN_HUGE + rng_below(&rng, MAX_HUGE - MIN_HUGE);
}

static void claim(struct block *b, void *p, size_t n)
{
	b->p = p;
	if (!CHECKF(p != NULL, "allocation of %zu bytes failed", n))
		return;
	b->n = malloc_usable_size(p);
	CHECKF(b->n >= n, "usable size %zu < %zu", b->n, n);
	b->seed = rng_next(&rng);
	pattern_fill(p, b->n, b->seed);
}

static void release(struct block *b)
{
	if (!b->p)
		return;
	size_t bad = pattern_find_mismatch(b->p, b->n, b->seed);
	CHECKF(bad == (size_t)-1, "huge block of %zu bytes changed at %zu", b->n, bad);
	/* Dirty it all before it goes back, for the calloc checks. */
	memset(b->p, 0xcd, b->n);
	free(b->p);
	b->p = NULL;
}

static void resize(struct block *b)
{
	size_t n = rng_below(&rng, 4) ? huge_size() : 1 + rng_below(&rng, 600000);
	unsigned char *q = realloc(b->p, n);
	if (!CHECKF(q != NULL, "realloc(%zu -> %zu) failed", b->n, n))
		return;
	size_t keep = n < b->n ? n : b->n;
	size_t bad = pattern_find_mismatch(q, keep, b->seed);
	CHECKF(bad == (size_t)-1, "realloc(%zu -> %zu) lost byte %zu", b->n, n, bad);
	claim(b, q, n);
}

int main(void)
{
	check_init("huge_blocks");
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < LIVE; i++) {
			struct block *b = &live[i];
			switch (rng_below(&rng, 4)) {
			case 0:
				release(b);
				claim(b, malloc(huge_size()), 0);
				break;
			case 1: {
				release(b);
				size_t n = huge_size();
				void *p = calloc(1, n);
				if (p)
					CHECKF(find_nonzero(p, n) == (size_t)-1,
					       "calloc(%zu) of reused memory not zero", n);
				claim(b, p, n);
				break;
			}
			case 2:
				if (b->p)
					resize(b);
				break;
			default:
				release(b);
				break;
			}
		}
	}
	for (int i = 0; i < LIVE; i++)
		release(&live[i]);
	return check_finish();
}
