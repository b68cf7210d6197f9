/*
 * introspect.c: glibc's introspection functions describe the allocator in
 * use.  mallinfo2 moves the right way as 10 MiB of small blocks and a
 * 64 MiB huge block come and go, and its fields add up (arena = uordblks +
 * fordblks); mallinfo agrees with it, and saturates at INT_MAX where
 * glibc's wraps; malloc_stats prints to stderr; malloc_info writes a
 * well-formed document in glibc's shape (python3's xml.etree reads it)
 * whose huge-block total is mallinfo2's, also into an open_memstream
 * stream that grows (reallocates) as it is written, and returns EINVAL for
 * options other than 0, as glibc; mallopt accepts glibc's parameters and unknown ones, as glibc,
 * and M_TRIM_THRESHOLD sets what free memory is kept.  The checks of what
 * only hakmem promises are skipped under plain glibc.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hakmem.h"

#pragma weak hak_malloc

#define MIB ((size_t)1 << 20)
#define SMALL 64
#define NSMALL (10 * MIB / SMALL)
#define SLACK (256 << 10) /* what the test's own stdio may allocate */

static void *blocks[NSMALL];
static bool on_hakmem;

/* What holds for glibc's figures and hakmem's alike. */
static void check_sums(const struct mallinfo2 *m, const char *when)
{
	CHECKF(m->arena == m->uordblks + m->fordblks, "%s: arena %zu != uordblks %zu + fordblks %zu",
	       when, m->arena, m->uordblks, m->fordblks);
	CHECKF(m->keepcost <= m->fordblks && m->fsmblks <= m->fordblks,
	       "%s: keepcost %zu, fsmblks %zu, fordblks %zu", when, m->keepcost, m->fsmblks,
	       m->fordblks);
	CHECKF(m->usmblks == 0, "%s: usmblks %zu", when, m->usmblks);
}

static void alloc_small(void)
{
	for (size_t i = 0; i < NSMALL; i++)
		blocks[i] = malloc(SMALL);
}

static void free_small(void)
{
	for (size_t i = 0; i < NSMALL; i++)
		free(blocks[i]);
}

