/*
 * arena_release.c: an arena that becomes wholly empty gives its address
 * space back.  A heap grows into further arenas when one region is full
 * (hakmem's arenas are 4 GiB; 1 GiB of it holds large blocks); once those
 * blocks are freed, the extra arenas must be unmapped:
 *   - at once by malloc_trim (hak_collect);
 *   - by the background purger, in a program that frees and then idles;
 *   - under a 1 GiB address-space limit (RLIMIT_AS, where arenas are small),
 *     when a later request finds no address space: the empty arenas go and
 *     the request succeeds.
 * The arena count and the reserved bytes come from hak_stats_get; that the
 * range is really unmapped is checked with mincore, which fails with ENOMEM
 * on addresses that are not mapped.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"
#include "child.h"
#include "hakmem.h"
#include "pattern.h"

#pragma weak hak_stats_get

#define LIMIT ((size_t)1 << 30)

static struct hak_stats stats(void)
{
	struct hak_stats s;
	hak_stats_get(&s);
	return s;
}

static bool is_mapped(const void *p)
{
	unsigned char v;
	void *page = (void *)((uintptr_t)p & ~(uintptr_t)4095);
	return mincore(page, 4096, &v) == 0 || errno != ENOMEM;
}

struct fill {
	void **blocks;
	size_t count;
};

/* Allocate count blocks of size (fewer if malloc fails), each marked. */
static struct fill fill(size_t size, size_t count)
{
	struct fill f = { NULL, 0 };
	f.blocks = mmap(NULL, count * sizeof *f.blocks, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(f.blocks != MAP_FAILED))
		return f;
	for (; f.count < count; f.count++) {
		f.blocks[f.count] = malloc(size);
		if (f.blocks[f.count] == NULL)
			break;
		pattern_fill(f.blocks[f.count], 16, f.count);
	}
	return f;
}

/* Free every block, checking its mark; the first block of another arena
 * than the first block's is kept in *other (NULL: all in one arena). */
static void release(struct fill *f, void **other)
{
	uintptr_t first_arena = (uintptr_t)f->blocks[0] >> 32;
	*other = NULL;
	for (size_t i = 0; i < f->count; i++) {
		CHECKF(pattern_ok(f->blocks[i], 16, i), "block %zu changed", i);
		if (*other == NULL && (uintptr_t)f->blocks[i] >> 32 != first_arena)
			*other = f->blocks[i];
		free(f->blocks[i]);
	}
	munmap(f->blocks, f->count * sizeof *f->blocks);
}

/* 1.2 GiB of 512 KiB blocks: more than the first arena's large region.
 * The blocks are never written beyond their first bytes, so little of it
 * becomes resident. */
static void grow_and_trim(const struct hak_stats *start)
{
	struct fill f = fill(512 << 10, 2400);
	CHECKF(f.count == 2400, "only %zu blocks of 512 KiB", f.count);
	struct hak_stats grown = stats();
	CHECKF(grown.arenas > start->arenas, "arenas: %llu with 1.2 GiB of large blocks, %llu before",
	       (unsigned long long)grown.arenas, (unsigned long long)start->arenas);
	void *other;
	release(&f, &other);
	CHECK(other != NULL);
	malloc_trim(0);
	struct hak_stats trimmed = stats();
	CHECKF(trimmed.arenas == start->arenas && trimmed.reserved_bytes == start->reserved_bytes,
	       "after malloc_trim: %llu arenas, %llu MiB reserved; at start %llu, %llu MiB",
	       (unsigned long long)trimmed.arenas,
	       (unsigned long long)(trimmed.reserved_bytes >> 20),
	       (unsigned long long)start->arenas,
	       (unsigned long long)(start->reserved_bytes >> 20));
	CHECKF(other == NULL || !is_mapped(other), "%p, in a released arena, is still mapped", other);
}

/* The same, but nothing asks: the purger must find the empty arena. */
static void grow_and_idle(const struct hak_stats *start)
{
	struct fill f = fill(512 << 10, 2400);
	void *other;
	release(&f, &other);
	struct hak_stats now = stats();
	for (int waited = 0; waited < 100 && now.arenas != start->arenas; waited++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		now = stats();
	}
	CHECKF(now.arenas == start->arenas,
	       "10 s after the blocks were freed: %llu arenas, %llu at start",
	       (unsigned long long)now.arenas, (unsigned long long)start->arenas);
	CHECKF(other == NULL || !is_mapped(other), "%p, in a released arena, is still mapped", other);
}

/* Under the limit arenas are compact (256 MiB of small pages): 500 MiB of
 * 1 KiB blocks take two or more.  Freed and not trimmed, they hold address
 * space that a 600 MiB block then needs. */
static int limited_child(void)
{
	check_init("arena_release (limited child)");
	free(malloc(1));
	struct hak_stats start = stats();
	struct fill f = fill(1024, (size_t)500 << 10);
	CHECKF(f.count == (size_t)500 << 10, "only %zu blocks of 1 KiB", f.count);
	CHECKF(stats().arenas >= start.arenas + 1, "arenas: %llu with 500 MiB of 1 KiB blocks",
	       (unsigned long long)stats().arenas);
	void *other;
	release(&f, &other);
	size_t big = (size_t)600 << 20;
	char *p = malloc(big);
	CHECKF(p != NULL, "malloc(600 MiB) after freeing 500 MiB under a 1 GiB limit: errno %d",
	       errno);
	if (p != NULL) {
		p[0] = p[big - 1] = 1;
		free(p);
	}
	malloc_trim(0);
	CHECKF(stats().arenas == start.arenas, "after malloc_trim: %llu arenas, %llu at start",
	       (unsigned long long)stats().arenas, (unsigned long long)start.arenas);
	return check_finish();
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--limited") == 0)
		return limited_child();
	check_init("arena_release");
	if (!hak_stats_get) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return check_finish();
	}
	free(malloc(1)); /* the thread's heap and first arena */
	malloc_trim(0);
	struct hak_stats start = stats();
	grow_and_trim(&start);
	grow_and_idle(&start);

	check_limited_rerun(argv[0], LIMIT);
	return check_finish();
}
