/*
 * double_free.c: a block of 5 KiB or more freed twice while its page is
 * still in use kills the process with SIGABRT after exactly the one line
 * of invalid_pointer.c:
 *
 *     hakmem: free(): invalid pointer 0x7f0012345000
 *
 * (hakmem's medium and large pages keep a bitmap of their free blocks, and
 * the second free finds its bit set).  Blocks of 4 KiB and less are not
 * covered yet: see hardened_xfail.c.  Each double free runs in a child
 * process, after the block's neighbour was allocated so that the page stays
 * in use.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"
#include "compat.h"

struct double_free {
	size_t size;
	const char *second; /* the call that frees the block again */
};

static void *freed_block;

static void free_twice(void *arg)
{
	const struct double_free *d = arg;
	void *keep = malloc(d->size);
	void *p = malloc(d->size);
	if (keep == NULL || p == NULL)
		exit(3);
	memset(p, 0x5a, d->size);
	freed_block = p;
	free(p);
	if (strcmp(d->second, "free") == 0)
		free(p);
	else
		free_sized(p, d->size);
	/* Not detected: the bitmap now counts a block free that is not, and
	 * the next mallocs hand it out twice. */
	void *a = malloc(d->size), *b = malloc(d->size);
	(void)a;
	(void)b;
}

static void expect_abort(const struct double_free *d)
{
	struct child_result r;
	if (!CHECK(run_in_child(free_twice, (void *)d, 10, &r) == 0))
		return;
	char how[64], prefix[64];
	snprintf(prefix, sizeof prefix, "hakmem: %s(): invalid pointer 0x", d->second);
	size_t len = strlen(prefix);
	int ok = WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT &&
		 strncmp(r.err, prefix, len) == 0;
	char *end = NULL;
	if (ok) {
		strtoumax(r.err + len, &end, 16);
		ok = end != r.err + len && strcmp(end, "\n") == 0;
	}
	CHECKF(ok, "%zu-byte block freed, then %s() again: child %s, stderr \"%s\"",
	       d->size, d->second, describe_status(r.status, how, sizeof how), r.err);
}

int main(void)
{
	check_init("double_free");
	static const size_t sizes[] = { 4097, 5000, 8192, 16384, 20000, 100000, 300000, 524288 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		struct double_free d = { sizes[i], "free" };
		expect_abort(&d);
		d.second = "free_sized";
		expect_abort(&d);
	}
	return check_finish();
}
