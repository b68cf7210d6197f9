/*
 * span_pages.c: blocks of 64 KiB to 512 KiB share their memory across
 * sizes (hakmem's span pages, src/span_page.c).
 *
 *   - shared: eight slots, each freed or given a block of a random size in
 *     64-512 KiB written whole, 20,000 times, with transparent huge pages
 *     off: resident memory grows by at most 7 MiB (at most 4 MiB are live;
 *     when each size class had pages of its own, the sum of the classes'
 *     peaks came to 11.8 MiB), and every block holds what was written in
 *     it until it is freed; once all are freed, malloc_trim brings
 *     resident memory back within 1 MiB of where it started;
 *   - each block's usable size is at least its request and at most a
 *     slice (16 KiB) more, and it is writable whole without touching its
 *     neighbours; realloc within and across those sizes keeps the bytes;
 *   - a second thread frees all of main's blocks and main's next blocks
 *     reuse their memory;
 *   - hak_stats_get counts another thread's blocks live in their size
 *     classes while they are out, and no more once they are freed.
 *
 * The hardened build keeps every class on pages of its own: the bound on
 * resident memory is not checked there.  Against glibc the checks hold as
 * they are (its bound too).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "allocator.h"
#include "check.h"
#include "hakmem.h"
#include "rng.h"
#include "rss.h"
#include "stats_class.h"

#pragma weak hak_stats_get

#define SLOTS 8
#define MIN_SIZE ((size_t)64 << 10)
#define MAX_SIZE ((size_t)512 << 10)
#define SLICE ((size_t)16 << 10)
#define PAGE 4096

static size_t random_size(uint64_t *r)
{
	return MIN_SIZE + rng_below(r, MAX_SIZE - MIN_SIZE + 1);
}

/* Every OS page of p's n bytes written (and the last byte), from seed. */
static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t off = 0; off < n - 1; off += PAGE)
		p[off] = (unsigned char)(seed + off / PAGE);
	p[n - 1] = (unsigned char)(seed ^ 0x5a);
}

static bool intact(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t off = 0; off < n - 1; off += PAGE)
		if (p[off] != (unsigned char)(seed + off / PAGE))
			return false;
	return p[n - 1] == (unsigned char)(seed ^ 0x5a);
}

static void test_shared(void)
{
	bool hardened = getenv("HAKMEM_TEST_HARDENED") != NULL;
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); /* resident memory by 4 KiB pages */
	unsigned char *slot[SLOTS] = { 0 };
	size_t size[SLOTS] = { 0 };
	unsigned seed[SLOTS] = { 0 };
	uint64_t r = 7;
	size_t start = rss_bytes(), peak = start;
	unsigned long ops = test_scaled(20000), damaged = 0;
	for (unsigned long i = 0; i < ops; i++) {
		unsigned k = (unsigned)rng_below(&r, SLOTS);
		if (slot[k] != NULL) {
			damaged += !intact(slot[k], size[k], seed[k]);
			free(slot[k]);
			slot[k] = NULL;
			continue;
		}
		size[k] = random_size(&r);
		seed[k] = (unsigned)i;
		slot[k] = malloc(size[k]);
		if (!CHECK(slot[k] != NULL))
			return;
		fill(slot[k], size[k], seed[k]);
		if ((i & 63) == 0) {
			size_t now = rss_bytes();
			peak = now > peak ? now : peak;
		}
	}
	CHECKF(damaged == 0, "%lu blocks changed before their free", damaged);
	for (unsigned k = 0; k < SLOTS; k++) {
		if (slot[k] != NULL)
			CHECK(intact(slot[k], size[k], seed[k]));
		free(slot[k]);
	}
	if (getenv("TEST_NO_RSS") == NULL && !hardened)
		CHECKF(peak - start <= 7 * MiB, "resident memory grew by %zu KiB, at most %zu allowed",
		       (peak - start) >> 10, (7 * MiB) >> 10);
	/* All freed: malloc_trim gives the pages' memory back, the page the
	 * heap keeps empty too. */
	malloc_trim(0);
	size_t after = rss_bytes();
	if (getenv("TEST_NO_RSS") == NULL)
		CHECKF(after <= start + MiB, "resident memory %zu KiB after malloc_trim, %zu KiB before the blocks",
		       after >> 10, start >> 10);
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
}