static void test_mallinfo2_moves(void)
{
	struct mallinfo2 start = mallinfo2();
	check_sums(&start, "at start");
	alloc_small();
	struct mallinfo2 grown = mallinfo2();
	check_sums(&grown, "10 MiB of small blocks out");
	/* glibc adds a header to each block; hakmem's 64-byte class has none. */
	CHECKF(grown.uordblks >= start.uordblks + 10 * MIB &&
		       (!on_hakmem || grown.uordblks <= start.uordblks + 10 * MIB + SLACK),
	       "uordblks %zu -> %zu after 10 MiB of %d-byte blocks", start.uordblks,
	       grown.uordblks, SMALL);
	CHECK(grown.hblks == start.hblks && grown.hblkhd == start.hblkhd);

	void *huge = malloc(64 * MIB);
	struct mallinfo2 with_huge = mallinfo2();
	CHECKF(with_huge.hblks == grown.hblks + 1, "hblks %zu -> %zu after a 64 MiB block",
	       grown.hblks, with_huge.hblks);
	CHECKF(with_huge.hblkhd >= grown.hblkhd + 64 * MIB &&
		       with_huge.hblkhd <= grown.hblkhd + 65 * MIB,
	       "hblkhd %zu -> %zu after a 64 MiB block", grown.hblkhd, with_huge.hblkhd);
	CHECKF(with_huge.uordblks <= grown.uordblks + SLACK, "uordblks %zu -> %zu",
	       grown.uordblks, with_huge.uordblks);
	free(huge);
	struct mallinfo2 huge_freed = mallinfo2();
	CHECKF(huge_freed.hblks == grown.hblks && huge_freed.hblkhd == grown.hblkhd,
	       "after the free: hblks %zu, hblkhd %zu; before it %zu, %zu", huge_freed.hblks,
	       huge_freed.hblkhd, grown.hblks, grown.hblkhd);

	free_small();
	struct mallinfo2 freed = mallinfo2();
	check_sums(&freed, "small blocks freed");
	CHECKF(freed.uordblks <= start.uordblks + SLACK, "uordblks %zu at start, %zu after free",
	       start.uordblks, freed.uordblks);
	/* The freed bytes are held free, or left the arena. */
	size_t left = grown.arena > freed.arena ? grown.arena - freed.arena : 0;
	CHECKF(freed.fordblks + left + SLACK >= grown.fordblks + 10 * MIB,
	       "fordblks %zu -> %zu, arena %zu -> %zu after freeing 10 MiB", grown.fordblks,
	       freed.fordblks, grown.arena, freed.arena);

	malloc_trim(0);
	struct mallinfo2 trimmed = mallinfo2();
	check_sums(&trimmed, "after malloc_trim");
	if (on_hakmem)
		CHECKF(trimmed.keepcost == 0 && trimmed.ordblks == 0,
		       "after malloc_trim: keepcost %zu, ordblks %zu", trimmed.keepcost,
		       trimmed.ordblks);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_mallinfo_saturates(void)
{
	void *big = malloc((size_t)3 << 30); /* untouched: costs no memory */
	if (!CHECK(big != NULL))
		return;
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m = mallinfo();
	CHECKF(m2.hblkhd >= (size_t)3 << 30, "hblkhd %zu with a 3 GiB block", m2.hblkhd);
	const size_t wide[] = { m2.arena, m2.ordblks, m2.smblks, m2.hblks, m2.hblkhd,
				m2.usmblks, m2.fsmblks, m2.uordblks, m2.fordblks, m2.keepcost };
	const int narrow[] = { m.arena, m.ordblks, m.smblks, m.hblks, m.hblkhd,
			       m.usmblks, m.fsmblks, m.uordblks, m.fordblks, m.keepcost };
	for (int i = 0; i < 10; i++) {
		if (wide[i] <= INT_MAX)
			CHECKF(narrow[i] == (int)wide[i], "mallinfo field %d: %d, mallinfo2 %zu",
			       i, narrow[i], wide[i]);
		else if (on_hakmem)
			CHECKF(narrow[i] == INT_MAX, "mallinfo field %d: %d, not INT_MAX (%zu)", i,
			       narrow[i], wide[i]);
	}
	free(big);
}
#pragma GCC diagnostic pop

/* Runs fn with stderr going to a temporary file; returns what it wrote. */
static size_t capture_stderr(void (*fn)(void), char *buf, size_t len)
{
	FILE *tmp = tmpfile();
	if (!CHECK(tmp != NULL))
		return 0;
	fflush(stderr);
	int saved = dup(2);
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	size_t got = fread(buf, 1, len - 1, tmp);
	buf[got] = '\0';
	fclose(tmp);
	return got;
}

static void test_malloc_stats(void)
{
	static char out[1 << 16];
	size_t n = capture_stderr(malloc_stats, out, sizeof out);
	CHECKF(n > 0, "malloc_stats printed nothing");
	if (on_hakmem)
		CHECKF(strstr(out, "hakmem") && strstr(out, "statistics") && strstr(out, "class"),
		       "malloc_stats: %.200s", out);
}

/* python3 reads the document with xml.etree, checks glibc's shape and
 * prints the huge-block total ("mmap COUNT SIZE"). */
static const char shape_check[] =
	"import sys, xml.etree.ElementTree as ET\n"
	"def need(ok, what):\n"
	"    if not ok:\n"
	"        print(\"bad \" + what)\n"
	"        sys.exit(1)\n"
	"root = ET.parse(sys.argv[1]).getroot()\n"
	"need(root.tag == \"malloc\" and root.get(\"version\") == \"1\", \"root\")\n"
	"heaps = root.findall(\"heap\")\n"
	"need(len(heaps) > 0, \"heaps\")\n"
	"for i, h in enumerate(heaps):\n"
	"    need(h.get(\"nr\") == str(i), \"heap nr\")\n"
	"    sizes = h.find(\"sizes\")\n"
	"    need(sizes is not None, \"sizes\")\n"
	"    for s in sizes:\n"
	"        need(all(s.get(a, \"\").isdigit() for a in (\"from\", \"to\", \"total\", \"count\")),\n"
	"             \"size \" + str(s.attrib))\n"
	"    kinds = [(e.tag, e.get(\"type\")) for e in h if e.tag != \"sizes\"]\n"
	"    for k in ((\"total\", \"fast\"), (\"total\", \"rest\"), (\"system\", \"current\"),\n"
	"              (\"system\", \"max\")):\n"
	"        need(k in kinds, \"heap \" + str(k))\n"
	"top = {(e.tag, e.get(\"type\")): e for e in root if e.tag != \"heap\"}\n"
	"for k in ((\"total\", \"fast\"), (\"total\", \"rest\"), (\"total\", \"mmap\"),\n"
	"          (\"system\", \"current\"), (\"system\", \"max\"), (\"aspace\", \"total\"),\n"
	"          (\"aspace\", \"mprotect\")):\n"
	"    need(k in top, \"top \" + str(k))\n"
	"    need(top[k].get(\"size\", \"\").isdigit(), \"size of \" + str(k))\n"
	"mmap = top[(\"total\", \"mmap\")]\n"
	"print(\"mmap\", mmap.get(\"count\"), mmap.get(\"size\"))\n";

static void test_malloc_info(void)
{
	FILE *tmp = tmpfile();
	if (!CHECK(tmp != NULL))
		return;
	errno = 0;
	int r = malloc_info(1, tmp);
	CHECKF(r == EINVAL && errno == 0, "malloc_info(1, fp) = %d, errno %d", r, errno);
	CHECK(ftell(tmp) == 0);

	/* Into a stream that reallocates its buffer while malloc_info writes. */
	void *huge = malloc(64 * MIB);
	char *doc = NULL;
	size_t len = 0;
	FILE *ms = open_memstream(&doc, &len);
	if (!CHECK(ms != NULL))
		return;
	struct mallinfo2 m = mallinfo2();
	r = malloc_info(0, ms);
	fclose(ms);
	CHECKF(r == 0, "malloc_info(0, fp) = %d", r);
	CHECKF(len > 0 && strncmp(doc, "<malloc version=\"1\">\n", 21) == 0 &&
		       strcmp(doc + len - 10, "</malloc>\n") == 0,
	       "malloc_info: %.100s", doc ? doc : "(null)");

	char path[] = "/tmp/hakmem-malloc-info-XXXXXX";
	int fd = mkstemp(path);
	if (CHECK(fd >= 0)) {
		CHECK(write(fd, doc, len) == (ssize_t)len);
		close(fd);
		char cmd[8192];
		snprintf(cmd, sizeof cmd, "python3 -c '%s' %s", shape_check, path);
		FILE *py = popen(cmd, "r");
		char line[256] = "";
		if (CHECK(py != NULL)) {
			if (fgets(line, sizeof line, py) == NULL)
				line[0] = '\0';
			CHECKF(pclose(py) == 0, "python3's check of malloc_info: %s", line);
		}
		size_t count = 0, size = 0;
		CHECKF(sscanf(line, "mmap %zu %zu", &count, &size) == 2 && count == m.hblks &&
			       size == m.hblkhd,
		       "malloc_info's mmap total: %s; mallinfo2: %zu %zu", line, m.hblks,
		       m.hblkhd);
		unlink(path);
	}
	free(doc);
	free(huge);
}

static void test_mallopt(void)
{
	const struct {
		const char *name;
		int param, value, want;
	} calls[] = {
		{ "M_TOP_PAD", M_TOP_PAD, 0, 1 },
		{ "M_MMAP_THRESHOLD", M_MMAP_THRESHOLD, 1 << 20, 1 },
		{ "M_MMAP_MAX", M_MMAP_MAX, 65536, 1 },
		{ "M_CHECK_ACTION", M_CHECK_ACTION, 3, 1 },
		{ "M_PERTURB", M_PERTURB, 0, 1 },
		{ "M_ARENA_TEST", M_ARENA_TEST, 8, 1 },
		{ "M_ARENA_MAX", M_ARENA_MAX, 4, 1 },
		{ "M_MXFAST", M_MXFAST, 64, 1 },
		{ "M_MXFAST", M_MXFAST, 1000, 0 }, /* above glibc's bound */
		{ "M_TRIM_THRESHOLD", M_TRIM_THRESHOLD, -1, 1 },
	};
	for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
		int r = mallopt(calls[i].param, calls[i].value);
		CHECKF(r == calls[i].want, "mallopt(%s, %d) = %d", calls[i].name, calls[i].value, r);
	}
	/* A parameter glibc does not know: accepted, as glibc does. */
	CHECK(mallopt(12345, 1) == 1);
	CHECK(mallopt(-100, 1) == 1);
	if (!on_hakmem)
		return;

	/* M_TRIM_THRESHOLD: free pages are kept up to it, or go back at once. */
	malloc_trim(0);
	CHECK(mallopt(M_TRIM_THRESHOLD, 64 << 20) == 1);
	alloc_small();
	free_small();
	struct mallinfo2 kept = mallinfo2();
	CHECKF(kept.keepcost > 0, "M_TRIM_THRESHOLD 64 MiB: keepcost %zu", kept.keepcost);
	CHECK(mallopt(M_TRIM_THRESHOLD, 0) == 1);
	alloc_small();
	free_small();
	struct mallinfo2 none = mallinfo2();
	CHECKF(none.keepcost == 0, "M_TRIM_THRESHOLD 0: keepcost %zu", none.keepcost);
}

int main(void)
{
	check_init("introspect");
	on_hakmem = hak_malloc != NULL;
	test_mallinfo2_moves();
	test_mallinfo_saturates();
	test_malloc_stats();
	test_malloc_info();
	test_mallopt();
	return check_finish();
}
