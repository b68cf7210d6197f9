/*
 * huge_side_by_side.c: huge blocks are carved side by side from chunks on
 * transparent huge pages (huge_chunk.c), so a block that does not end on a
 * 2 MiB boundary shares its last huge page with the next block, and a
 * program that writes its blocks whole faults them in by 2 MiB, not by
 * 4 KiB from the last 2 MiB boundary on.  A block of 2 MiB or more opens a
 * chunk; a first block of 1 MiB stays on 4 KiB pages, later ones join.
 *
 * Eight blocks of 2.625 MiB, every page written: a block in a mapping of
 * its own would fault its last 640 KiB by 4 KiB pages (160 faults, 1280 in
 * all); side by side, the eight take 11 huge pages and a few faults.
 * After free and malloc_trim the memory is given back, the chunk's huge
 * page ahead of use included (the last block's end faulted in 1 MiB past
 * it).  A realloc of the block carved last grows in place into the chunk,
 * one of another block moves; both keep their bytes.  A block larger
 * than every cached range grows the one at the chunk's rest in place.
 * Blocks of 64 KiB and up join an open chunk while their class has no page
 * and serves few.  With a second thread alive, blocks freed by a program
 * that then only sleeps go back to the system, the chunk's huge page ahead
 * of use with them (not under HAKMEM_PROFILE=speed, which has no purger).
 *
 * Skipped against glibc, where hakmem asks for no huge page (lean,
 * HAKMEM_THP=0), and where the kernel makes none for a mapping that asks
 * (THP off, or no free 2 MiB page).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "allocator.h"
#include "hakmem.h"
#include "check.h"
#include "rss.h"

#define BLOCKS 8
#define BLOCK_SIZE (2 * MiB + 640 * 1024)
#define PAGE 4096

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* The kernel backs a 2 MiB-aligned range advised MADV_HUGEPAGE with one
 * huge page: one fault for 2 MiB written. */
static bool kernel_gives_huge_pages(void)
{
	size_t len = 4 * MiB;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return false;
	char *a = (char *)(((uintptr_t)m + 2 * MiB - 1) & ~(uintptr_t)(2 * MiB - 1));
	bool yes = madvise(a, 2 * MiB, MADV_HUGEPAGE) == 0;
	long before = minor_faults();
	for (size_t off = 0; yes && off < 2 * MiB; off += PAGE)
		a[off] = 1;
	yes = yes && minor_faults() - before <= 4;
	munmap(m, len);
	return yes;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t off = 0; off < n; off += PAGE)
		p[off] = (unsigned char)(seed + off / PAGE);
	p[n - 1] = (unsigned char)seed;
}

static bool intact(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t off = 0; off < n; off += PAGE)
		if (p[off] != (unsigned char)(seed + off / PAGE))
			return false;
	return p[n - 1] == (unsigned char)seed;
}

/* n blocks of size bytes into p, block i written whole with seed + i;
 * false (a failed check) when malloc fails. */
static bool alloc_filled(unsigned char **p, int n, size_t size, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		p[i] = malloc(size);
		if (!CHECK(p[i] != NULL))
			return false;
		fill(p[i], size, seed + (unsigned)i);
	}
	return true;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static bool done;

/* A second thread of the program that allocates, so that hakmem's purger
 * runs: it waits for the end of the test. */
