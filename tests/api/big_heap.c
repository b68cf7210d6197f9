/*
 * big_heap.c: more live memory of one kind than one arena region holds
 * (hakmem's arenas are 4 GiB: 2 GiB of small pages, 1 GiB each of medium
 * and large ones), so the allocator must grow into further arenas and back.
 * Every block's first and last words are checked before it is freed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "check.h"
#include "pattern.h"

/* Fill `total` bytes with blocks of `size`, verify, free. */
static void fill_beyond(size_t size, size_t total)
{
	size_t count = total / size;
	/* The pointer table comes from mmap: it must not disturb the test. */
	void **p = mmap(NULL, count * sizeof *p, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(p != MAP_FAILED))
		return;
	size_t got = 0;
	for (; got < count; got++) {
		p[got] = malloc(size);
		if (!CHECKF(p[got] != NULL, "malloc(%zu) failed after %zu MiB",
			    size, got * size >> 20))
			break;
		/* First and last 8 bytes: enough to see overlapping blocks. */
		pattern_fill(p[got], 8, got);
		pattern_fill((char *)p[got] + size - 8, 8, ~(uint64_t)got);
	}
	for (size_t i = 0; i < got; i++) {
		CHECKF(pattern_ok(p[i], 8, i) &&
		       pattern_ok((char *)p[i] + size - 8, 8, ~(uint64_t)i),
		       "block %zu of %zu bytes changed", i, size);
		free(p[i]);
	}
	munmap(p, count * sizeof *p);
}

int main(void)
{
	check_init("big_heap");
	/* The small fill is most of the run's page faults (every OS page of
	 * 2.25 GiB); the reruns at reduced scale (tests/run.sh) grow the other
	 * regions, through the same code. */
	if (test_scaled(100) >= 100)
		fill_beyond(1024, (size_t)2304 << 20); /* small: 2.25 GiB */
	fill_beyond(40000, (size_t)1152 << 20);        /* medium: 1.125 GiB */
	fill_beyond(300000, (size_t)1152 << 20);       /* large: 1.125 GiB */
	fill_beyond(((size_t)1 << 20) + 1, (size_t)1152 << 20);  /* huge */
	return check_finish();
}