static void test_usable_and_realloc(void)
{
	enum { N = 24 };
	unsigned char *p[N];
	size_t n[N];
	uint64_t r = 11;
	for (int i = 0; i < N; i++) {
		n[i] = random_size(&r);
		p[i] = malloc(n[i]);
		if (!CHECK(p[i] != NULL))
			return;
		memset(p[i], i + 1, n[i]);
	}
	for (int i = 0; i < N; i++) {
		size_t u = malloc_usable_size(p[i]);
		CHECKF(u >= n[i], "usable size %zu of a %zu-byte block", u, n[i]);
		if (testing_hakmem() && getenv("HAKMEM_TEST_HARDENED") == NULL)
			CHECKF(u < n[i] + SLICE, "usable size %zu of a %zu-byte block: more than a slice over",
			       u, n[i]);
		memset(p[i] + n[i], 0xee, u - n[i]); /* its tail is the block's */
	}
	for (int i = 0; i < N; i++) {
		size_t bad = 0;
		for (size_t off = 0; off < n[i]; off++)
			bad += p[i][off] != (unsigned char)(i + 1);
		CHECKF(bad == 0, "block %d: %zu bytes changed by its neighbours' tails", i, bad);
	}
	/* realloc to every kind of size from a block of these sizes, and back. */
	static const size_t to[] = { 8192, 12000, 16384, 70000, 200000, 300000, 524288, 600000,
				     3 << 20, 100 };
	for (int i = 0; i < N; i++) {
		size_t want = to[i % (sizeof to / sizeof *to)];
		size_t keep = want < n[i] ? want : n[i];
		unsigned char *q = realloc(p[i], want);
		if (!CHECK(q != NULL))
			return;
		size_t bad = 0;
		for (size_t off = 0; off < keep; off++)
			bad += q[off] != (unsigned char)(i + 1);
		CHECKF(bad == 0, "realloc %zu -> %zu: %zu bytes changed", n[i], want, bad);
		CHECK(malloc_usable_size(q) >= want);
		memset(q, i + 1, want);
		unsigned char *back = realloc(q, n[i]);
		if (!CHECK(back != NULL))
			return;
		bad = 0;
		for (size_t off = 0; off < keep; off++)
			bad += back[off] != (unsigned char)(i + 1);
		CHECKF(bad == 0, "realloc %zu -> %zu -> %zu: %zu bytes changed", n[i], want, n[i], bad);
		CHECK(malloc_usable_size(back) >= n[i]);
		p[i] = back;
	}
	for (int i = 0; i < N; i++)
		free(p[i]);
}

enum { HANDED = 64 };
static unsigned char *handed[HANDED];

static void *free_handed(void *arg)
{
	(void)arg;
	for (int i = 0; i < HANDED; i++)
		free(handed[i]);
	return NULL;
}

/* Blocks freed by another thread come back to their owner's pages. */
static void test_remote(void)
{
	bool hardened = getenv("HAKMEM_TEST_HARDENED") != NULL;
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	uint64_t r = 13;
	size_t start = rss_bytes(), peak = start;
	for (int round = 0; round < 8; round++) {
		for (int i = 0; i < HANDED; i++) {
			size_t n = random_size(&r) / 4; /* 16-128 KiB: some span, some not */
			n = n < MIN_SIZE ? MIN_SIZE + n : n;
			handed[i] = malloc(n);
			if (!CHECK(handed[i] != NULL))
				return;
			fill(handed[i], n, (unsigned)i);
		}
		size_t now = rss_bytes();
		peak = now > peak ? now : peak;
		pthread_t t;
		if (!CHECK(pthread_create(&t, NULL, free_handed, NULL) == 0))
			return;
		pthread_join(t, NULL);
	}
	/* Eight rounds of at most 64 x 192 KiB (12 MiB) each: the rounds
	 * after the first reuse the memory the other thread freed. */
	if (getenv("TEST_NO_RSS") == NULL && !hardened)
		CHECKF(peak - start <= 24 * MiB, "resident memory grew by %zu KiB over 8 rounds",
		       (peak - start) >> 10);
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
}

static struct hak_stats before, after;

static void *thread_with_blocks(void *arg)
{
	(void)arg;
	enum { N = 40 };
	void *p[N];
	for (int i = 0; i < N; i++)
		p[i] = malloc(300000);
	hak_stats_get(&after);
	for (int i = 0; i < N; i++)
		free(p[i]);
	return NULL;
}

static void test_stats(void)
{
	if (!hak_stats_get) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return;
	}
	hak_stats_get(&before);
	pthread_t t;
	if (!CHECK(pthread_create(&t, NULL, thread_with_blocks, NULL) == 0))
		return;
	pthread_join(t, NULL);
	int c = stats_class_of(&after, 300000);
	if (CHECKF(c >= 0, "no class holds 300000-byte blocks")) {
		uint64_t delta = after.classes[c].live - before.classes[c].live;
		CHECKF(delta == 40, "class of %zu-byte blocks: live grew by %llu, want 40",
		       after.classes[c].block_size, (unsigned long long)delta);
	}
	struct hak_stats end;
	hak_stats_get(&end);
	stats_class_live_back(&end, &before, c);
}

int main(void)
{
	check_init("span_pages");
	test_shared();
	test_usable_and_realloc();
	test_remote();
	test_stats();
	return check_finish();
}
