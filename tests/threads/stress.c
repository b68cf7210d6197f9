/*
 * stress.c: many threads allocate with random sizes and functions, write
 * a pattern derived from each block into it, resize blocks, and pass
 * blocks to each other to be verified and freed by another thread than the
 * one that allocated them.  Every block is verified before it is resized
 * or freed: overlap, double hand-out, a lost remote free or a realloc that
 * loses data all show up as a changed pattern.  Each thread also calls
 * hak_collect (malloc_trim on glibc) now and then, racing the others.
 *
 * Built against malloc & co. and, with -DTEST_HAK_NAMES, against hak_*
 * for the sanitizer runs.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "check.h"
#include "pattern.h"
#include "rng.h"

enum { THREADS = 8, SLOTS = 256, INBOX = 64 };

enum kind { PLAIN, ALIGNED, MEMALIGNED };

struct item {
	void *p;
	size_t n;
	size_t align;
	enum kind kind;
	uint64_t seed;
};

/* Blocks sent to a thread; it verifies, then frees or adopts them. */
struct inbox {
	pthread_mutex_t lock;
	struct item item[INBOX];
	size_t count;
};

static struct inbox inbox[THREADS];
static pthread_barrier_t sending_done;
static unsigned long ops_per_thread;
static atomic_ulong n_allocs, n_frees, n_remote_frees;

static size_t random_size(uint64_t *rng)
{
	uint64_t r = rng_below(rng, 1000);
	if (r < 600)
		return 1 + rng_below(rng, 128);
	if (r < 850)
		return 129 + rng_below(rng, 2048 - 128);
	if (r < 960)
		return 2049 + rng_below(rng, 64 * 1024);
	if (r < 997)
		return 65536 + rng_below(rng, 1 << 20);
	return ((size_t)1 << 20) + rng_below(rng, (size_t)3 << 20);
}

static void allocate(struct item *it, uint64_t *rng)
{
	size_t n = random_size(rng);
	it->n = n;
	it->kind = PLAIN;
	it->align = 16;
	it->p = NULL;
	switch (rng_below(rng, 8)) {
	case 0:
		it->p = t_calloc(1, n);
		if (it->p)
			CHECKF(find_nonzero(it->p, n) == (size_t)-1,
			       "calloc(%zu) is not zeroed", n);
		break;
	case 1:
		it->p = t_realloc(NULL, n);
		break;
	case 2:
		it->kind = ALIGNED;
		it->align = (size_t)32 << rng_below(rng, 12);
		it->p = t_aligned_alloc(it->align, n);
		break;
	case 3:
		it->kind = MEMALIGNED;
		it->align = (size_t)16 << rng_below(rng, 10);
		if (t_posix_memalign(&it->p, it->align, n) != 0)
			it->p = NULL;
		break;
	default:
		it->p = t_malloc(n);
		break;
	}
	if (!CHECKF(it->p != NULL, "allocation of %zu bytes failed", n))
		return;
	CHECKF(((uintptr_t)it->p & (it->align - 1)) == 0, "%p not %zu-aligned",
	       it->p, it->align);
	CHECKF(t_usable_size(it->p) >= n, "usable size %zu < %zu",
	       t_usable_size(it->p), n);
	it->seed = rng_next(rng);
	pattern_fill(it->p, n, it->seed);
	atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
}

static void verify(const struct item *it)
{
	size_t bad = pattern_find_mismatch(it->p, it->n, it->seed);
	CHECKF(bad == (size_t)-1, "block %p (%zu bytes) changed at offset %zu",
	       it->p, it->n, bad);
}

/* Verifies and frees with the matching free function. */
static void release(struct item *it, uint64_t *rng)
{
	verify(it);
	if (it->kind == ALIGNED && rng_below(rng, 2))
		t_free_aligned_sized(it->p, it->align, it->n);
	else if (it->kind == PLAIN && rng_below(rng, 2))
		t_free_sized(it->p, it->n);
	else
		t_free(it->p);
	it->p = NULL;
	atomic_fetch_add_explicit(&n_frees, 1, memory_order_relaxed);
}

