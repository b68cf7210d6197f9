/*
 * blocks.h: a bounded set of live blocks, each filled with its own pattern.
 *
 * Tests that allocate many blocks keep the most recent ones alive here.
 * Every block is verified when it leaves the set, so two live blocks that
 * overlap, or a block that the allocator hands out twice, fail a check.
 */
#ifndef TESTS_BLOCKS_H
#define TESTS_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct live_block {
	void *p;
	size_t n;
	uint64_t seed;
};

struct block_set {
	struct live_block slot[256];
	size_t count_max;    /* at most 256 */
	size_t bytes_max;    /* evict the oldest blocks beyond this many bytes */
	size_t head, count, bytes;
	uint64_t next_seed;
	void (*release)(void *p);
};

/* release is the function that frees a block (free or hak_free). */
void blocks_init(struct block_set *s, size_t count_max, size_t bytes_max,
		 void (*release)(void *p));

/* Fills p[0..n) with a fresh pattern and keeps it, evicting old blocks.
 * A NULL p counts as a failed check (the allocation failed). */
void blocks_add(struct block_set *s, void *p, size_t n);

/* Verifies and frees every block. */
void blocks_clear(struct block_set *s);

#ifdef __cplusplus
}
#endif

#endif
