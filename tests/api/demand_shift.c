/*
 * demand_shift.c: a single-threaded program whose demand moves from one
 * size to another must not hold the memory of both.  It breathes 12 MiB of
 * 1152-byte blocks a few times (allocated, written, freed, taken again
 * within a second: hakmem then keeps more of that size's free pages,
 * README), frees them, and allocates 12 MiB of 4608-byte blocks, which
 * hakmem keeps in pages of another kind.  The resident memory at the end
 * may exceed the small blocks' peak by what an owner keeps idle (idle_keep,
 * 4 MiB in the default profile) and 3 MiB of slack, not by the 12 MiB the
 * small blocks' pages held: they go back as the new size's pages are
 * taken.  (sqlite3 freeing its sorter's records and then filling its page
 * cache kept 10 MiB so.)  glibc reuses the freed memory for the new size.
 * Not run under HAKMEM_PROFILE=speed, whose idle_keep is unbounded.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rss.h"

#define MiB ((size_t)1 << 20)
#define TOTAL (12 * MiB)

static void **fill(size_t size)
{
	size_t count = TOTAL / size;
	void **p = calloc(count, sizeof *p);
	if (p == NULL)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		p[i] = malloc(size);
		if (p[i] != NULL)
			memset(p[i], 1, size);
	}
	return p;
}

static void drain(void **p, size_t size)
{
	for (size_t i = 0; i < TOTAL / size; i++)
		free(p[i]);
	free(p);
}

int main(void)
{
	check_init("demand_shift");
	const char *profile = getenv("HAKMEM_PROFILE");
	if (profile != NULL && strcmp(profile, "speed") == 0) {
		check_skip("HAKMEM_PROFILE=speed keeps free memory by design");
		return check_finish();
	}
	size_t peak = 0;
	for (int round = 0; round < 6; round++) {
		void **small = fill(1152);
		if (!CHECK(small != NULL))
			return check_finish();
		size_t now = rss_bytes();
		peak = now > peak ? now : peak;
		drain(small, 1152);
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL);
	}
	void **medium = fill(4608);
	if (!CHECK(medium != NULL))
		return check_finish();
	size_t after = rss_bytes();
	size_t slack = hakmem_idle_keep() + 3 * MiB;
	CHECKF(after <= peak + slack,
	       "RSS %zu KiB with 12 MiB of 4608-byte blocks, after a peak of %zu KiB "
	       "with 12 MiB of 1152-byte blocks, all freed (at most %zu KiB more allowed)",
	       after >> 10, peak >> 10, slack >> 10);
	drain(medium, 4608);
	return check_finish();
}
