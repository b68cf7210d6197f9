/*
 * thread_exit.c: memory of a thread that has exited is not lost.
 *
 *  - reuse: threads run one after another, each allocating, writing and
 *    freeing 96 MiB; resident memory must not add up across them;
 *  - release: a thread allocates 128 MiB and exits, the main thread frees
 *    the blocks (or the thread frees them itself before exiting); after
 *    t_collect() (hak_collect, or malloc_trim on glibc) resident memory
 *    must be back near where it started;
 *  - large reuse: threads run one after another, each allocating 48
 *    blocks of 256 KiB, writing every page and freeing them: once the
 *    first few have faulted in again what an exit gave back, hakmem keeps
 *    more of an exited thread's large pages warm, and the last three
 *    threads take at most a sixth of the first one's page faults on
 *    average (not with
 *    HAKMEM_PURGE_DELAY_MS=0, which purges at once, nor TEST_NO_RSS);
 *  - together: 16 threads each allocate, write and free 16 MiB, wait for
 *    one another and exit; with no further call, resident memory must not
 *    hold what every one of them kept (hakmem keeps a few of their heaps
 *    warm for the next threads, not all 16: 36 MiB after them where all 16
 *    kept 128; glibc 42).
 *
 * TEST_NO_RSS=1 skips the resident-memory bounds (sanitizer runs).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "alloc.h"
#include "check.h"
#include "rng.h"
#include "rss.h"

/* Blocks average about 2 KiB: 128 MiB takes some 64 Ki of them. */
enum { MAX_BLOCKS = 1 << 18 };

struct job {
	size_t total;        /* bytes to allocate */
	int free_own;        /* free them before exiting */
	void **blocks;       /* else left here for the main thread */
	size_t count;
};

static void *allocate_in_thread(void *arg)
{
	struct job *job = arg;
	uint64_t rng = 99;
	size_t done = 0;
	job->count = 0;
	while (done < job->total && job->count < MAX_BLOCKS) {
		/* Mostly small blocks, some medium: many pages of many classes. */
		size_t n = rng_below(&rng, 10) ? 16 + rng_below(&rng, 1000)
					       : 1024 + rng_below(&rng, 30000);
		void *p = t_malloc(n);
		if (!CHECK(p != NULL))
			break;
		memset(p, 0x77, n);
		job->blocks[job->count++] = p;
		done += n;
	}
	if (job->free_own) {
		for (size_t i = 0; i < job->count; i++)
			t_free(job->blocks[i]);
		job->count = 0;
	}
	return NULL;
}

static int rss_checked(void)
{
	return getenv("TEST_NO_RSS") == NULL;
}

enum { LARGE_BLOCKS = 48, LARGE_BLOCK = 256 << 10, LARGE_ROUNDS = 8 };

/* One thread's large blocks, written and freed: its minor page faults. */
static void *large_in_thread(void *arg)
{
	long *faults = arg;
	struct rusage before, after;
	getrusage(RUSAGE_THREAD, &before);
	void *b[LARGE_BLOCKS];
	for (unsigned i = 0; i < LARGE_BLOCKS; i++) {
		b[i] = t_malloc(LARGE_BLOCK);
		if (!CHECK(b[i] != NULL))
			return NULL;
		for (size_t off = 0; off < LARGE_BLOCK; off += 4096)
			((char *)b[i])[off] = (char)i;
	}
	for (unsigned i = 0; i < LARGE_BLOCKS; i++)
		t_free(b[i]);
	getrusage(RUSAGE_THREAD, &after);
	*faults = after.ru_minflt - before.ru_minflt;
	return NULL;
}

static void test_large_reuse(void)
{
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); /* faults by 4 KiB: they show reuse */
	long faults[LARGE_ROUNDS] = {0}, last = 0;
	for (unsigned i = 0; i < LARGE_ROUNDS; i++) {
		pthread_t t;
		if (CHECK(pthread_create(&t, NULL, large_in_thread, &faults[i]) == 0))
			pthread_join(t, NULL);
		if (i >= LARGE_ROUNDS - 3)
			last += faults[i];
	}
	printf("large reuse: the first thread took %ld page faults, each of the last three %ld on average\n",
	       faults[0], last / 3);
	const char *env = getenv("TEST_ALLOCATOR"), *delay = getenv("HAKMEM_PURGE_DELAY_MS");
	bool hakmem = env != NULL && strcmp(env, "hakmem") == 0;
	if (rss_checked() && hakmem && !(delay != NULL && strcmp(delay, "0") == 0))
		CHECKF(last <= faults[0] / 2,
		       "threads that come and go fault in their large blocks again: the "
		       "first took %ld page faults, the last three %ld", faults[0], last);
}

