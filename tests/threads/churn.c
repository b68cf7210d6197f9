/*
 * churn.c: generations of short-lived threads.  Each thread allocates and
 * writes a few thousand blocks, frees half of them itself, frees blocks
 * that a thread of the previous (now dead) generation left behind, hands a
 * quarter to the main thread and keeps a quarter until it exits.  The
 * pages of dead threads must be reused: after a warm-up, resident memory
 * must stay flat however many generations run (TEST_NO_RSS=1 skips that
 * bound, for sanitizer runs whose runtime has its own footprint).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "check.h"
#include "pattern.h"
#include "rng.h"
#include "rss.h"

enum { THREADS = 4, BLOCKS = 2000 };

struct block {
	void *p;
	size_t n;
	uint64_t seed;
};

/* handoff[g % 2][t]: blocks thread t of generation g leaves to others. */
struct handoff {
	struct block to_main[BLOCKS / 4];
	struct block to_next[BLOCKS / 8];
};
static struct handoff handoff[2][THREADS];

struct job {
	unsigned gen, index;
};

static void free_verified(struct block *b)
{
	if (!b->p)
		return;
	CHECKF(pattern_ok(b->p, b->n, b->seed), "block of %zu bytes changed", b->n);
	t_free(b->p);
	b->p = NULL;
}

static void *generation_thread(void *arg)
{
	const struct job *job = arg;
	uint64_t rng = ((uint64_t)job->gen << 8) | job->index;
	struct handoff *mine = &handoff[job->gen % 2][job->index];
	struct handoff *prev = &handoff[(job->gen + 1) % 2][job->index];
	struct block own[BLOCKS];

	for (unsigned i = 0; i < BLOCKS; i++) {
		size_t n = rng_below(&rng, 50) ? 16 + rng_below(&rng, 4000)
					       : 65536 + rng_below(&rng, 400000);
		own[i] = (struct block){ t_malloc(n), n, rng_next(&rng) };
		if (CHECK(own[i].p != NULL))
			pattern_fill(own[i].p, n, own[i].seed);
	}
	/* Blocks whose owner thread has exited, freed by this one. */
	for (unsigned i = 0; i < BLOCKS / 8; i++)
		free_verified(&prev->to_next[i]);
	for (unsigned i = 0; i < BLOCKS; i++) {
		unsigned share = i % 8;
		if (share < 4)
			free_verified(&own[i]);
		else if (share < 6)
			mine->to_main[(i / 8) * 2 + share - 4] = own[i];
		else if (share == 6)
			mine->to_next[i / 8] = own[i];
		else
			continue;   /* freed at exit, below */
		own[i].p = NULL;
	}
	for (unsigned i = 0; i < BLOCKS; i++)
		free_verified(&own[i]);
	return NULL;
}

int main(void)
{
	check_init("churn");
	unsigned gens = (unsigned)test_scaled(150);
	size_t peak[3] = { 0, 0, 0 };    /* per third of the generations */
	for (unsigned g = 0; g < gens; g++) {
		pthread_t tid[THREADS];
		struct job job[THREADS];
		for (unsigned t = 0; t < THREADS; t++) {
			job[t] = (struct job){ g, t };
			CHECK(pthread_create(&tid[t], NULL, generation_thread, &job[t]) == 0);
		}
		for (unsigned t = 0; t < THREADS; t++)
			pthread_join(tid[t], NULL);
		/* The main thread frees what the dead threads handed to it. */
		for (unsigned t = 0; t < THREADS; t++)
			for (unsigned i = 0; i < BLOCKS / 4; i++)
				free_verified(&handoff[g % 2][t].to_main[i]);
		size_t rss = rss_bytes(), *p = &peak[g * 3 / gens];
		if (rss > *p)
			*p = rss;
	}
	for (unsigned t = 0; t < THREADS; t++)
		for (unsigned i = 0; i < BLOCKS / 8; i++)
			free_verified(&handoff[(gens - 1) % 2][t].to_next[i]);

	printf("%u generations of %u threads; peak RSS per third: %zu, %zu, %zu MiB\n",
	       gens, THREADS, peak[0] / MiB, peak[1] / MiB, peak[2] / MiB);
	if (getenv("TEST_NO_RSS"))
		check_skip("RSS bound (TEST_NO_RSS is set)");
	else
		CHECKF(peak[2] <= peak[1] + 48 * MiB,
		       "RSS still grows: peak %zu MiB in the middle third of the "
		       "generations, %zu MiB in the last: memory of exited threads is "
		       "not reused", peak[1] / MiB, peak[2] / MiB);
	return check_finish();
}
