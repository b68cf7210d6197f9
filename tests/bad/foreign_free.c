/*
 * foreign_free.c: a 16-byte-aligned pointer into another thread's arena
 * that starts no block it handed out, freed by this thread, kills the
 * process with SIGABRT after exactly the one line of invalid_pointer.c:
 *
 *     hakmem: free(): invalid pointer 0x7f0012345670
 *
 * Such a free takes hakmem's path for other threads' blocks, which finds
 * the block's page and class in the arena's class map without reading the
 * page: the arena's header page, pages of each region never handed out,
 * a page's own header and addresses inside blocks must all be told apart
 * there.  The arena is found the way hakmem lays it out (4 GiB, aligned),
 * from blocks of a thread that keeps them; each bad free runs in a child.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

#define ARENA ((uintptr_t)1 << 32)

struct owner {
	size_t size;
	void *block;
	int hold[2]; /* the thread waits on it: its heap stays its own */
};

static void *own_blocks(void *arg)
{
	struct owner *o = arg;
	char *p = malloc(o->size), c;
	if (p == NULL)
		exit(3);
	memset(p, 1, o->size);
	__atomic_store_n(&o->block, p, __ATOMIC_RELEASE);
	return read(o->hold[0], &c, 1) < 0 ? NULL : p;
}

/* The bad pointer: `from` is 0 for the arena's base, 1 for the block's
 * address, 2 for its page's base (small pages: 64 KiB). */
struct bad_free {
	size_t size;
	int from;
	uintptr_t offset;
	const char *what;
};

static void bad_free(void *arg)
{
	const struct bad_free *d = arg;
	struct owner o = { .size = d->size };
	pthread_t t;
	if (pipe(o.hold) != 0 || pthread_create(&t, NULL, own_blocks, &o) != 0)
		exit(3);
	while (__atomic_load_n(&o.block, __ATOMIC_ACQUIRE) == NULL)
		usleep(1000);
	uintptr_t b = (uintptr_t)o.block;
	uintptr_t base = d->from == 0 ? b & ~(ARENA - 1) : d->from == 1 ? b : b & ~(uintptr_t)0xFFFF;
	free((void *)(base + d->offset));
	exit(4); /* not detected */
}

static void expect_abort(const struct bad_free *d)
{
	struct child_result r;
	if (!CHECK(run_in_child(bad_free, (void *)d, 10, &r) == 0))
		return;
	char how[64];
	CHECKF(ended_on_invalid_pointer(&r, "free"),
	       "free of %s (another thread's %zu-byte block's arena): child %s, stderr \"%s\"",
	       d->what, d->size, describe_status(r.status, how, sizeof how), r.err);
}

int main(void)
{
	check_init("foreign_free");
	static const struct bad_free cases[] = {
		{ 32, 0, 64, "the arena's header page" },
		{ 32, 0, 0x10000 * 30000, "a small page never handed out" },
		{ 5000, 0, ((uintptr_t)2 << 30) + ((uintptr_t)1000 << 18), "a medium page never handed out" },
		{ 100000, 0, ((uintptr_t)3 << 30) + ((uintptr_t)200 << 22), "a large page never handed out" },
		{ 32, 2, 0, "a small page's header" },
		{ 32, 2, 64, "a small page's header, + 64" },
		{ 32, 1, 16, "the middle of a 32-byte block" },
		{ 1000, 1, 512, "the middle of a 1000-byte block" },
		{ 5000, 1, 4096, "the middle of a 5000-byte block" },
		{ 100000, 1, 16, "a 100000-byte block + 16" },
		{ 300000, 1, 65536, "a 300000-byte block + 64 KiB (a slice inside a span block)" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		expect_abort(&cases[i]);
	return check_finish();
}
