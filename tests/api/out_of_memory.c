/*
 * out_of_memory.c: real exhaustion, not just absurd sizes.  The test runs
 * itself again with its address space limited to 1 GiB (RLIMIT_AS, set
 * before exec so that the allocator starts under it; 256 MiB where
 * TEST_SCALE is below 100, for the runs on the other builds).  There, allocating
 * blocks of each kind until the space runs out must end in NULL with errno
 * ENOMEM, never a crash; a failing calloc or realloc leaves live blocks
 * intact; and once half the blocks are freed, allocation works again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "pattern.h"

/* The address-space limit: the same in the test and its limited child,
 * which inherits TEST_SCALE. */
static size_t LIMIT;

/* Allocate size-byte blocks until malloc fails; check the failure and
 * the recovery after freeing half of them. */
static void exhaust(size_t size)
{
	size_t max = LIMIT / size + 1;
	void **p = mmap(NULL, max * sizeof *p, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(p != MAP_FAILED))
		return;
	size_t count = 0;
	int err = 0;
	for (; count < max; count++) {
		errno = 0;
		p[count] = malloc(size);
		if (!p[count]) {
			err = errno;
			break;
		}
		pattern_fill(p[count], 16, count);
	}
	size_t got = count * size;
	CHECKF(count < max, "%zu-byte blocks: %zu MiB allocated under a %zu MiB limit",
	       size, got >> 20, LIMIT >> 20);
	CHECKF(err == ENOMEM, "%zu-byte blocks: malloc failed with errno %d", size, err);
	/* A floor, not a target: the space an allocator can use under a limit
	 * depends on its layout (glibc gets 700-900 MiB here, hakmem less). */
	CHECKF(got >= LIMIT / 16, "%zu-byte blocks: only %zu MiB before failing",
	       size, got >> 20);
	printf("%zu-byte blocks: %zu MiB before NULL\n", size, got >> 20);

	/* At the limit: other requests fail cleanly, live blocks stay. */
	if (count > 0) {
		errno = 0;
		void *q = realloc(p[0], LIMIT / 2);
		CHECKF(q == NULL && errno == ENOMEM, "realloc at the limit: %p, errno %d",
		       q, errno);
		if (q)
			p[0] = q;
		errno = 0;
		q = calloc(LIMIT / 2, 1);
		CHECKF(q == NULL && errno == ENOMEM, "calloc at the limit: %p, errno %d",
		       q, errno);
		free(q);
	}
	for (size_t i = 0; i < count; i++)
		CHECKF(pattern_ok(p[i], 16, i), "%zu-byte block %zu changed", size, i);

	/* Free every other block: the freed space must be usable again. */
	for (size_t i = 0; i < count; i += 2)
		free(p[i]);
	size_t again = 0;
	for (size_t i = 0; i < count; i += 2) {
		p[i] = malloc(size);
		again += p[i] != NULL;
	}
	CHECKF(again >= count / 4, "%zu-byte blocks: after freeing %zu, only %zu "
	       "could be allocated again", size, (count + 1) / 2, again);
	for (size_t i = 0; i < count; i++)
		free(p[i]);
	munmap(p, max * sizeof *p);
}

static int limited_child(void)
{
	check_init("out_of_memory (limited child)");
	exhaust(64);
	exhaust(3000);
	exhaust(40000);
	exhaust(300000);
	exhaust((size_t)3 << 20);
	return check_finish();
}

int main(int argc, char **argv)
{
	LIMIT = test_scaled(100) < 100 ? (size_t)256 << 20 : (size_t)1 << 30;
	if (argc > 1 && strcmp(argv[1], "--limited") == 0)
		return limited_child();
	check_init("out_of_memory");
	check_limited_rerun(argv[0], LIMIT);
	return check_finish();
}
