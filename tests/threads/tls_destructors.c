/*
 * tls_destructors.c: allocation from thread-exit and process-exit code.
 * pthread key destructors run in an unspecified order relative to
 * hakmem's own thread teardown, for up to PTHREAD_DESTRUCTOR_ITERATIONS
 * rounds; each round here frees the key's block, allocates and frees
 * more, and sets a new block that the next round frees.  atexit handlers
 * and a destructor function free blocks after main has returned.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc.h"
#include "check.h"
#include "pattern.h"

enum { THREADS = 16, ROUNDS = 20 };

static pthread_key_t key;

struct tls_block {
	int rounds_left;
	size_t n;
	unsigned char data[];
};

static struct tls_block *new_block(int rounds_left, size_t n)
{
	struct tls_block *b = t_malloc(sizeof *b + n);
	if (!CHECK(b != NULL))
		return NULL;
	b->rounds_left = rounds_left;
	b->n = n;
	pattern_fill(b->data, n, n);
	return b;
}

static void key_destructor(void *value)
{
	struct tls_block *b = value;
	CHECKF(pattern_ok(b->data, b->n, b->n), "TLS block changed before thread exit");
	int left = b->rounds_left;
	t_free(b);
	/* Work in the middle of thread teardown. */
	void *scratch[50];
	for (int i = 0; i < 50; i++)
		scratch[i] = t_malloc((size_t)i * 97 + 1);
	for (int i = 0; i < 50; i++)
		t_free(scratch[i]);
	if (left > 0)
		pthread_setspecific(key, new_block(left - 1, (size_t)left * 1000));
}

static void *worker(void *arg)
{
	(void)arg;
	/* Allocate before and after setting the key, so that hakmem's heap
	 * may be set up on either side of this thread's TLS destructor. */
	void *early = t_malloc(64);
	pthread_setspecific(key, new_block(PTHREAD_DESTRUCTOR_ITERATIONS - 1, 5000));
	void *late = t_malloc(128);
	t_free(early);
	t_free(late);
	return NULL;
}

static void *leftover[4];

static void free_at_exit(void)
{
	for (int i = 0; i < 4; i++) {
		CHECKF(pattern_ok(leftover[i], 1000, (uint64_t)i), "block changed before atexit");
		t_free(leftover[i]);
		t_free(t_malloc(100000));
	}
	/* check_finish already ran; a failure now must still show: exit code. */
	if (check_failures())
		_exit(1);
}

static void *for_destructor;

__attribute__((destructor)) static void free_in_destructor(void)
{
	t_free(for_destructor);
	t_free(t_malloc(1 << 20));
}

int main(void)
{
	check_init("tls_destructors");
	CHECK(pthread_key_create(&key, key_destructor) == 0);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t tid[THREADS];
		for (int i = 0; i < THREADS; i++)
			CHECK(pthread_create(&tid[i], NULL, worker, NULL) == 0);
		for (int i = 0; i < THREADS; i++)
			pthread_join(tid[i], NULL);
	}
	for (int i = 0; i < 4; i++) {
		leftover[i] = t_malloc(1000);
		if (leftover[i])
			pattern_fill(leftover[i], 1000, (uint64_t)i);
	}
	atexit(free_at_exit);
	for_destructor = t_malloc(300);
	return check_finish();
}