static void resize(struct item *it, uint64_t *rng)
{
	verify(it);
	size_t m = random_size(rng);
	void *q = t_realloc(it->p, m);
	if (!CHECKF(q != NULL, "realloc to %zu failed", m))
		return;
	size_t keep = m < it->n ? m : it->n;
	CHECKF(pattern_ok(q, keep, it->seed), "realloc %zu -> %zu lost data",
	       it->n, m);
	/* realloc keeps only malloc's 16-byte alignment. */
	it->p = q;
	it->n = m;
	it->kind = PLAIN;
	it->align = 16;
	it->seed = rng_next(rng);
	pattern_fill(q, m, it->seed);
}

/* Hands the block to another thread; false when its inbox is full. */
static int send(const struct item *it, unsigned to)
{
	struct inbox *box = &inbox[to];
	int sent = 0;
	pthread_mutex_lock(&box->lock);
	if (box->count < INBOX) {
		box->item[box->count++] = *it;
		sent = 1;
	}
	pthread_mutex_unlock(&box->lock);
	return sent;
}

/* Takes what others sent: half is freed here (a remote free), half adopted
 * into an empty slot and treated as this thread's own from now on. */
static void drain(unsigned self, struct item *slot, uint64_t *rng)
{
	struct item got[INBOX];
	struct inbox *box = &inbox[self];
	pthread_mutex_lock(&box->lock);
	size_t count = box->count;
	for (size_t i = 0; i < count; i++)
		got[i] = box->item[i];
	box->count = 0;
	pthread_mutex_unlock(&box->lock);
	for (size_t i = 0; i < count; i++) {
		struct item *empty = &slot[rng_below(rng, SLOTS)];
		if (rng_below(rng, 2) && empty->p == NULL) {
			verify(&got[i]);
			*empty = got[i];
		} else {
			release(&got[i], rng);
			atomic_fetch_add_explicit(&n_remote_frees, 1, memory_order_relaxed);
		}
	}
}

static void *worker(void *arg)
{
	unsigned self = (unsigned)(uintptr_t)arg;
	uint64_t rng = 0x1234 + self;
	struct item *slot = t_calloc(SLOTS, sizeof *slot);
	if (!CHECK(slot != NULL))
		return NULL;
	for (unsigned long op = 0; op < ops_per_thread; op++) {
		struct item *it = &slot[rng_below(&rng, SLOTS)];
		uint64_t r = rng_below(&rng, 100);
		if (it->p == NULL) {
			allocate(it, &rng);
		} else if (r < 45) {
			release(it, &rng);
		} else if (r < 60) {
			resize(it, &rng);
		} else if (r < 90) {
			unsigned to = (unsigned)rng_below(&rng, THREADS);
			if (to != self && send(it, to))
				it->p = NULL;
		} else {
			verify(it);
		}
		if (op % 64 == 0)
			drain(self, slot, &rng);
		/* "Safe to call from any thread": collect while others allocate. */
		if (op % 4096 == 4095)
			t_collect();
	}
	/* Nobody sends after the barrier: one last drain empties the inbox. */
	pthread_barrier_wait(&sending_done);
	drain(self, slot, &rng);
	for (unsigned i = 0; i < SLOTS; i++)
		if (slot[i].p)
			release(&slot[i], &rng);
	t_free(slot);
	return NULL;
}

int main(void)
{
	check_init("stress");
	ops_per_thread = test_scaled(40000);
	pthread_barrier_init(&sending_done, NULL, THREADS);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_mutex_init(&inbox[i].lock, NULL);
	pthread_t tid[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		CHECK(pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	unsigned long a = atomic_load(&n_allocs), f = atomic_load(&n_frees);
	CHECKF(a == f, "%lu allocations but %lu frees", a, f);
	printf("%u threads: %lu allocations, %lu frees, %lu by another thread\n",
	       THREADS, a, f, atomic_load(&n_remote_frees));
	pthread_barrier_destroy(&sending_done);
	return check_finish();
}
