/*
 * stats.c: hak_stats_get reports what the program did (live blocks per
 * class, huge bytes, heaps and arenas), hak_stats_print writes the table
 * and JSON, and hak_malloc_trim returns 1 as documented.  Skipped where
 * hakmem is absent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "stats_class.h"
#include "hakmem.h"

#pragma weak hak_stats_get
#pragma weak hak_stats_print
#pragma weak hak_malloc_trim

enum { COUNT = 10000 };

static struct hak_stats before, after;

static void test_live_counts(void)
{
	static void *p[COUNT];
	hak_stats_get(&before);
	for (int i = 0; i < COUNT; i++)
		p[i] = malloc(100);
	void *huge = malloc((size_t)10 << 20);
	hak_stats_get(&after);
	int c = stats_class_of(&after, 100);
	if (CHECKF(c >= 0, "no class holds 100-byte blocks")) {
		uint64_t delta = after.classes[c].live - before.classes[c].live;
		CHECKF(delta == COUNT, "class of %zu-byte blocks: live grew by %llu, want %d",
		       after.classes[c].block_size, (unsigned long long)delta, COUNT);
		CHECK(after.classes[c].pages > 0);
	}
	CHECKF(after.huge_live_bytes >= before.huge_live_bytes + ((size_t)10 << 20),
	       "huge_live_bytes %llu -> %llu after a 10 MiB block",
	       (unsigned long long)before.huge_live_bytes,
	       (unsigned long long)after.huge_live_bytes);
	CHECK(after.heaps >= 1 && after.arenas >= 1);
	CHECK(after.reserved_bytes >= after.committed_bytes);
	CHECK(after.resident_bytes > 0 && after.peak_resident_bytes >= after.resident_bytes);

	for (int i = 0; i < COUNT; i++)
		free(p[i]);
	free(huge);
	hak_stats_get(&after);
	stats_class_live_back(&after, &before, c);
	CHECK(after.huge_live_bytes == before.huge_live_bytes);
}

/* Prints into a pipe and returns how many bytes came out. */
static size_t printed(int json, char *buf, size_t len)
{
	int fds[2];
	if (pipe(fds) != 0)
		return 0;
	hak_stats_print(fds[1], json);
	close(fds[1]);
	size_t got = 0;
	ssize_t n;
	while (got < len - 1 && (n = read(fds[0], buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fds[0]);
	return got;
}

static void test_print(void)
{
	static char buf[1 << 16];
	CHECK(printed(0, buf, sizeof buf) > 0);
	size_t n = printed(1, buf, sizeof buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	CHECKF(n > 1 && buf[0] == '{' && buf[n - 1] == '}', "JSON output: %.60s", buf);
}

int main(void)
{
	check_init("stats");
	if (!hak_stats_get) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return check_finish();
	}
	test_live_counts();
	test_print();
	CHECK(hak_malloc_trim(0) == 1);
	return check_finish();
}
