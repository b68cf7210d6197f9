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
 * as every page still holds two blocks.
 */
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

int main(void)
{
	check_init("trim_in_use");
	size_t count = PAGES * (PAGE / BLOCK);
	char **p = calloc(count, sizeof *p);
	if (!CHECK(p != NULL))
		return check_finish();
	for (size_t i = 0; i < count; i++) {
		p[i] = malloc(BLOCK);
		if (!CHECK(p[i] != NULL))
			return check_finish();
		memset(p[i], 1, BLOCK);
	}
	size_t peak = rss_bytes(), freed = 0;
	for (size_t i = 0; i < count; i++) {
		if (((uintptr_t)p[i] & (PAGE - 1)) >= 2 * BLOCK) {
			free(p[i]);
			p[i] = NULL;
			freed += BLOCK;
		}
	}
	CHECKF(freed >= count * BLOCK / 2, "only %zu of %zu KiB freed: blocks not laid out "
	       "in 256 KiB pages", freed >> 10, count * BLOCK >> 10);
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
	CHECKF(now + freed / 2 <= peak,
	       "RSS %zu KiB at the peak, still %zu KiB 20 s after %zu KiB were freed",
	       peak >> 10, now >> 10, freed >> 10);
	for (size_t i = 0; i < count; i++)
		free(p[i]);
	free(p);
	return check_finish();
}
