/*
 * purge_batches.c: a single-threaded program that frees much more than its
 * heap keeps gives the excess back in a few coalesced ranges, not one page
 * at a time.  Without a purger thread hakmem purges on the owner's own
 * paths whatever free memory exceeds idle_keep; it once purged exactly the
 * excess, so each page emptied past the keep cost a system call of its own
 * (and, past the heap's first 32 MiB, another to keep the huge page it
 * split from forming again): a program whose collector drops 100 MiB made
 * thousands of calls.  48 MiB of 256-byte blocks (768 pages of 64 KiB) are
 * freed in the order they were allocated, so pages empty one by one: the
 * memory system calls while freeing must stay under a third of the pages,
 * and the memory must still go back (at most idle_keep and 2 MiB more
 * resident than before: the class's page, the allocator's own), and
 * reading the statistics after must leave the purged pages unmapped.  The
 * count comes from hak_stats_get: skipped under another allocator.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"
#include "rss.h"

#pragma weak hak_stats_get

#define BLOCK 256
#define TOTAL ((size_t)48 << 20)
#define PAGE ((size_t)64 << 10) /* hakmem's small page */
#define PAGES (TOTAL / PAGE)

static uint64_t syscalls(void)
{
	struct hak_stats s;
	hak_stats_get(&s);
	return s.syscalls;
}

/* The 64 KiB pages that held the blocks of p whose first OS page (a small
 * page's header) is mapped.  Reading the statistics must not read a purged
 * page: the read maps it again, which some kernels count as resident (the
 * 6.18 of the project's VMs, which has no zero page) and all leave in the
 * page tables, where mincore sees it. */
static size_t headers_mapped(char **p, size_t count)
{
	size_t mapped = 0, os_page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t last = 0;
	for (size_t i = 0; i < count; i++) {
		uintptr_t base = (uintptr_t)p[i] & ~(uintptr_t)(PAGE - 1);
		unsigned char in_core;
		if (base == last)
			continue;
		last = base;
		if (mincore((void *)base, os_page, &in_core) == 0 &&
		    (in_core & 1))
			mapped++;
	}
	return mapped;
}

int main(void)
{
	check_init("purge_batches");
	if (hak_stats_get == NULL) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return check_finish();
	}
	size_t count = TOTAL / BLOCK;
	char **p = calloc(count, sizeof *p);
	if (!CHECK(p != NULL))
		return check_finish();
	memset(p, 0, count * sizeof *p); /* resident before the count starts */
	size_t before = rss_bytes();
	for (size_t i = 0; i < count; i++) {
		p[i] = malloc(BLOCK);
		if (!CHECK(p[i] != NULL))
			return check_finish();
		memset(p[i], (int)i, BLOCK);
	}
	uint64_t calls = syscalls();
	for (size_t i = 0; i < count; i++)
		free(p[i]);
	calls = syscalls() - calls;
	size_t after = rss_bytes();
	CHECKF(calls < PAGES / 3, "%zu pages emptied one by one: %llu memory system calls",
	       (size_t)PAGES, (unsigned long long)calls);
	CHECKF(after <= before + hakmem_idle_keep() + 2 * MiB,
	       "48 MiB freed: RSS %zu KiB before, %zu KiB after", before >> 10, after >> 10);
	size_t mapped = headers_mapped(p, count), kept = (hakmem_idle_keep() + 2 * MiB) / PAGE;
	CHECKF(mapped <= kept, "after the statistics were read, %zu pages' headers mapped, at most %zu allowed",
	       mapped, kept);
	free(p);
	return check_finish();
}
