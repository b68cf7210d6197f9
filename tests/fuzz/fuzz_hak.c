/*
 * fuzz_hak.c: libFuzzer target that reads its input as a program of hak_*
 * calls and checks each result against a model of what every live block
 * must contain.
 *
 * The model: 64 slots, each empty or holding a block with its requested
 * size, alignment, how it was allocated and the seed of the pattern that
 * fills it.  Every block is verified before it is resized or freed and at
 * the end of the input; sizes, alignments and usable sizes are checked on
 * every allocation; impossible requests must fail with the right errno and
 * leave the blocks alone.  Blocks can be freed by a second thread.
 *
 * Any violation prints what went wrong and aborts, which libFuzzer records
 * as a crash with the input that caused it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "pattern.h"

enum { SLOTS = 64 };
/* Live bytes stay below this so a run fits in the fuzzer's memory limit. */
#define LIVE_LIMIT ((size_t)256 << 20)

enum how { FROM_MALLOC, FROM_ALIGNED_ALLOC, FROM_MEMALIGN };

struct slot {
	unsigned char *p;
	size_t n, align;
	enum how how;
	uint64_t seed;
};

static struct slot slot[SLOTS];
static size_t live_bytes;
static uint64_t next_seed;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("fuzz_hak: model violated: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

/* ---- reading the input ---------------------------------------------- */

struct input {
	const uint8_t *data;
	size_t left;
};

static uint8_t byte(struct input *in)
{
	if (in->left == 0)
		return 0;
	in->left--;
	return *in->data++;
}

static size_t bytes(struct input *in, int count)
{
	size_t v = 0;
	for (int i = 0; i < count; i++)
		v = (v << 8) | byte(in);
	return v;
}

/* Mostly small sizes, sometimes medium, rarely multi-megabyte ones. */
static size_t size_from(struct input *in)
{
	uint8_t sel = byte(in);
	switch (sel >> 5) {
	case 0: case 1: case 2:
		return sel & 31 ? bytes(in, 1) : 0;
	case 3: case 4:
		return bytes(in, 2) % 4096;
	case 5:
		return bytes(in, 2);
	case 6:
		return bytes(in, 3) % (1 << 20);
	default:
		return bytes(in, 3) % ((size_t)8 << 20);
	}
}

/* ---- the model ---------------------------------------------------------- */

static void verify(const struct slot *s, const char *when)
{
	size_t bad = pattern_find_mismatch(s->p, s->n, s->seed);
	if (bad != (size_t)-1)
		fail("%s: block %p of %zu bytes changed at offset %zu", when,
		     (void *)s->p, s->n, bad);
}

/* A fresh block from an allocation call: check it and fill it. */
static void adopt(struct slot *s, void *p, size_t n, size_t align, enum how how,
		  int zeroed)
{
	if (p == NULL)
		fail("allocation of %zu bytes (alignment %zu) returned NULL", n, align);
	size_t want = align < 16 ? 16 : align;
	if ((uintptr_t)p & (want - 1))
		fail("%p for %zu bytes is not %zu-aligned", p, n, want);
	if (t_usable_size(p) < n)
		fail("usable size %zu < %zu", t_usable_size(p), n);
	if (zeroed && find_nonzero(p, n) != (size_t)-1)
		fail("calloc(%zu) block is not zero at %zu", n, find_nonzero(p, n));
	*s = (struct slot){ p, n, align, how, ++next_seed };
	pattern_fill(p, n, s->seed);
	live_bytes += n;
}

static void release(struct slot *s, int sized)
{
	verify(s, "before free");
	live_bytes -= s->n;
	if (sized && s->how == FROM_MALLOC)
		t_free_sized(s->p, s->n);
	else if (sized && s->how == FROM_ALIGNED_ALLOC)
		t_free_aligned_sized(s->p, s->align, s->n);
	else
		t_free(s->p);
	s->p = NULL;
}

static int room_for(size_t n)
{
	return live_bytes + n <= LIVE_LIMIT;
}

/* ---- a second thread that frees what it is given ------------------------ */

static pthread_mutex_t mailbox_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mailbox_cond = PTHREAD_COND_INITIALIZER;
static struct slot mailbox;
static int mailbox_full;

static void *remote_freer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mailbox_lock);
	for (;;) {
		while (!mailbox_full)
			pthread_cond_wait(&mailbox_cond, &mailbox_lock);
		verify(&mailbox, "in the other thread");
		t_free(mailbox.p);
		mailbox_full = 0;
		pthread_cond_broadcast(&mailbox_cond);
	}
	return NULL;
}

/* Synchronous hand-over keeps every run deterministic. */
static void free_in_other_thread(struct slot *s)
{
	pthread_mutex_lock(&mailbox_lock);
	mailbox = *s;
	mailbox_full = 1;
	pthread_cond_broadcast(&mailbox_cond);
	while (mailbox_full)
		pthread_cond_wait(&mailbox_cond, &mailbox_lock);
	pthread_mutex_unlock(&mailbox_lock);
	live_bytes -= s->n;
	s->p = NULL;
}

/* ---- the operations ---------------------------------------------------- */

static void expect_fail(void *p, int err, const char *what, size_t arg)
{
	int got = errno;
	if (p != NULL)
		fail("%s(%#zx) succeeded, should fail", what, arg);
	if (got != err)
		fail("%s(%#zx): errno %d, want %d", what, arg, got, err);
}

