/*
 * page_check.c: the debug build's page checker catches a corrupted page.
 * Run with the debug library preloaded (build/debug/libhakmem.so, `make
 * debug`); each case corrupts one page in a child and then allocates until
 * the page changes state, where the checker must report it, one line
 * naming what is wrong, and abort:
 *   - a small page's `used` one too high;
 *   - a small block freed twice by its owner (a cycle in local_free);
 *   - a medium page's bitmap with a live block's bit set (marked free).
 * A control case does the same work without corrupting anything and must
 * end normally: the checker finds nothing wrong in a sound heap.
 * On the release library nothing is checked, and the test fails.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"
#include "internal.h" /* the page header, to corrupt it */

#define SMALL 48
#define MEDIUM 8000
#define MANY 20000

static void *blocks[MANY];

/* Allocate until far more blocks than a page holds came out. */
static void allocate_on(size_t size)
{
	for (int i = 0; i < MANY; i++)
		blocks[i] = malloc(size);
}

static void sound(void *arg)
{
	(void)arg;
	void *a = malloc(SMALL), *b = malloc(SMALL);
	free(a);
	free(b);
	allocate_on(SMALL);
	for (int i = 0; i < MANY; i++)
		free(blocks[i]);
	allocate_on(MEDIUM);
	for (int i = 0; i < MANY; i += 2)
		free(blocks[i]);
}

static void used_off_by_one(void *arg)
{
	(void)arg;
	void *p = malloc(SMALL);
	hk_page_of_block(p)->used++;
	allocate_on(SMALL);
}

static void double_free(void *arg)
{
	(void)arg;
	void *a = malloc(SMALL), *b = malloc(SMALL);
	free(a);
	free(b);
	free(a); /* a -> b -> a: a cycle in the page's local list */
	allocate_on(SMALL);
}

static void bitmap_bit_flipped(void *arg)
{
	(void)arg;
	char *p = malloc(MEDIUM);
	struct hk_page *pg = hk_page_of_block(p);
	unsigned i = (unsigned)((p - pg->blocks) / pg->block_size);
	pg->free_map[i / 64] |= (uint64_t)1 << (i % 64);
	allocate_on(MEDIUM);
}

static void expect_report(const char *name, void (*fn)(void *), const char *what)
{
	struct child_result r;
	if (!CHECK(run_in_child(fn, NULL, 60, &r) == 0))
		return;
	char how[64];
	CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
	       "%s: %s, expected the checker's abort", name,
	       describe_status(r.status, how, sizeof how));
	CHECKF(strstr(r.err, "hakmem: page check failed at ") != NULL && strstr(r.err, what),
	       "%s: stderr was \"%s\", expected a page check naming \"%s\"", name, r.err, what);
}

int main(void)
{
	check_init("page_check");
	struct child_result r;
	if (CHECK(run_in_child(sound, NULL, 60, &r) == 0)) {
		char how[64];
		CHECKF(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && r.err_len == 0,
		       "a sound heap: %s, stderr \"%s\"", describe_status(r.status, how, sizeof how),
		       r.err);
	}
	expect_report("used one too high", used_off_by_one, "used + local_free + unbumped");
	expect_report("a block freed twice", double_free, "twice in the free lists");
	expect_report("a live block marked free", bitmap_bit_flipped, "does not match the bitmap");
	return check_finish();
}
