/*
 * fork.c: fork from a program whose other threads keep allocating and
 * freeing.  In each child the blocks inherited from the parent are intact
 * and can be freed, the child allocates and frees all sizes, starts threads
 * of its own, forks a grandchild, and exits normally (exit(), so atexit
 * handlers and thread-exit paths run).  A child that deadlocks on a lock
 * held by a parent's thread at fork time is killed by SIGALRM and counted.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "pattern.h"
#include "rng.h"

enum { BUSY_THREADS = 3, KEPT = 64 };

static atomic_int stop;

/* A parent thread: allocation traffic of every size until told to stop. */
static void *busy(void *arg)
{
	uint64_t rng = (uintptr_t)arg;
	void *held[32] = { 0 };
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned i = (unsigned)rng_below(&rng, 32);
		free(held[i]);
		size_t n = rng_below(&rng, 20) ? 1 + rng_below(&rng, 2000)
					       : 1 + rng_below(&rng, (size_t)2 << 20);
		held[i] = malloc(n);
		if (held[i])
			pattern_fill(held[i], n < 64 ? n : 64, n);
	}
	for (unsigned i = 0; i < 32; i++)
		free(held[i]);
	return NULL;
}

struct kept {
	void *p;
	size_t n;
};

static void *child_thread(void *arg)
{
	uint64_t rng = (uintptr_t)arg;
	for (int i = 0; i < 500; i++) {
		size_t n = 1 + rng_below(&rng, 20000);
		void *p = malloc(n);
		if (CHECK(p != NULL)) {
			pattern_fill(p, n, n);
			CHECK(pattern_ok(p, n, n));
		}
		free(p);
	}
	return NULL;
}

static void child_work(const struct kept *kept, int depth)
{
	for (int i = 0; i < KEPT; i++) {
		CHECKF(kept[i].p && pattern_ok(kept[i].p, kept[i].n, (uintptr_t)i),
		       "inherited block %d changed in the child", i);
		free(kept[i].p);
	}
	for (size_t n = 1; n < ((size_t)8 << 20); n = n * 2 + 1) {
		void *p = malloc(n);
		void *q = aligned_alloc(4096, n);
		if (CHECK(p && q)) {
			pattern_fill(p, n, 1);
			pattern_fill(q, n, 2);
			CHECK(pattern_ok(p, n, 1) && pattern_ok(q, n, 2));
		}
		free(p);
		free(q);
	}
	pthread_t t[2];
	for (uintptr_t i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, child_thread, (void *)(i + 7)) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (depth == 0) {
		/* A child that has run threads of its own forks again. */
		pid_t pid = fork();
		if (pid == 0) {
			free(malloc(100));
			exit(check_failures() ? 1 : 0);
		}
		int status = 0;
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
		char how[80];
		CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "grandchild %s",
		       describe_status(status, how, sizeof how));
	}
}

int main(void)
{
	check_init("fork");
	pthread_t tid[BUSY_THREADS];
	for (uintptr_t i = 0; i < BUSY_THREADS; i++)
		CHECK(pthread_create(&tid[i], NULL, busy, (void *)(i + 1)) == 0);

	unsigned forks = (unsigned)test_scaled(40);
	for (unsigned f = 0; f < forks; f++) {
		struct kept kept[KEPT];
		for (int i = 0; i < KEPT; i++) {
			kept[i].n = (size_t)1 << (i % 22);
			kept[i].p = malloc(kept[i].n);
			if (kept[i].p)
				pattern_fill(kept[i].p, kept[i].n, (uintptr_t)i);
		}
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(30);
			child_work(kept, 0);
			exit(check_failures() ? 1 : 0);
		}
		int status = 0;
		if (CHECK(pid > 0))
			CHECK(waitpid(pid, &status, 0) == pid);
		char how[80];
		describe_status(status, how, sizeof how);
		CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %u %s%s",
		       f, how, WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
				       ? " (hung: deadlock after fork?)" : "");
		/* The parent's blocks are unaffected by the child. */
		for (int i = 0; i < KEPT; i++) {
			CHECK(kept[i].p && pattern_ok(kept[i].p, kept[i].n, (uintptr_t)i));
			free(kept[i].p);
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < BUSY_THREADS; i++)
		pthread_join(tid[i], NULL);
	return check_finish();
}
