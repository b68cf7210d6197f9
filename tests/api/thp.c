/*
 * thp.c: transparent huge pages for large heaps of small blocks
 * (HAKMEM_THP: past 4 MiB in the speed profile, 32 MiB in balanced, never
 * in lean).
 *
 * A program with 1 MiB of small blocks gets no huge page: a small heap is
 * not rounded up to 2 MiB.  One with 64 MiB gets huge pages where hakmem
 * asks for them (not with HAKMEM_THP=0 or in lean).  malloc_trim gives the
 * memory back all the same, and a heap grown again where it was purged
 * gets no more huge pages than the first time (a purge breaks a huge page
 * once, and the range stays on small pages).  Skipped where the kernel
 * makes no huge page on request (/sys/kernel/mm/transparent_hugepage/enabled
 * is [never]), and against glibc.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocator.h"
#include "check.h"
#include "rss.h"

#define BLOCK 64

static size_t anon_huge_bytes(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (f == NULL)
		return 0;
	char line[256];
	size_t kb = 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "AnonHugePages: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

static bool kernel_makes_huge_pages(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f == NULL)
		return false;
	char line[128] = "";
	if (fgets(line, sizeof line, f) == NULL)
		line[0] = '\0';
	fclose(f);
	return strstr(line, "[never]") == NULL;
}

/* Allocate `bytes` of small blocks and write them: returns the blocks. */
static void **fill(size_t bytes)
{
	size_t n = bytes / BLOCK;
	void **p = malloc(n * sizeof *p);
	if (!CHECK(p != NULL))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		p[i] = malloc(BLOCK);
		if (p[i] != NULL)
			memset(p[i], 1, BLOCK);
	}
	return p;
}

static void drain(void **p, size_t bytes)
{
	for (size_t i = 0; p != NULL && i < bytes / BLOCK; i++)
		free(p[i]);
	free(p);
}

int main(void)
{
	check_init("thp");
	if (!testing_hakmem()) {
		check_skip("huge pages are hakmem's policy, not glibc's");
		return check_finish();
	}
	if (!kernel_makes_huge_pages()) {
		check_skip("the kernel's transparent huge pages are off");
		return check_finish();
	}
	size_t start = rss_bytes();

	void **small = fill(1 * MiB);
	CHECKF(anon_huge_bytes() == 0, "1 MiB of %d-byte blocks: %zu KiB on huge pages",
	       BLOCK, anon_huge_bytes() >> 10);

	size_t big = 64 * MiB;
	void **p = fill(big);
	size_t first = anon_huge_bytes();
	if (hakmem_asks_huge_pages())
		CHECKF(first > 0, "64 MiB of %d-byte blocks: no huge page", BLOCK);
	else
		CHECKF(first == 0, "huge pages off, yet %zu KiB on them", first >> 10);

	drain(p, big);
	drain(small, 1 * MiB);
	malloc_trim(0);
	size_t trimmed = rss_bytes();
	CHECKF(trimmed <= start + 8 * MiB, "after malloc_trim: RSS %zu KiB, %zu KiB at the start",
	       trimmed >> 10, start >> 10);
	CHECKF(anon_huge_bytes() == 0, "after malloc_trim: %zu KiB still on huge pages",
	       anon_huge_bytes() >> 10);

	p = fill(big);
	size_t second = anon_huge_bytes();
	CHECKF(second <= first, "grown again: %zu KiB on huge pages, %zu KiB the first time",
	       second >> 10, first >> 10);
	drain(p, big);
	malloc_trim(0);
	CHECKF(rss_bytes() <= start + 8 * MiB, "after the second malloc_trim: RSS %zu KiB",
	       rss_bytes() >> 10);
	printf("huge pages: %zu KiB the first time, %zu KiB grown again\n", first >> 10,
	       second >> 10);
	return check_finish();
}
