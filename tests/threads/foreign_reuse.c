/*
 * foreign_reuse.c: blocks one thread frees of another thread's heap.
 *
 *  - reuse: a thread that frees 256-byte blocks another thread allocated
 *    gets them back from its next malloc of that size (the last one it
 *    freed: still in its cache), but never 48-byte ones, which share their cache lines
 *    with blocks other threads may be writing;
 *  - bound: a thread that frees 100 K of another thread's blocks and
 *    allocates none keeps only a few of them: the others go home, where
 *    they are free (hak_stats_get counts at most a few hundred live);
 *  - exit: the blocks a thread kept go home when it exits, so that once
 *    the owner collects, no block of the size is live and its pages are
 *    gone.
 *
 * The counts need hakmem's statistics; the rest runs on any allocator but
 * only hakmem's default build promises the reuse, so on glibc and under
 * HAKMEM_TEST_HARDENED (the hardened build) that part is skipped.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"
#include "check.h"
#include "hakmem.h"

#pragma weak hak_stats_get

enum { NBLOCKS = 100000, PEEK = 8 };

static void *blocks[NBLOCKS];

struct job {
	size_t size;     /* of the blocks it frees */
	bool allocate;   /* then allocates PEEK blocks of that size */
	void *got[PEEK];
};

static void *free_them(void *arg)
{
	struct job *job = arg;
	t_free(t_malloc(16)); /* the thread has a heap of its own */
	for (size_t i = 0; i < NBLOCKS; i++)
		t_free(blocks[i]);
	if (job->allocate)
		for (unsigned i = 0; i < PEEK; i++)
			job->got[i] = t_malloc(job->size);
	return NULL;
}

static void run_thread(struct job *job)
{
	pthread_t t;
	if (!CHECK(pthread_create(&t, NULL, free_them, job) == 0))
		exit(check_finish());
	pthread_join(t, NULL);
}

static void allocate_all(size_t size)
{
	for (size_t i = 0; i < NBLOCKS; i++) {
		blocks[i] = t_malloc(size);
		if (!CHECK(blocks[i] != NULL))
			exit(check_finish());
		((char *)blocks[i])[size - 1] = 1;
	}
}

/* Was p one of the blocks the main thread allocated? */
static bool was_main_block(const void *p)
{
	for (size_t i = 0; i < NBLOCKS; i++)
		if (blocks[i] == p)
			return true;
	return false;
}

static uint64_t live_of_size(size_t size, uint64_t *pages)
{
	static struct hak_stats s;
	hak_stats_get(&s);
	for (unsigned c = 0; c < HAK_STATS_CLASSES; c++)
		if (s.classes[c].block_size == size) {
			*pages = s.classes[c].pages;
			return s.classes[c].live;
		}
	*pages = 0;
	return 0;
}

/* A thread frees the main thread's blocks of `size` and allocates PEEK. */
static void test_reuse(size_t size, bool expect_reuse)
{
	allocate_all(size);
	struct job job = {.size = size, .allocate = true};
	run_thread(&job);
	unsigned reused = 0;
	for (unsigned i = 0; i < PEEK; i++)
		reused += was_main_block(job.got[i]);
	/* The last block freed is the first handed out again; not in the
	 * hardened build, whose free lists hold one page's blocks only. */
	bool hardened = getenv("HAKMEM_TEST_HARDENED") != NULL;
	if (hak_stats_get != NULL && (!hardened || !expect_reuse))
		CHECKF(expect_reuse ? was_main_block(job.got[0]) : reused == 0,
		       "%zu-byte blocks: %u of the thread's %d mallocs reused the main thread's",
		       size, reused, PEEK);
	for (unsigned i = 0; i < PEEK; i++)
		t_free(job.got[i]);
}

/* The freeing thread keeps few of them while it lives, and gives them
 * back at exit. */
static pthread_barrier_t freed, measured;

static void *free_and_wait(void *arg)
{
	(void)arg;
	t_free(t_malloc(16));
	for (size_t i = 0; i < NBLOCKS; i++)
		t_free(blocks[i]);
	pthread_barrier_wait(&freed);
	pthread_barrier_wait(&measured);
	return NULL;
}

static void test_bound_and_exit(void)
{
	if (hak_stats_get == NULL) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return;
	}
	uint64_t pages;
	t_collect();
	uint64_t base = live_of_size(256, &pages);
	allocate_all(256);
	pthread_barrier_init(&freed, NULL, 2);
	pthread_barrier_init(&measured, NULL, 2);
	pthread_t t;
	if (!CHECK(pthread_create(&t, NULL, free_and_wait, NULL) == 0))
		return;
	pthread_barrier_wait(&freed);
	/* What the thread keeps, and what it has not sent yet, count as live. */
	uint64_t held = live_of_size(256, &pages) - base;
	pthread_barrier_wait(&measured);
	pthread_join(t, NULL);
	CHECKF(held <= 512, "a thread that freed 100 K blocks of another heap holds %llu",
	       (unsigned long long)held);
	t_collect();
	uint64_t live = live_of_size(256, &pages);
	CHECKF(live == base, "after the thread exited and the owner collected, %llu "
	       "blocks of 256 B are live (%llu before)",
	       (unsigned long long)live, (unsigned long long)base);
	CHECKF(base != 0 || pages == 0, "no 256-byte block is live, but %llu pages hold them",
	       (unsigned long long)pages);
	pthread_barrier_destroy(&freed);
	pthread_barrier_destroy(&measured);
}

int main(void)
{
	check_init("foreign_reuse");
	test_reuse(256, true);
	test_reuse(48, false);
	test_bound_and_exit();
	return check_finish();
}