static void *second_thread(void *arg)
{
	free(malloc(64)); /* a heap of its own: two threads allocate */
	pthread_mutex_lock(&lock);
	while (!done)
		pthread_cond_wait(&done_cond, &lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

/* Blocks written, freed, then only sleep: the purger gives the cached
 * blocks back once they waited (huge_cache_ms), and with the last of them
 * the chunk's huge page ahead of use. */
static void idle_release(void)
{
	const char *profile = getenv("HAKMEM_PROFILE");
	if (profile != NULL && strcmp(profile, "speed") == 0)
		return; /* no purger, by design */
	pthread_t t;
	if (!CHECK(pthread_create(&t, NULL, second_thread, NULL) == 0))
		return;
	/* A huge block freed schedules a purge; the next huge malloc then
	 * starts the purger (from malloc, where starting a thread is safe). */
	free(malloc(BLOCK_SIZE));
	malloc_trim(0);
	size_t base = rss_bytes();
	/* Blocks carved side by side, the last one (1 MiB ones added until it
	 * is so) ending at most 1 MiB past a 2 MiB boundary: the huge page
	 * there reaches 1 MiB or more into the chunk's rest. */
	unsigned char *p[BLOCKS + 3];
	int n = 0;
	while (n < BLOCKS + 3) {
		size_t size = n < BLOCKS ? BLOCK_SIZE : MiB;
		p[n] = malloc(size);
		if (!CHECK(p[n] != NULL))
			break;
		fill(p[n], size, (unsigned)n);
		size_t past = ((uintptr_t)p[n++] + size) % (2 * MiB);
		if (n >= BLOCKS && past != 0 && past <= MiB)
			break;
	}
	for (int i = 0; i < n; i++)
		free(p[i]);
	size_t now = rss_bytes();
	for (int waited = 0; now > base + 512 * 1024 && waited < 10000; waited += 100) {
		struct timespec ts = {0, 100 * 1000000L};
		nanosleep(&ts, NULL);
		now = rss_bytes();
	}
	CHECKF(now <= base + 512 * 1024, "idle after free: RSS %zu KiB, %zu KiB before", now >> 10,
	       base >> 10);
	pthread_mutex_lock(&lock);
	done = true;
	pthread_cond_signal(&done_cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
}

#pragma weak hak_stats_get

static uint64_t huge_live_bytes(void)
{
	struct hak_stats s;
	hak_stats_get(&s);
	return s.huge_live_bytes;
}

/* Once a chunk is open, a class of blocks of 64 KiB and up that has no
 * page takes its first blocks from the chunk (huge blocks, counted in
 * huge_live_bytes), and pages of its own when it serves more than a few a
 * second; in the default build, not the hardened one.  An aligned
 * allocation of that class keeps its alignment. */
static void classes_join_chunk(void)
{
	if (!hak_stats_get)
		return;
	enum { N = 300, SIZE = 100 * 1024 };
	/* Not in the hardened build, which keeps every class on its pages. */
	bool hardened = getenv("HAKMEM_TEST_HARDENED") != NULL;
	free(malloc(64)); /* the thread's heap: a thread without one takes a page */
	unsigned char *big = malloc(4 * MiB); /* opens a chunk, if none is */
	if (!CHECK(big != NULL))
		return;
	unsigned char *p[N];
	int routed = 0;
	for (int i = 0; i < N; i++) {
		uint64_t before = huge_live_bytes();
		p[i] = malloc(SIZE);
		if (!CHECK(p[i] != NULL))
			return;
		bool joined = huge_live_bytes() >= before + SIZE;
		CHECKF(i != 0 || joined || hardened, "the first %d KiB block did not come from the chunk",
		       SIZE >> 10);
		CHECKF(!joined || !hardened, "the hardened build served a %d KiB block from the chunk",
		       SIZE >> 10);
		routed += joined;
		fill(p[i], SIZE, 50u + (unsigned)i);
	}
	CHECKF(routed <= 255, "%d of %d blocks of %d KiB from the chunk: the class got no page", routed,
	       N, SIZE >> 10);
	void *aligned = NULL;
	CHECK(posix_memalign(&aligned, 64 * 1024, SIZE) == 0);
	CHECKF(((uintptr_t)aligned & (64 * 1024 - 1)) == 0, "posix_memalign(64 KiB): %p", aligned);
	free(aligned);
	for (int i = 0; i < N; i++) {
		CHECKF(intact(p[i], SIZE, 50u + (unsigned)i), "block %d lost its bytes", i);
		free(p[i]);
	}
	free(big);
	printf("%d of %d blocks of %d KiB from the chunk\n", routed, N, SIZE >> 10);
}

/* A block larger than every cached range: the one that ends where the
 * chunk's rest begins grows into the rest in place (its memory is reused,
 * only the growth is new), where the largest cached range would be
 * unmapped and the block carved past it. */
static void grow_at_rest(void)
{
	malloc_trim(0); /* nothing cached */
	unsigned char *r[2];
	if (!alloc_filled(r, 2, BLOCK_SIZE, 30))
		return;
	free(r[1]); /* cached, at the rest */
	unsigned char *big = malloc(3 * BLOCK_SIZE);
	if (!CHECK(big != NULL))
		return;
	CHECKF(big == r[1], "a block larger than any cached range: at %p, not grown from the cached "
	       "range at the chunk's rest (%p)", (void *)big, (void *)r[1]);
	fill(big, 3 * BLOCK_SIZE, 40);
	CHECK(intact(big, 3 * BLOCK_SIZE, 40));
	CHECK(intact(r[0], BLOCK_SIZE, 30));
	free(big);
	free(r[0]);
}

int main(void)
{
	check_init("huge_side_by_side");
	if (!testing_hakmem()) {
		check_skip("huge pages are hakmem's policy, not glibc's");
		return check_finish();
	}
	if (!hakmem_asks_huge_pages()) {
		check_skip("hakmem asks for no huge page here");
		return check_finish();
	}
	if (!kernel_gives_huge_pages()) {
		check_skip("the kernel makes no huge page for a range that asks");
		return check_finish();
	}
	size_t start = rss_bytes();

	/* Before any block of 2 MiB, one of 1 MiB opens no chunk: on 4 KiB
	 * pages, it is not rounded up to 2 MiB. */
	long before = minor_faults();
	unsigned char *alone_block = malloc(MiB);
	if (!CHECK(alone_block != NULL))
		return check_finish();
	fill(alone_block, MiB, 7);
	long alone_faults = minor_faults() - before;
	CHECKF(alone_faults >= (long)(MiB / PAGE) / 2, "a first 1 MiB block: %ld faults, not on "
	       "4 KiB pages", alone_faults);

	unsigned char *p[BLOCKS];
	before = minor_faults();
	if (!alloc_filled(p, BLOCKS, BLOCK_SIZE, 0))
		return check_finish();
	long faults = minor_faults() - before;
	long alone = BLOCKS * (long)((BLOCK_SIZE - 2 * MiB) / PAGE);
	CHECKF(faults < alone / 4, "%d blocks of %zu KiB written: %ld faults (%ld on their own)",
	       BLOCKS, (size_t)BLOCK_SIZE >> 10, faults, alone);
	for (int i = 0; i < BLOCKS; i++)
		CHECKF(intact(p[i], BLOCK_SIZE, (unsigned)i), "block %d lost its bytes", i);

	/* Blocks of 1 MiB join the open chunk: two fill a huge page or two. */
	before = minor_faults();
	unsigned char *pair[2];
	if (!alloc_filled(pair, 2, MiB, 20))
		return check_finish();
	long pair_faults = minor_faults() - before;
	CHECKF(pair_faults < (long)(MiB / PAGE) / 4, "two 1 MiB blocks after the chunk opened: %ld "
	       "faults", pair_faults);
	for (int i = 0; i < 2; i++) {
		CHECK(intact(pair[i], MiB, 20u + (unsigned)i));
		free(pair[i]);
	}
	CHECK(intact(alone_block, MiB, 7));
	free(alone_block);

	for (int i = 0; i < BLOCKS; i++)
		free(p[i]);
	malloc_trim(0);
	size_t trimmed = rss_bytes();
	CHECKF(trimmed <= start + MiB, "after malloc_trim: RSS %zu KiB, %zu KiB at the start",
	       trimmed >> 10, start >> 10);

	/* The block carved last grows into the chunk, in place; one with a
	 * neighbour moves.  Both keep their bytes. */
	unsigned char *q[2];
	if (!alloc_filled(q, 2, BLOCK_SIZE, 10))
		return check_finish();
	unsigned char *last = realloc(q[1], 2 * BLOCK_SIZE);
	if (CHECK(last != NULL)) {
		CHECKF(last == q[1], "the last block moved: %p -> %p", (void *)q[1], (void *)last);
		CHECK(intact(last, BLOCK_SIZE, 11));
		q[1] = last;
	}
	unsigned char *first = realloc(q[0], 3 * BLOCK_SIZE);
	if (CHECK(first != NULL)) {
		CHECK(intact(first, BLOCK_SIZE, 10));
		fill(first, 3 * BLOCK_SIZE, 99);
		CHECK(intact(first, 3 * BLOCK_SIZE, 99));
		q[0] = first;
	}
	free(q[0]);
	free(q[1]);
	grow_at_rest();
	classes_join_chunk();

	idle_release();
	printf("%d blocks of %zu KiB written: %ld faults; RSS %zu KiB at the start, %zu KiB after "
	       "malloc_trim\n",
	       BLOCKS, (size_t)BLOCK_SIZE >> 10, faults, start >> 10, trimmed >> 10);
	return check_finish();
}