static pthread_barrier_t all_freed;

static void *allocate_free_and_wait(void *arg)
{
	allocate_in_thread(arg);
	pthread_barrier_wait(&all_freed);
	return NULL;
}

static void run_thread(struct job *job)
{
	pthread_t t;
	if (CHECK(pthread_create(&t, NULL, allocate_in_thread, job) == 0))
		pthread_join(t, NULL);
}

static void test_reuse(void **blocks)
{
	size_t first = 0, max = 0;
	unsigned rounds = (unsigned)test_scaled(12);
	for (unsigned i = 0; i < rounds; i++) {
		struct job job = { (size_t)96 << 20, 1, blocks, 0 };
		run_thread(&job);
		size_t rss = rss_bytes();
		if (i == 1)
			first = rss;
		if (rss > max)
			max = rss;
	}
	printf("reuse: RSS after thread 2: %zu MiB, max after %u threads: %zu MiB\n",
	       first / MiB, rounds, max / MiB);
	if (rss_checked() && rounds > 2)
		CHECKF(max <= first + 48 * MiB,
		       "each exited thread's memory adds up: %zu MiB after thread 2, "
		       "%zu MiB later", first / MiB, max / MiB);
}

static void test_release(void **blocks, int free_own)
{
	t_collect();
	size_t before = rss_bytes();
	struct job job = { (size_t)128 << 20, free_own, blocks, 0 };
	run_thread(&job);
	size_t peak = rss_bytes();
	for (size_t i = 0; i < job.count; i++)
		t_free(blocks[i]);
	t_collect();
	size_t after = rss_bytes();
	printf("release (%s): RSS %zu MiB -> %zu MiB -> after collect %zu MiB\n",
	       free_own ? "thread frees" : "main frees", before / MiB, peak / MiB,
	       after / MiB);
	if (rss_checked())
		CHECKF(after <= before + 32 * MiB,
		       "128 MiB from an exited thread, all freed (%s), not released: "
		       "RSS %zu MiB before, %zu MiB after collect",
		       free_own ? "by the thread" : "by main", before / MiB, after / MiB);
}

static void test_together(void)
{
	enum { TOGETHER = 16 };
	static struct job jobs[TOGETHER];
	pthread_t t[TOGETHER];
	size_t each = (size_t)test_scaled(16) << 20;
	t_collect();
	size_t before = rss_bytes();
	if (!CHECK(pthread_barrier_init(&all_freed, NULL, TOGETHER) == 0))
		return;
	unsigned started = 0;
	for (unsigned i = 0; i < TOGETHER; i++) {
		jobs[i] = (struct job){ each, 1,
					t_calloc(MAX_BLOCKS, sizeof(void *)), 0 };
		if (!CHECK(jobs[i].blocks != NULL))
			break;
		if (!CHECK(pthread_create(&t[i], NULL, allocate_free_and_wait, &jobs[i]) == 0))
			break;
		started++;
	}
	if (started < TOGETHER) /* the others would wait at the barrier forever */
		_exit(check_finish());
	for (unsigned i = 0; i < TOGETHER; i++) {
		pthread_join(t[i], NULL);
		t_free(jobs[i].blocks);
	}
	pthread_barrier_destroy(&all_freed);
	size_t after = rss_bytes();
	printf("together: %d threads of %zu MiB exited: RSS %zu MiB -> %zu MiB\n", TOGETHER,
	       each / MiB, before / MiB, after / MiB);
	/* What 4 of them touched, and a little; HAKMEM_PROFILE=speed keeps all
	 * a warm heap held, the partly used pages of all its classes too (its
	 * purge delay has not passed: 44 MiB for 4 MiB each, 73 for 16). */
	const char *profile = getenv("HAKMEM_PROFILE");
	bool speed = profile != NULL && strcmp(profile, "speed") == 0;
	size_t bound = speed ? 4 * (each + 16 * MiB) : 4 * each + 16 * MiB;
	if (rss_checked())
		CHECKF(after <= before + bound,
		       "%d threads that exited together keep their memory: RSS %zu MiB "
		       "before, %zu MiB after", TOGETHER, before / MiB, after / MiB);
}

int main(void)
{
	check_init("thread_exit");
	/* Allocated before any measurement, so it counts in every baseline. */
	void **blocks = t_calloc(MAX_BLOCKS, sizeof *blocks);
	if (!CHECK(blocks != NULL))
		return check_finish();
	test_reuse(blocks);
	test_release(blocks, 1);
	test_release(blocks, 0);
	t_free(blocks);
	test_large_reuse();
	test_together();
	return check_finish();
}
