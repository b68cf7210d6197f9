/*
 * idle_release.c: memory freed by a program that then goes idle returns
 * to the system without any further call into the allocator.  The test
 * frees up to 256 MiB and then only sleeps, watching resident memory for
 * up to 20 s.  3 MiB of one size fit in one page of hakmem's: the page the
 * thread was allocating from must go back too, to within 1 MiB.
 * Twice: with a second thread alive, where hakmem's background purger
 * gives back everything that waited its delay; and single-threaded, where
 * hakmem starts no thread (a program must not see one) and its heaps keep
 * no more than idle_keep of free memory per kind of page (README: 4 MiB in
 * the default profile, 1 MiB in lean), the 3 MiB cases' slack grows by it.
 * Not run under HAKMEM_PROFILE=speed, which keeps free memory by design.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "rss.h"

static void idle_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Allocate total bytes in blocks of size, touch them, free them, then idle
 * until RSS is back within `slack` bytes of the start (or 20 s have
 * passed). */
static void test_idle_release(size_t size, size_t total, size_t slack)
{
	size_t count = total / size;
	void **p = calloc(count, sizeof *p);
	if (!CHECK(p != NULL))
		return;
	size_t before = rss_bytes();
	for (size_t i = 0; i < count; i++) {
		p[i] = malloc(size);
		if (p[i])
			memset(p[i], 1, size);
	}
	size_t peak = rss_bytes();
	for (size_t i = 0; i < count; i++)
		free(p[i]);
	size_t now = rss_bytes();
	int waited = 0;
	while (now > before + slack && waited < 20000) {
		idle_ms(100);
		waited += 100;
		now = rss_bytes();
	}
	CHECKF(now <= before + slack,
	       "%zu-byte blocks: RSS %zu KiB before, %zu KiB peak, still %zu KiB "
	       "after 20 s idle", size, before >> 10, peak >> 10, now >> 10);
	free(p);
}

static void test_all_sizes(size_t keep)
{
	/* First the small ones: purges still going on from a big one would
	 * hide what they leave. */
	test_idle_release(30000, (size_t)3 << 20, 1 * MiB + keep);
	test_idle_release(8000, (size_t)3 << 20, 1 * MiB + keep);
	test_idle_release(100, (size_t)256 << 20, 32 * MiB);
	test_idle_release(20000, (size_t)256 << 20, 32 * MiB);
	test_idle_release(200000, (size_t)256 << 20, 32 * MiB);
	test_idle_release((size_t)2 << 20, (size_t)256 << 20, 32 * MiB);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int done;

/* A second thread of the program: it allocates (so it has a heap) and
 * waits for the end of the test. */
static void *second_thread(void *arg)
{
	free(malloc(64));
	pthread_mutex_lock(&lock);
	while (!done)
		pthread_cond_wait(&done_cond, &lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

int main(void)
{
	check_init("idle_release");
	test_all_sizes(hakmem_idle_keep());
	pthread_t t;
	if (!CHECK(pthread_create(&t, NULL, second_thread, NULL) == 0))
		return check_finish();
	test_all_sizes(0);
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_signal(&done_cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	return check_finish();
}
