/*
 * remote_messages.c: blocks freed by another thread than their owner's go
 * home, however many, and cost the owner no memory while it does not take
 * them back.
 *
 *  - idle owner: the main thread allocates 400 K blocks of 32 B (too small
 *    to be kept where freed), a worker frees them all and exits while the
 *    main thread waits; resident memory must not grow by more than 1 MiB
 *    over the frees (hakmem sends such blocks home in messages of their
 *    addresses, at most 128 KiB of them at once; past that a block goes as
 *    itself), and the main thread's next 400 K blocks of 32 B reuse them:
 *    no more than 1 MiB more again;
 *  - every block arrives: a thread without a heap of its own (it never
 *    allocates) frees 200 K blocks of 16 B to 64 KiB the main thread made;
 *    once it has exited and the main thread collected, hak_stats_get counts
 *    as many blocks live as before they were made;
 *  - the blocks handed out again are whole: each gets its index written
 *    in full and every one reads back;
 *  - more owners than a thread batches for at once: six threads each make
 *    20 K blocks of 16 B to 4 KiB, a thread without a heap frees them
 *    taking the owners in turn (each free another owner's), and once all
 *    have exited every block is back: as many live as before;
 *  - messages go round: eight threads, each with a heap, for 30 rounds
 *    each allocate 2,000 blocks of 16 to 48 B (under a line: all go
 *    home), write their origin in each, and hand them to the others at
 *    random; each checks what it received is whole and frees it.  The
 *    messages that carry the blocks home pass between the threads' kept
 *    ones, their owners' parked ones and the pool many times; at the end
 *    every block is back, and every message but the main thread's;
 *  - statistics while blocks travel: three threads call hak_stats_get
 *    without pause while a worker frees 100 K blocks of 32 B of an owner
 *    that waits (so that most go home as themselves) and the owner takes
 *    them back and writes over them, eight times; no call may crash (they
 *    read the blocks on their way home in place, which their owner may
 *    already have handed out again);
 *  - owners that exit: forty times a thread makes 8,000 blocks of 32 B,
 *    the main thread frees them and the owner exits, draining them as it
 *    goes; then the messages out of the pool must be no more than the main
 *    thread keeps (read from hak_stats_print's JSON);
 *  - a fork child's count: four owners keep the messages that brought
 *    their 1,800 blocks home and are alive when the main thread forks; the
 *    child, where they are gone, must count no more out than the main
 *    thread holds.
 *
 * TEST_NO_RSS=1 skips the resident-memory bounds (sanitizer runs), and
 * TEST_NO_RACY_STATS=1 the statistics while blocks travel, whose reads of
 * other threads' heaps race with their owners by design (the thread
 * sanitizer's run); the counts need hakmem's statistics.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc.h"
#include "check.h"
#include "hakmem.h"
#include "rng.h"
#include "rss.h"

#pragma weak hak_stats_get
#pragma weak hak_stats_print

enum { IDLE_BLOCKS = 400000, MIX_BLOCKS = 200000 };

static void *blocks[IDLE_BLOCKS];
static size_t sizes[IDLE_BLOCKS];
static size_t nblocks;

static void *free_all(void *arg)
{
	if (arg != NULL)
		t_free(t_malloc(16)); /* a heap of its own */
	for (size_t i = 0; i < nblocks; i++)
		t_free(blocks[i]);
	return NULL;
}

static void free_in_thread(int with_heap)
{
	pthread_t t;
	if (!CHECK(pthread_create(&t, NULL, free_all, with_heap ? &t : NULL) == 0))
		exit(check_finish());
	pthread_join(t, NULL);
}

/* Allocates n blocks of sizes from `size` (0: random, 16 B to 64 KiB) and
 * writes each whole with its index. */
static void allocate(size_t n, size_t size)
{
	uint64_t rng = 7;
	for (size_t i = 0; i < n; i++) {
		size_t s = size != 0 ? size
		         : rng_below(&rng, 8) ? 16 + rng_below(&rng, 1000) : 1024 + rng_below(&rng, 64512);
		blocks[i] = t_malloc(s);
		if (!CHECK(blocks[i] != NULL))
			exit(check_finish());
		sizes[i] = s;
		memset(blocks[i], (int)(i & 0xff), s);
		memcpy(blocks[i], &i, sizeof i < s ? sizeof i : s);
	}
	nblocks = n;
}

