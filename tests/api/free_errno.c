/*
 * free_errno.c: free leaves errno alone (POSIX.1-2024; glibc does so since
 * 2.33), whatever work the free does: a plain push, a page going empty, a
 * purge, a huge block unmapped or cached.  Programs that free between a
 * failing call and reading its errno depend on this.
 */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "compat.h"

#define MAGIC 12345

static void check_free_keeps_errno(void *p, const char *what, size_t n)
{
	errno = MAGIC;
	free(p);
	CHECKF(errno == MAGIC, "free of a %s block (%zu bytes) set errno to %d",
	       what, n, errno);
}

int main(void)
{
	check_init("free_errno");
	static const size_t sizes[] = { 1, 100, 4000, 40000, 300000, 600000,
					(size_t)3 << 20, (size_t)40 << 20 };
	enum { COUNT = 3000 };
	static void *p[COUNT];
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		size_t n = sizes[s], count = n > 100000 ? 20 : COUNT;
		/* Enough blocks that pages fill up and then empty again. */
		for (size_t i = 0; i < count; i++)
			p[i] = malloc(n);
		for (size_t i = 0; i < count; i++)
			check_free_keeps_errno(p[i], "malloc'd", n);
		void *a = aligned_alloc((size_t)1 << 20, n);
		check_free_keeps_errno(a, "1 MiB-aligned", n);
		if (free_sized) {
			void *q = malloc(n);
			errno = MAGIC;
			free_sized(q, n);
			CHECKF(errno == MAGIC, "free_sized(%zu) set errno to %d", n, errno);
			q = aligned_alloc(4096, n);
			errno = MAGIC;
			free_aligned_sized(q, 4096, n);
			CHECKF(errno == MAGIC, "free_aligned_sized(%zu) set errno to %d", n, errno);
		}
	}
	errno = MAGIC;
	free(NULL);
	CHECK(errno == MAGIC);
	return check_finish();
}
