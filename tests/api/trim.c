/*
 * trim.c: malloc_trim and hak_collect give free memory back to the system
 * and nothing else: live blocks keep their contents, the allocator keeps
 * working, and resident memory falls once everything is freed, also what
 * another thread, still alive, freed.  malloc_trim returns 1 when memory
 * went back, and (hakmem; glibc's may still find a little) 0 when called
 * again with nothing freed in between.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "allocator.h"
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

/* A thread that allocates and frees `total` bytes of `size`-byte blocks,
 * then waits, alive, until main has trimmed. */
struct worker {
	size_t size, total;
	pthread_barrier_t freed, trimmed;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	size_t count = w->total / w->size;
	void **p = malloc(count * sizeof *p);
	for (size_t i = 0; p != NULL && i < count; i++) {
		p[i] = malloc(w->size);
		if (p[i] != NULL)
			memset(p[i], 1, w->size);
	}
	for (size_t i = 0; p != NULL && i < count; i++)
		free(p[i]);
	free(p);
	pthread_barrier_wait(&w->freed);
	pthread_barrier_wait(&w->trimmed);
	return NULL;
}

static void test_other_thread(size_t size, size_t total)
{
	struct worker w = { .size = size, .total = total };
	pthread_barrier_init(&w.freed, NULL, 2);
	pthread_barrier_init(&w.trimmed, NULL, 2);
	t_collect();
	size_t before = rss_bytes();
	pthread_t t;
	if (!CHECK(pthread_create(&t, NULL, worker, &w) == 0))
		return;
	pthread_barrier_wait(&w.freed);
	size_t freed = rss_bytes();
	int r = malloc_trim(0);
	size_t after = rss_bytes();
	int again = malloc_trim(0);
	pthread_barrier_wait(&w.trimmed);
	pthread_join(t, NULL);
	CHECKF(freed < before + total / 2 || r == 1,
	       "malloc_trim gave back %zu MiB but returned %d", (freed - after) / MiB, r);
	CHECKF(after <= before + total / 4,
	       "%zu MiB of %zu-byte blocks freed by a live thread, then malloc_trim: "
	       "RSS %zu MiB -> %zu MiB -> %zu MiB", total / MiB, size, before / MiB,
	       freed / MiB, after / MiB);
	if (testing_hakmem())
		CHECKF(again == 0, "malloc_trim with nothing freed since returned 1");
	pthread_barrier_destroy(&w.freed);
	pthread_barrier_destroy(&w.trimmed);
}

static int mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;
	if (f == NULL)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Huge blocks allocated, written, freed and trimmed away again and again:
 * the process's mappings must not pile up (the kernel allows 65,530; at
 * the limit every mmap fails, the allocator's and the program's).  Once
 * every trim left a piece of the huge blocks' address space mapped. */
static void test_mappings_bounded(void)
{
	t_collect();
	int before = mappings();
	int cycles = (int)test_scaled(3000);
	for (int i = 0; i < cycles; i++) {
		size_t n = ((size_t)3 << 20) + (size_t)(i % 7) * 300000;
		char *p = malloc(n), *q = malloc(700000);
		if (!CHECK(p != NULL && q != NULL))
			return;
		memset(p, i, n);
		memset(q, i, 700000);
		free(p);
		free(q);
		malloc_trim(0);
	}
	int after = mappings();
	CHECKF(before > 0 && after <= before + 16,
	       "%d cycles of huge blocks allocated, freed and trimmed: %d mappings -> %d",
	       cycles, before, after);
}

int main(void)
{
	check_init("trim");
	test_mappings_bounded();
	test_other_thread(64, (size_t)64 << 20);
	test_other_thread(20000, (size_t)64 << 20);
	test_live_blocks_survive();
	test_memory_returned(64, (size_t)128 << 20);
	test_memory_returned(3000, (size_t)128 << 20);
	test_memory_returned(40000, (size_t)128 << 20);
	test_memory_returned(300000, (size_t)128 << 20);
	test_memory_returned((size_t)3 << 20, (size_t)192 << 20);
	return check_finish();
}
