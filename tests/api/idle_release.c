/*
 * idle_release.c: memory freed by a program that then goes idle returns
 * to the system without any further call into the allocator (hakmem's
 * background purge thread, in its default profile).  The test frees
 * 256 MiB and then only sleeps, watching resident memory for up to 20 s.
 * 3 MiB of one size fit in one page of hakmem's: the page the thread was
 * allocating from must go back too, to within 1 MiB.
 * Not run under HAKMEM_PROFILE=speed, which has no purge thread by design.
 */
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

int main(void)
{
	check_init("idle_release");
	/* First the small ones: purges still going on from a big one would
	 * hide what they leave. */
	test_idle_release(30000, (size_t)3 << 20, 1 * MiB);
	test_idle_release(8000, (size_t)3 << 20, 1 * MiB);
	test_idle_release(100, (size_t)256 << 20, 32 * MiB);
	test_idle_release(20000, (size_t)256 << 20, 32 * MiB);
	test_idle_release(200000, (size_t)256 << 20, 32 * MiB);
	test_idle_release((size_t)2 << 20, (size_t)256 << 20, 32 * MiB);
	return check_finish();
}
