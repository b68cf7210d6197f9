/*
 * medium_large_free.c: a block of 5 KiB .. 512 KiB freed twice while its
 * page is still in use, or freed at an address inside it, kills the process
 * with SIGABRT after exactly the one line of invalid_pointer.c:
 *
 *     hakmem: free(): invalid pointer 0x7f0012345000
 *
 * (the call's name in place of free).  hakmem's medium and large pages keep
 * a bitmap of their free blocks: a second free finds its bit set, and an
 * address inside a block is not a whole number of blocks from the first
 * (in a span page, where blocks of 64 KiB and up are runs of 16 KiB slices,
 * or starts no run).
 * Blocks of 4 KiB and less are not covered yet: see hardened_xfail.c.  Each
 * bad free runs in a child process, after the block's neighbour was
 * allocated so that the page stays in use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "child.h"
#include "compat.h"

struct bad_free {
	size_t size;
	size_t offset;      /* 0: free the block twice; else free p + offset */
	const char *call;   /* the call that makes the bad free */
};

static void bad_free(void *arg)
{
	const struct bad_free *d = arg;
	void *keep = malloc(d->size);
	char *p = malloc(d->size);
	if (keep == NULL || p == NULL)
		exit(3);
	memset(p, 0x5a, d->size);
	if (d->offset == 0)
		free(p);
	if (strcmp(d->call, "free") == 0)
		free(p + d->offset);
	else
		free_sized(p + d->offset, d->size - d->offset);
	/* Not detected: the bitmap now counts a block free that is not, and
	 * the next mallocs hand it out twice. */
	void *a = malloc(d->size), *b = malloc(d->size);
	(void)a;
	(void)b;
}

static void expect_abort(const struct bad_free *d)
{
	struct child_result r;
	if (!CHECK(run_in_child(bad_free, (void *)d, 10, &r) == 0))
		return;
	char how[64];
	CHECKF(ended_on_invalid_pointer(&r, d->call), "%zu-byte block, %s() %s: child %s, stderr \"%s\"",
	       d->size, d->call, d->offset ? "at an address inside it" : "after free()",
	       describe_status(r.status, how, sizeof how), r.err);
}

int main(void)
{
	check_init("medium_large_free");
	static const size_t sizes[] = { 4097, 5000, 8192, 16384, 20000, 100000, 300000, 524288 };
	/* 16384 and 65536: a slice inside a block of a span page (blocks of
	 * 64 KiB and up, src/span_page.c), which starts no block. */
	static const size_t offsets[] = { 0, 16, 4096, 16384, 65536 };
	static const char *const calls[] = { "free", "free_sized" };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		for (size_t j = 0; j < sizeof offsets / sizeof *offsets; j++)
			for (size_t k = 0; k < 2 && offsets[j] < sizes[i]; k++) {
				struct bad_free d = { sizes[i], offsets[j], calls[k] };
				expect_abort(&d);
			}
	return check_finish();
}
