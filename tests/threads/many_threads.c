/*
 * many_threads.c: 200 threads alive at once, each allocating blocks that
 * the next thread frees, in several rounds; then threads that exit while
 * their blocks are still live, freed afterwards by the main thread.  Many
 * heaps at the same time, each with remote frees pending.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"
#include "check.h"
#include "pattern.h"
#include "rng.h"

enum { THREADS = 200, BLOCKS = 100, ROUNDS = 3 };

struct block {
	void *p;
	size_t n;
};

static struct block blocks[THREADS][BLOCKS];
static pthread_barrier_t barrier;

static void *worker(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg;
	uint64_t rng = self * 7919u + 1;
	for (int round = 0; round < ROUNDS; round++) {
		for (unsigned i = 0; i < BLOCKS; i++) {
			size_t n = rng_below(&rng, 8) ? 1 + rng_below(&rng, 1500)
						      : 1 + rng_below(&rng, 200000);
			struct block *b = &blocks[self][i];
			b->p = t_malloc(n);
			b->n = n;
			if (CHECK(b->p != NULL))
				pattern_fill(b->p, n, self * 1000u + i);
		}
		pthread_barrier_wait(&barrier);
		/* Free the previous thread's blocks: all remote frees. */
		unsigned from = (self + THREADS - 1) % THREADS;
		for (unsigned i = 0; i < BLOCKS; i++) {
			struct block *b = &blocks[from][i];
			if (!b->p)
				continue;
			CHECKF(pattern_ok(b->p, b->n, from * 1000u + i),
			       "block %u of thread %u changed", i, from);
			t_free(b->p);
		}
		pthread_barrier_wait(&barrier);
	}
	/* Last round: leave blocks behind and exit. */
	for (unsigned i = 0; i < BLOCKS; i++) {
		struct block *b = &blocks[self][i];
		b->n = 1 + rng_below(&rng, 3000);
		b->p = t_malloc(b->n);
		if (CHECK(b->p != NULL))
			pattern_fill(b->p, b->n, self * 1000u + i);
	}
	return NULL;
}

int main(void)
{
	check_init("many_threads");
	pthread_barrier_init(&barrier, NULL, THREADS);
	pthread_t tid[THREADS];
	unsigned started = 0;
	for (unsigned i = 0; i < THREADS; i++)
		if (CHECK(pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)i) == 0))
			started++;
	if (started != THREADS) {
		/* The barrier would never open; nothing more can be tested. */
		return check_finish();
	}
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	/* Every owner has exited; the main thread frees what they left. */
	for (unsigned t = 0; t < THREADS; t++)
		for (unsigned i = 0; i < BLOCKS; i++) {
			struct block *b = &blocks[t][i];
			if (!b->p)
				continue;
			CHECKF(pattern_ok(b->p, b->n, t * 1000u + i),
			       "block %u left by exited thread %u changed", i, t);
			t_free(b->p);
		}
	pthread_barrier_destroy(&barrier);
	return check_finish();
}