static void verify(void)
{
	size_t bad = 0;
	for (size_t i = 0; i < nblocks; i++) {
		const unsigned char *b = blocks[i];
		size_t id;
		memcpy(&id, b, sizeof id);
		if (id != i || b[sizes[i] - 1] != (unsigned char)(i & 0xff))
			bad++;
	}
	CHECKF(bad == 0, "%zu of %zu blocks do not hold what was written", bad, nblocks);
}

/* Blocks live in the classes of up to max_size bytes. */
static uint64_t live_blocks_upto(size_t max_size)
{
	static struct hak_stats s;
	hak_stats_get(&s);
	uint64_t live = 0;
	for (unsigned c = 0; c < HAK_STATS_CLASSES; c++)
		if (s.classes[c].block_size <= max_size)
			live += s.classes[c].live;
	return live;
}

static uint64_t live_blocks(void)
{
	return live_blocks_upto(SIZE_MAX);
}

static void test_idle_owner(int measure)
{
	t_collect();
	allocate(IDLE_BLOCKS, 32);
	verify();
	size_t before = rss_bytes();
	free_in_thread(1);
	size_t after_free = rss_bytes();
	allocate(IDLE_BLOCKS, 32);
	verify();
	size_t after_again = rss_bytes();
	if (measure) {
		CHECKF(after_free <= before + MiB,
		       "freeing 400 K blocks of an idle owner grew resident memory from %zu to %zu KiB",
		       before >> 10, after_free >> 10);
		CHECKF(after_again <= after_free + MiB,
		       "400 K blocks of 32 B after 400 K were freed grew resident memory from %zu to %zu KiB",
		       after_free >> 10, after_again >> 10);
	}
	for (size_t i = 0; i < nblocks; i++)
		t_free(blocks[i]);
	nblocks = 0;
}

static void test_every_block_arrives(void)
{
	int stats = hak_stats_get != NULL;
	t_collect();
	uint64_t base = stats ? live_blocks() : 0;
	allocate(MIX_BLOCKS, 0);
	verify();
	free_in_thread(0);
	nblocks = 0;
	t_collect();
	if (!stats) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return;
	}
	uint64_t live = live_blocks();
	CHECKF(live == base, "%llu blocks live after a thread freed all 200 K made since %llu were",
	       (unsigned long long)live, (unsigned long long)base);
}

enum { OWNERS = 6, OWNER_BLOCKS = 20000 };
static void *owned[OWNERS][OWNER_BLOCKS];
static pthread_barrier_t owners_made, owners_freed;

static void *owner(void *arg)
{
	uint64_t rng = 11 + (uintptr_t)arg;
	void **mine = owned[(uintptr_t)arg];
	for (size_t i = 0; i < OWNER_BLOCKS; i++) {
		size_t s = 16 + rng_below(&rng, 4081);
		mine[i] = t_malloc(s);
		if (!CHECK(mine[i] != NULL))
			exit(check_finish());
		memset(mine[i], 0x5a, s);
	}
	pthread_barrier_wait(&owners_made);
	pthread_barrier_wait(&owners_freed); /* then exit: home at last */
	return NULL;
}

static void *free_owners_in_turn(void *arg)
{
	(void)arg;
	for (size_t i = 0; i < OWNER_BLOCKS; i++)
		for (unsigned k = 0; k < OWNERS; k++)
			t_free(owned[k][i]);
	return NULL;
}

static void test_more_owners_than_batches(void)
{
	int stats = hak_stats_get != NULL;
	t_collect();
	uint64_t base = stats ? live_blocks() : 0;
	pthread_t t[OWNERS], f;
	pthread_barrier_init(&owners_made, NULL, OWNERS + 1);
	pthread_barrier_init(&owners_freed, NULL, OWNERS + 1);
	for (uintptr_t k = 0; k < OWNERS; k++)
		if (!CHECK(pthread_create(&t[k], NULL, owner, (void *)k) == 0))
			exit(check_finish());
	pthread_barrier_wait(&owners_made);
	if (!CHECK(pthread_create(&f, NULL, free_owners_in_turn, NULL) == 0))
		exit(check_finish());
	pthread_join(f, NULL);
	pthread_barrier_wait(&owners_freed);
	for (unsigned k = 0; k < OWNERS; k++)
		pthread_join(t[k], NULL);
	t_collect();
	if (!stats) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return;
	}
	uint64_t live = live_blocks();
	/* Not equal: the threads' own (glibc's) blocks may have come and gone. */
	CHECKF(live <= base, "%llu blocks live after a thread freed the 120 K of six owners "
	       "in turn, %llu before they were made",
	       (unsigned long long)live, (unsigned long long)base);
}

