/*
 * trim_in_use.c: memory of blocks freed above the live ones of a page that
 * stays in use goes back to the system while the program goes on
 * allocating: its footprint follows its recent peaks, not its highest one.
 * (hakmem's owner thread trims its medium and large pages every trim
 * period, twice the purge delay.)  The test fills 64 of hakmem's 256 KiB
 * medium pages with 8 KiB blocks, writes them, frees all but the two
 * lowest blocks of each page, and then keeps mallocing and freeing one
 * 8 KiB block every millisecond: within 20 s RSS must fall by at least
 * half of what was freed.  A purge of whole pages cannot give it back,
 * as every page still holds two blocks.  Then the same in a thread that
 * exits while main holds the remaining blocks and allocates on: the
 * exited thread's heap, which no new thread adopts, gives it back as an
 * owner would (hakmem: a trim period after the exit), within 20 s.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rss.h"

#define BLOCK 8192
#define PAGE ((uintptr_t)256 << 10)
#define PAGES 64

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Fill PAGES pages with BLOCK-byte blocks, write them, note RSS in *peak,
 * and free all but the two lowest blocks of each page; the rest stay in p.
 * Returns the bytes freed. */
static size_t fill_and_thin(char **p, size_t count, size_t *peak)
{
	size_t freed = 0;
	for (size_t i = 0; i < count; i++) {
		p[i] = malloc(BLOCK);
		if (!CHECK(p[i] != NULL))
			return 0;
		memset(p[i], 1, BLOCK);
	}
	*peak = rss_bytes();
	for (size_t i = 0; i < count; i++) {
		if (((uintptr_t)p[i] & (PAGE - 1)) >= 2 * BLOCK) {
			free(p[i]);
			p[i] = NULL;
			freed += BLOCK;
		}
	}
	CHECKF(freed >= count * BLOCK / 2, "only %zu of %zu KiB freed: blocks not laid out "
	       "in 256 KiB pages", freed >> 10, count * BLOCK >> 10);
	return freed;
}

/* Main mallocs and frees one block a millisecond until RSS is at least
 * half of `freed` below `peak`, or 20 s have passed: RSS then. */
static size_t allocate_until_fallen(size_t peak, size_t freed)
{
	size_t now = rss_bytes();
	for (int waited = 0; now + freed / 2 > peak && waited < 20000; waited++) {
		char *q = malloc(BLOCK);
		if (!CHECK(q != NULL))
			break;
		q[0] = q[BLOCK - 1] = 2;
		free(q);
		sleep_ms(1);
		if (waited % 100 == 0)
			now = rss_bytes();
	}
	return now;
}

/* The owner keeps allocating: its trims give the memory back. */
static void test_owner_goes_on(char **p, size_t count)
{
	size_t peak;
	size_t freed = fill_and_thin(p, count, &peak);
	size_t now = allocate_until_fallen(peak, freed);
	CHECKF(now + freed / 2 <= peak,
	       "RSS %zu KiB at the peak, still %zu KiB 20 s after %zu KiB were freed",
	       peak >> 10, now >> 10, freed >> 10);
	for (size_t i = 0; i < count; i++)
		free(p[i]);
}

struct thinned {
	char **p;
	size_t count, freed, peak;
};

static void *thin_in_thread(void *arg)
{
	struct thinned *t = arg;
	t->freed = fill_and_thin(t->p, t->count, &t->peak);
	return NULL;
}

/* The owner exits while other threads hold blocks of its pages: what it
 * freed goes back while the program goes on. */
static void test_owner_exits(char **p, size_t count)
{
	struct thinned t = { p, count, 0, 0 };
	pthread_t th;
	if (!CHECK(pthread_create(&th, NULL, thin_in_thread, &t) == 0))
		return;
	pthread_join(th, NULL);
	size_t now = allocate_until_fallen(t.peak, t.freed);
	CHECKF(now + t.freed / 2 <= t.peak,
	       "RSS %zu KiB at the thread's peak, %zu KiB 20 s after it freed %zu KiB and exited",
	       t.peak >> 10, now >> 10, t.freed >> 10);
	for (size_t i = 0; i < count; i++)
		free(p[i]);
}

int main(void)
{
	check_init("trim_in_use");
	size_t count = PAGES * (PAGE / BLOCK);
	char **p = calloc(count, sizeof *p);
	if (!CHECK(p != NULL))
		return check_finish();
	test_owner_goes_on(p, count);
	test_owner_exits(p, count);
	free(p);
	return check_finish();
}
