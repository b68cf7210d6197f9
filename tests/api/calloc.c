/*
 * calloc.c: calloc memory reads as zero, also when the allocator hands out
 * memory that an earlier block dirtied: the same size class, another size
 * class on a recycled page, a cached large mapping, a block freed by
 * another thread.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pattern.h"

enum { COUNT = 512 };

static void check_zero(void *p, size_t n, const char *when)
{
	if (!CHECKF(p != NULL, "calloc of %zu bytes (%s) = NULL", n, when))
		return;
	size_t at = find_nonzero(p, n);
	CHECKF(at == (size_t)-1, "calloc of %zu bytes (%s): byte %zu is not zero",
	       n, when, at);
}

static void test_fresh(void)
{
	for (size_t n = 0; n <= 5000; n++) {
		void *p = calloc(1, n);
		check_zero(p, n, "fresh");
		free(p);
	}
	/* nmemb and size both matter: n * m bytes are zeroed, not n or m. */
	void *p = calloc(1000, 1000);
	check_zero(p, 1000 * 1000, "1000 x 1000");
	free(p);
	p = calloc((size_t)1 << 20, 16);
	check_zero(p, (size_t)16 << 20, "1M x 16");
	free(p);
}

/* Dirty COUNT blocks of size a, free them, then calloc COUNT of size b. */
static void dirty_then_calloc(size_t a, size_t b, size_t count)
{
	static void *p[COUNT];
	for (size_t i = 0; i < count; i++) {
		p[i] = malloc(a);
		if (p[i])
			memset(p[i], 0xa5, malloc_usable_size(p[i]));
	}
	/* Free in reverse so that a LIFO free list gives back the same blocks. */
	for (size_t i = count; i-- > 0;)
		free(p[i]);
	for (size_t i = 0; i < count; i++) {
		p[i] = calloc(b, 1);
		check_zero(p[i], b, "reused");
	}
	for (size_t i = 0; i < count; i++)
		free(p[i]);
}

static void test_reuse(void)
{
	static const size_t sizes[] = { 1, 16, 24, 100, 512, 1024, 4000, 5000,
					30000, 65536, 100000, 400000, 600000,
					(size_t)1 << 20, (size_t)5 << 20,
					((size_t)17 << 20) + 1 };
	size_t ns = sizeof sizes / sizeof *sizes;
	for (size_t i = 0; i < ns; i++) {
		size_t count = sizes[i] > 100000 ? 8 : COUNT;
		dirty_then_calloc(sizes[i], sizes[i], count);        /* same size */
		dirty_then_calloc(sizes[i], sizes[i] / 2 + 1, count); /* smaller */
		if (i + 1 < ns)
			dirty_then_calloc(sizes[i], sizes[i + 1], count);
	}
	/* Pages emptied of one size class and reused for another. */
	for (size_t i = 0; i + 1 < ns && sizes[i] < 100000; i++)
		dirty_then_calloc(sizes[i + 1], sizes[i], COUNT);
}

struct dirty_job {
	void *p[COUNT];
	size_t n;
};

static void *dirty_in_thread(void *arg)
{
	struct dirty_job *job = arg;
	for (size_t i = 0; i < COUNT; i++) {
		job->p[i] = malloc(job->n);
		if (job->p[i])
			memset(job->p[i], 0x5a, job->n);
	}
	return NULL;
}

/* Blocks dirtied by a thread that has exited, freed here, then calloc'd. */
static void test_reuse_after_remote_free(void)
{
	static const size_t sizes[] = { 32, 256, 2048, 20000, 300000 };
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		static struct dirty_job job;
		job.n = sizes[s];
		pthread_t t;
		if (!CHECK(pthread_create(&t, NULL, dirty_in_thread, &job) == 0))
			continue;
		pthread_join(t, NULL);
		for (size_t i = 0; i < COUNT; i++)
			free(job.p[i]);
		for (size_t i = 0; i < COUNT; i++) {
			job.p[i] = calloc(1, sizes[s]);
			check_zero(job.p[i], sizes[s], "after remote free");
		}
		for (size_t i = 0; i < COUNT; i++)
			free(job.p[i]);
	}
}

/* realloc shrinking then calloc of the tail's size must not see old data. */
static void test_after_realloc(void)
{
	for (size_t n = 64; n <= 65536; n *= 4) {
		void *p = malloc(n);
		if (!p)
			continue;
		memset(p, 0xff, n);
		void *q = realloc(p, n / 4);
		void *z = calloc(1, n - n / 4);
		check_zero(z, n - n / 4, "after realloc shrink");
		free(z);
		free(q ? q : p);
	}
}

int main(void)
{
	check_init("calloc");
	test_fresh();
	test_reuse();
	test_reuse_after_remote_free();
	test_after_realloc();
	return check_finish();
}