/* The most messages out of the pool that the main thread may hold when
 * the other threads are gone: its stash (32) and those parked in its heap
 * for its senders (47). */
#define MAIN_HOLDS (32 + 47)

/* The messages not in the pool, from hak_stats_print's JSON; -1 where it
 * does not say. */
static long messages_out(void)
{
	int fds[2];
	if (!CHECK(pipe(fds) == 0))
		exit(check_finish());
	hak_stats_print(fds[1], true);
	close(fds[1]);
	static char json[1 << 16];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof json - 1 && (n = read(fds[0], json + len, sizeof json - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	json[len] = 0;
	const char *at = strstr(json, "\"remote_messages\":{\"made\":");
	at = at != NULL ? strstr(at, "\"out\":") : NULL;
	return at != NULL ? strtol(at + 6, NULL, 10) : -1;
}

enum { ROUND_THREADS = 8, ROUNDS = 30, ROUND_BLOCKS = 2000 };
/* Blocks of 16 to 48 B, counted in their classes alone at the end: glibc's
 * own blocks come and go with the threads (a new thread's DTV, 320 bytes
 * here, stays with a stack glibc caches for reuse). */
#define ROUND_MAX_SIZE 48
/* handed[from][to]: what thread `from` made this round for thread `to`. */
static void **handed[ROUND_THREADS][ROUND_THREADS];
static size_t handed_n[ROUND_THREADS][ROUND_THREADS];
static pthread_barrier_t round_made, round_freed;

static uint64_t origin(uintptr_t from, unsigned round, size_t i)
{
	return (uint64_t)from << 48 | (uint64_t)round << 32 | i;
}

static void *round_thread(void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	uint64_t rng = 101 + me;
	for (unsigned round = 0; round < ROUNDS; round++) {
		for (unsigned to = 0; to < ROUND_THREADS; to++)
			handed_n[me][to] = 0;
		for (size_t i = 0; i < ROUND_BLOCKS; i++) {
			unsigned to = (unsigned)rng_below(&rng, ROUND_THREADS - 1);
			to += to >= me; /* another thread */
			uint64_t *b = t_malloc(16 + 8 * rng_below(&rng, (ROUND_MAX_SIZE - 16) / 8 + 1));
			if (!CHECK(b != NULL))
				exit(check_finish());
			b[0] = origin(me, round, i);
			b[1] = ~b[0];
			handed[me][to][handed_n[me][to]++] = b;
		}
		pthread_barrier_wait(&round_made);
		for (unsigned from = 0; from < ROUND_THREADS; from++) {
			for (size_t i = 0; i < handed_n[from][me]; i++) {
				uint64_t *b = handed[from][me][i];
				if (!CHECKF(b[1] == ~b[0] && b[0] >> 48 == from &&
				            (b[0] >> 32 & 0xffff) == round,
				            "round %u: a block handed from thread %u to %u was "
				            "overwritten before its free",
				            round, from, (unsigned)me))
					exit(check_finish());
				t_free(b);
			}
		}
		pthread_barrier_wait(&round_freed);
	}
	return NULL;
}

static void test_messages_go_round(void)
{
	int stats = hak_stats_get != NULL;
	t_collect();
	uint64_t base = stats ? live_blocks_upto(ROUND_MAX_SIZE) : 0;
	for (unsigned from = 0; from < ROUND_THREADS; from++)
		for (unsigned to = 0; to < ROUND_THREADS; to++)
			handed[from][to] = calloc(ROUND_BLOCKS, sizeof(void *));
	pthread_barrier_init(&round_made, NULL, ROUND_THREADS);
	pthread_barrier_init(&round_freed, NULL, ROUND_THREADS);
	pthread_t t[ROUND_THREADS];
	for (uintptr_t k = 0; k < ROUND_THREADS; k++)
		if (!CHECK(pthread_create(&t[k], NULL, round_thread, (void *)k) == 0))
			exit(check_finish());
	for (unsigned k = 0; k < ROUND_THREADS; k++)
		pthread_join(t[k], NULL);
	for (unsigned from = 0; from < ROUND_THREADS; from++)
		for (unsigned to = 0; to < ROUND_THREADS; to++)
			free(handed[from][to]);
	t_collect();
	if (!stats) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return;
	}
	uint64_t live = live_blocks_upto(ROUND_MAX_SIZE);
	CHECKF(live <= base, "%llu blocks of up to 48 B live after eight threads passed 480 K among them, "
	       "%llu before", (unsigned long long)live, (unsigned long long)base);
	/* And every message back in the pool, but what this thread holds:
	 * none lost on the way (a lost one costs no block, only the pool). */
	long out = messages_out();
	CHECKF(out >= 0 && out <= MAIN_HOLDS, "%ld remote-free messages out of the pool after eight threads "
	       "passed blocks among them and exited", out);
}

enum { EXIT_ROUNDS = 40, EXIT_BLOCKS = 8000 };
static pthread_barrier_t exit_made, exit_freed;

static void *owner_that_exits(void *arg)
{
	(void)arg;
	allocate(EXIT_BLOCKS, 32);
	pthread_barrier_wait(&exit_made);
	pthread_barrier_wait(&exit_freed); /* then exit, its blocks on their way */
	return NULL;
}

/* Owners exit with their blocks on their way home, forty times: each drains
 * them at its exit, and the messages that carried them must go back to the
 * pool, not stay with the thread that is gone (they did, up to the 32 an
 * exiting thread kept: after 8 such exits the pool was spent for good, and
 * every remote free after went as its own message). */
static void test_owners_that_exit(void)
{
	if (hak_stats_print == NULL) {
		check_skip("hak_stats_print not present (not running on hakmem)");
		return;
	}
	pthread_barrier_init(&exit_made, NULL, 2);
	pthread_barrier_init(&exit_freed, NULL, 2);
	for (int round = 0; round < EXIT_ROUNDS; round++) {
		pthread_t t;
		if (!CHECK(pthread_create(&t, NULL, owner_that_exits, NULL) == 0))
			exit(check_finish());
		pthread_barrier_wait(&exit_made);
		for (size_t i = 0; i < nblocks; i++)
			t_free(blocks[i]);
		nblocks = 0;
		pthread_barrier_wait(&exit_freed);
		pthread_join(t, NULL);
	}
	t_collect();
	long out = messages_out();
	CHECKF(out >= 0 && out <= MAIN_HOLDS, "%ld remote-free messages out of the pool after %d owners "
	       "exited with their blocks on the way home, one thread left", out, EXIT_ROUNDS);
}

/* The abandoned heap a thread's exit pushes past the warm ones gives back
 * its memory in that exit, its remote frees drained first: the messages
 * that brought them must go to the pool, not to the exiting thread, whose
 * stash is gone by then.  Each round: five threads with heaps of their
 * own; the first allocates and exits, the second frees its blocks (they
 * reach the abandoned heap as messages when it exits), and the other three
 * exit one after another, the last pushing the first's heap out of the
 * warm ones (WARM_ABANDONED, heap.c: 4). */
enum { COLD_THREADS = 5, COLD_ROUNDS = 8, COLD_BLOCKS = 8000 };
static sem_t cold_go[COLD_THREADS];
static pthread_barrier_t cold_ready;

static void *cold_thread(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	if (k == 0)
		allocate(COLD_BLOCKS, 32);
	else
		t_free(t_malloc(16)); /* a heap of its own */
	pthread_barrier_wait(&cold_ready);
	sem_wait(&cold_go[k]);
	if (k == 1) {
		free_all(NULL);
		nblocks = 0;
	}
	return NULL;
}

static void test_cold_heap_messages(void)
{
	if (hak_stats_print == NULL) {
		check_skip("hak_stats_print not present (not running on hakmem)");
		return;
	}
	pthread_barrier_init(&cold_ready, NULL, COLD_THREADS + 1);
	for (int k = 0; k < COLD_THREADS; k++)
		sem_init(&cold_go[k], 0, 0);
	for (int round = 0; round < COLD_ROUNDS; round++) {
		pthread_t t[COLD_THREADS];
		for (uintptr_t k = 0; k < COLD_THREADS; k++)
			if (!CHECK(pthread_create(&t[k], NULL, cold_thread, (void *)k) == 0))
				exit(check_finish());
		pthread_barrier_wait(&cold_ready);
		for (int k = 0; k < COLD_THREADS; k++) {
			sem_post(&cold_go[k]);
			pthread_join(t[k], NULL);
		}
	}
	t_collect();
	long out = messages_out();
	CHECKF(out >= 0 && out <= MAIN_HOLDS, "%ld remote-free messages out of the pool after %d "
	       "abandoned heaps were pushed out of the warm ones with remote frees waiting",
	       out, COLD_ROUNDS);
}

enum { FORK_OWNERS = 4, FORK_BLOCKS = 1800 };
static void *fork_owned[FORK_OWNERS][FORK_BLOCKS];
static pthread_barrier_t fork_made, fork_freed, fork_drained, fork_done;

static void *owner_at_fork(void *arg)
{
	void **mine = fork_owned[(uintptr_t)arg];
	for (size_t i = 0; i < FORK_BLOCKS; i++)
		if (!CHECK((mine[i] = t_malloc(32)) != NULL))
			exit(check_finish());
	pthread_barrier_wait(&fork_made);
	pthread_barrier_wait(&fork_freed);
	/* Refills take the blocks home, and the thread keeps the messages. */
	for (size_t i = 0; i < FORK_BLOCKS; i++)
		mine[i] = t_malloc(32);
	pthread_barrier_wait(&fork_drained);
	pthread_barrier_wait(&fork_done); /* alive while the main thread forks */
	for (size_t i = 0; i < FORK_BLOCKS; i++)
		t_free(mine[i]);
	return NULL;
}

/* Four owners keep the messages that brought their blocks home (under 32
 * each, so all kept) and are alive when the main thread forks: in the
 * child, which has only the main thread, those messages are gone, and the
 * count of messages out of the pool must say so (it did not: a child of a
 * program with many threads could find the pool spent). */
static void test_fork_child_count(void)
{
	if (hak_stats_print == NULL) {
		check_skip("hak_stats_print not present (not running on hakmem)");
		return;
	}
	pthread_barrier_init(&fork_made, NULL, FORK_OWNERS + 1);
	pthread_barrier_init(&fork_freed, NULL, FORK_OWNERS + 1);
	pthread_barrier_init(&fork_drained, NULL, FORK_OWNERS + 1);
	pthread_barrier_init(&fork_done, NULL, FORK_OWNERS + 1);
	pthread_t t[FORK_OWNERS];
	for (uintptr_t k = 0; k < FORK_OWNERS; k++)
		if (!CHECK(pthread_create(&t[k], NULL, owner_at_fork, (void *)k) == 0))
			exit(check_finish());
	pthread_barrier_wait(&fork_made);
	for (size_t i = 0; i < FORK_BLOCKS; i++)
		for (unsigned k = 0; k < FORK_OWNERS; k++)
			t_free(fork_owned[k][i]);
	t_collect(); /* sends what the batches hold */
	pthread_barrier_wait(&fork_freed);
	pthread_barrier_wait(&fork_drained);
	long parent = messages_out();
	pid_t pid = fork();
	if (pid == 0) {
		long out = messages_out();
		_exit(out >= 0 && out <= MAIN_HOLDS ? 0 : 1);
	}
	int status = 0;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "a fork child counts messages out of the pool that its parent's other threads "
	       "kept (%ld out in the parent)", parent);
	pthread_barrier_wait(&fork_done);
	for (unsigned k = 0; k < FORK_OWNERS; k++)
		pthread_join(t[k], NULL);
}