/* Requests that cannot be served: each must fail and change nothing. */
static void impossible(struct input *in, struct slot *s)
{
	static const size_t huge[] = { SIZE_MAX, SIZE_MAX - 15, SIZE_MAX / 2 + 1,
				       (size_t)1 << 48, SIZE_MAX - 4096 };
	size_t h = huge[byte(in) % 5];
	void *p = NULL;
	errno = 0;
	switch (byte(in) % 6) {
	case 0: expect_fail(t_malloc(h), ENOMEM, "malloc", h); break;
	case 1: expect_fail(t_calloc(h / 8 + 1, 16), ENOMEM, "calloc", h); break;
	case 2:
		if (s->p) {
			expect_fail(t_realloc(s->p, h), ENOMEM, "realloc", h);
			verify(s, "after a failed realloc");
		}
		break;
	case 3: expect_fail(t_aligned_alloc(4096, h), ENOMEM, "aligned_alloc", h); break;
	case 4:
		expect_fail(t_aligned_alloc(24 + 16 * (size_t)byte(in), 16), EINVAL,
			    "aligned_alloc with a bad alignment", h);
		break;
	default:
		if (t_posix_memalign(&p, 8 * (size_t)(3 + 2 * byte(in)), 16) != EINVAL)
			fail("posix_memalign with a bad alignment did not give EINVAL");
		break;
	}
}

static void step(struct input *in)
{
	uint8_t op = byte(in);
	struct slot *s = &slot[byte(in) % SLOTS];
	if (s->p && op % 16 < 7) {
		/* Allocations into an occupied slot free the old block first. */
		release(s, op & 16);
	}
	size_t n, align;
	void *p;
	switch (op % 16) {
	case 0:
	case 1:
		n = size_from(in);
		if (room_for(n))
			adopt(s, t_malloc(n), n, 16, FROM_MALLOC, 0);
		break;
	case 2: {
		size_t count = byte(in) + 1, each = size_from(in) / count;
		if (room_for(count * each))
			adopt(s, t_calloc(count, each), count * each, 16, FROM_MALLOC, 1);
		break;
	}
	case 3:
		align = (size_t)1 << (byte(in) % 24);
		n = size_from(in);
		if (room_for(n))
			adopt(s, t_aligned_alloc(align, n), n, align, FROM_ALIGNED_ALLOC, 0);
		break;
	case 4:
		align = (size_t)8 << (byte(in) % 21);
		n = size_from(in);
		p = NULL;
		if (room_for(n)) {
			int rc = t_posix_memalign(&p, align, n);
			if (rc != 0)
				fail("posix_memalign(%zu, %zu) = %d", align, n, rc);
			adopt(s, p, n, align, FROM_MEMALIGN, 0);
		}
		break;
	case 5:
		align = (size_t)1 << (byte(in) % 24);
		n = size_from(in);
		if (room_for(n))
			adopt(s, t_memalign(align, n), n, align, FROM_MEMALIGN, 0);
		break;
	case 6:
		n = size_from(in);
		if (room_for(2 * n))
			adopt(s, t_reallocarray(NULL, n, 2), 2 * n, 16, FROM_MALLOC, 0);
		break;
	case 7:
	case 8:
		if (!s->p)
			break;
		n = size_from(in);
		if (!room_for(n))
			break;
		verify(s, "before realloc");
		p = t_realloc(s->p, n);
		if (n == 0 && p == NULL) {   /* realloc(p, 0) may free p */
			live_bytes -= s->n;
			s->p = NULL;
			break;
		}
		if (p == NULL)
			fail("realloc(%zu -> %zu) returned NULL", s->n, n);
		{
			size_t keep = n < s->n ? n : s->n;
			size_t bad = pattern_find_mismatch(p, keep, s->seed);
			if (bad != (size_t)-1)
				fail("realloc(%zu -> %zu) lost byte %zu", s->n, n, bad);
		}
		live_bytes -= s->n;
		adopt(s, p, n, 16, FROM_MALLOC, 0);
		break;
	case 9:
	case 10:
		if (s->p)
			release(s, op & 16);
		break;
	case 11:
		if (s->p)
			free_in_other_thread(s);
		break;
	case 12:
		/* Write the slack between size and usable size: it is the
		 * caller's to use and must not belong to any other block. */
		if (s->p) {
			size_t u = t_usable_size(s->p);
			for (size_t i = s->n; i < u; i++)
				s->p[i] = 0xee;
		}
		break;
	case 13:
		impossible(in, s);
		break;
	case 14:
		if (byte(in) == 0)
			t_collect();
		break;
	default:
		/* Re-verify everything now and then. */
		for (int i = 0; i < SLOTS; i++)
			if (slot[i].p)
				verify(&slot[i], "on re-check");
		break;
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	pthread_t t;
	if (pthread_create(&t, NULL, remote_freer, NULL) != 0)
		fail("cannot start the second thread");
	pthread_detach(t);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	while (in.left > 0)
		step(&in);
	for (int i = 0; i < SLOTS; i++)
		if (slot[i].p)
			release(&slot[i], 0);
	if (live_bytes != 0)
		fail("model lost track: %zu live bytes after freeing all", live_bytes);
	return 0;
}
