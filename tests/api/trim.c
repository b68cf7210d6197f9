/*
 * trim.c: malloc_trim and hak_collect give free memory back to the system
 * and nothing else: live blocks keep their contents, the allocator keeps
 * working, and resident memory falls once everything is freed.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "blocks.h"
#include "check.h"
#include "rss.h"

static struct block_set live;

static void release(void *p)
{
	free(p);
}

static void test_live_blocks_survive(void)
{
	blocks_init(&live, 256, (size_t)128 << 20, release);
	for (int round = 0; round < 3; round++) {
		for (size_t n = 1; n < ((size_t)16 << 20); n = n * 2 + 3)
			blocks_add(&live, malloc(n), n);
		/* Transient blocks leave free space among the live ones. */
		for (size_t i = 0; i < 40; i++)
			free(malloc(i * 1000 + 1));
		int r = malloc_trim(0);
		CHECKF(r == 0 || r == 1, "malloc_trim(0) = %d", r);
		r = malloc_trim((size_t)1 << 20);
		CHECKF(r == 0 || r == 1, "malloc_trim(1 MiB) = %d", r);
		t_collect();
	}
	blocks_clear(&live);
}

/* Fill `total` bytes with blocks of `size`, free them, collect: resident
 * memory must come back down close to where it started. */
static void test_memory_returned(size_t size, size_t total)
{
	size_t count = total / size;
	void **p = malloc(count * sizeof *p);
	if (!CHECK(p != NULL))
		return;
	t_collect();
	size_t before = rss_bytes();
	for (size_t i = 0; i < count; i++) {
		p[i] = malloc(size);
		if (CHECK(p[i] != NULL))
			memset(p[i], 1, size);
	}
	size_t peak = rss_bytes();
	for (size_t i = 0; i < count; i++)
		free(p[i]);
	t_collect();
	size_t after = rss_bytes();
	CHECKF(peak >= before + total / 2,
	       "the blocks did not show in RSS (before %zu, peak %zu MiB)",
	       before / MiB, peak / MiB);
	CHECKF(after <= before + total / 4,
	       "%zu MiB of %zu-byte blocks freed and collected: RSS %zu MiB -> "
	       "peak %zu MiB -> %zu MiB", total / MiB, size, before / MiB,
	       peak / MiB, after / MiB);
	free(p);
}

int main(void)
{
	check_init("trim");
	test_live_blocks_survive();
	test_memory_returned(64, (size_t)128 << 20);
	test_memory_returned(3000, (size_t)128 << 20);
	test_memory_returned(40000, (size_t)128 << 20);
	test_memory_returned(300000, (size_t)128 << 20);
	test_memory_returned((size_t)3 << 20, (size_t)192 << 20);
	return check_finish();
}