static atomic_int stats_stop;

static void *stats_loop(void *arg)
{
	(void)arg;
	static struct hak_stats s;
	while (!atomic_load(&stats_stop))
		hak_stats_get(&s);
	return NULL;
}

static void test_stats_while_travelling(void)
{
	if (hak_stats_get == NULL) {
		check_skip("hak_stats_get not present (not running on hakmem)");
		return;
	}
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (!CHECK(pthread_create(&t[i], NULL, stats_loop, NULL) == 0))
			exit(check_finish());
	for (int round = 0; round < 8; round++) {
		allocate(100000, 32);
		free_in_thread(1);
		/* Taken back: overwritten whole, links and all. */
		allocate(100000, 32);
		for (size_t i = 0; i < nblocks; i++)
			t_free(blocks[i]);
		nblocks = 0;
	}
	atomic_store(&stats_stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

int main(void)
{
	check_init("remote_messages");
	const char *no_rss = getenv("TEST_NO_RSS");
	const char *no_racy_stats = getenv("TEST_NO_RACY_STATS");
	if (!(no_racy_stats != NULL && no_racy_stats[0] == '1'))
		test_stats_while_travelling();
	test_idle_owner(!(no_rss != NULL && no_rss[0] == '1'));
	test_every_block_arrives();
	test_more_owners_than_batches();
	test_messages_go_round();
	test_owners_that_exit();
	test_cold_heap_messages();
	test_fork_child_count();
	return check_finish();
}
