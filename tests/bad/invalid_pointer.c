/*
 * invalid_pointer.c: a pointer hakmem did not hand out, passed to free,
 * realloc, malloc_usable_size, free_sized or free_aligned_sized, kills the
 * process with SIGABRT after exactly one line on stderr:
 *
 *     hakmem: free(): invalid pointer 0x7ffc12345670
 *
 * (the call's name in place of free).  The contract covers pointers outside
 * every hakmem region (stack, global, a private mapping, small integers)
 * and pointers that are not 16-byte aligned (p + 1, p + 8 of a real block).
 * Each call runs in a child process.
 */
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"
#include "compat.h"

struct bad_call {
	const char *fn;
	void *ptr;
	const char *kind;    /* for messages: where the pointer comes from */
};

static void make_call(void *arg)
{
	const struct bad_call *c = arg;
	if (strcmp(c->fn, "free") == 0)
		free(c->ptr);
	else if (strcmp(c->fn, "realloc") == 0)
		realloc(c->ptr, 100);
	else if (strcmp(c->fn, "malloc_usable_size") == 0)
		malloc_usable_size(c->ptr);
	else if (strcmp(c->fn, "free_sized") == 0)
		free_sized(c->ptr, 32);
	else if (strcmp(c->fn, "free_aligned_sized") == 0)
		free_aligned_sized(c->ptr, 16, 32);
}

/* The whole of stderr must be the one documented line naming c->ptr. */
static void check_message(const struct bad_call *c, const char *err)
{
	uintmax_t value = 0;
	int ok = invalid_pointer_line(err, c->fn, &value) && value == (uintptr_t)c->ptr;
	CHECKF(ok, "%s(%s %p): stderr was \"%s\", want \"hakmem: %s(): invalid pointer 0x%" PRIxPTR "\\n\"",
	       c->fn, c->kind, c->ptr, err, c->fn, (uintptr_t)c->ptr);
}

static void expect_abort(const struct bad_call *c)
{
	struct child_result r;
	if (!CHECK(run_in_child(make_call, (void *)c, 10, &r) == 0))
		return;
	char how[64];
	CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
	       "%s(%s %p): child %s, want SIGABRT", c->fn, c->kind, c->ptr,
	       describe_status(r.status, how, sizeof how));
	check_message(c, r.err);
}

static _Alignas(16) char global_buf[64];

int main(void)
{
	check_init("invalid_pointer");
	_Alignas(16) char stack_buf[64];
	char *mapped = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mapped != MAP_FAILED);

	struct bad_call ptrs[64];
	size_t n = 0;
	ptrs[n++] = (struct bad_call){ NULL, stack_buf, "stack" };
	ptrs[n++] = (struct bad_call){ NULL, global_buf, "global" };
	ptrs[n++] = (struct bad_call){ NULL, mapped, "private mmap" };
	ptrs[n++] = (struct bad_call){ NULL, mapped + 4096 + 48, "inside private mmap" };
	ptrs[n++] = (struct bad_call){ NULL, (void *)0x10, "small integer" };
	ptrs[n++] = (struct bad_call){ NULL, (void *)0x1000, "small integer" };
	static const size_t sizes[] = { 16, 32, 5000, 100000, 600000, (size_t)16 << 20 };
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		char *p = malloc(sizes[i]);
		if (!CHECK(p != NULL))
			continue;
		ptrs[n++] = (struct bad_call){ NULL, p + 1, "p + 1 of a block" };
		ptrs[n++] = (struct bad_call){ NULL, p + 8, "p + 8 of a block" };
	}
	char *al = aligned_alloc(4096, 8192);
	ptrs[n++] = (struct bad_call){ NULL, al + 8, "p + 8 of an aligned block" };

	static const char *const fns[] = { "free", "realloc", "malloc_usable_size",
					   "free_sized", "free_aligned_sized" };
	for (size_t f = 0; f < sizeof fns / sizeof *fns; f++) {
		if (strncmp(fns[f], "free_", 5) == 0 && !free_sized) {
			check_skip("free_sized is not provided (glibc)");
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			ptrs[i].fn = fns[f];
			expect_abort(&ptrs[i]);
		}
	}

	/* The parent, which never passed a bad pointer, is unaffected. */
	void *p = malloc(100);
	CHECK(p != NULL);
	free(p);
	return check_finish();
}
