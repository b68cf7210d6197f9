/*
 * misuse.c: the heap-misuse suite.  Each case misuses the heap in a child
 * process: double frees (at once, after another free, through a stale
 * pointer to a reused block, by free_sized, from another thread), frees and
 * reallocs of an address inside a block or misaligned, writes to a freed
 * block (its first words, its last byte, its middle found by calloc), a
 * read of a reused block's old contents, sized deletes whose size is not
 * the block's (delete of an array, delete[] of one object), and
 * a heap whose next block can be foretold (small blocks handed out in the
 * order they lie in memory).
 *
 * With HAKMEM_TEST_HARDENED=1 (the runner sets it for the hardened build,
 * build/libhakmem-secure.so) every case must end the child with SIGABRT
 * after exactly the one line
 *
 *     hakmem: <what>: <call>(0x<address>) <block size>
 *
 * and the stale-data and layout cases must exit 0.  On the default
 * build the cases are run and recorded, not checked (any one line of
 * hakmem's and SIGABRT counts as caught there): the log ends with how many
 * each build caught.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"
#include "compat.h"

enum kind {
	DOUBLE_FREE,         /* free(p); free(p) */
	DOUBLE_FREE_DELAYED, /* free(p); free(q); free(p) */
	DOUBLE_FREE_LAST,    /* free(p); free(p), p the only block of its page */
	DOUBLE_FREE_REUSED,  /* free(p); r = malloc (p again); free(r); free(p) */
	DOUBLE_FREE_SIZED,   /* free(p); free_sized(p) */
	DOUBLE_FREE_THREAD,  /* free(p); another thread frees p */
	DOUBLE_FREE_THREAD_TWICE, /* another thread frees p twice */
	DOUBLE_FREE_THREAD_OWNER, /* another thread frees p, then the owner */
	FREE_INSIDE,         /* free(p + about half the block, 16-aligned) */
	FREE_MISALIGNED,     /* free(p + 1) */
	REALLOC_INSIDE,      /* realloc(p + about half, 10) */
	WRITE_AFTER_FREE_LINK, /* free(p); p's first word written; mallocs */
	WRITE_AFTER_FREE_WORD, /* the same, second word */
	WRITE_AFTER_FREE_LAST, /* the same, last byte of the block */
	WRITE_AFTER_FREE_MIDDLE, /* the same, middle byte; callocs */
	STALE_READ,          /* p filled, freed, handed out again: still filled? */
	DELETE_ARRAY,        /* new char[n], freed by delete with sizeof (char) */
	DELETE_ONE,          /* a new object of n bytes, freed by delete[] with 4 n */
	LAYOUT,              /* 16 mallocs: each block right after the one before? */
};

struct misuse {
	enum kind kind;
	const char *name;
	const char *what; /* the report's <what> */
	const char *call; /* and <call> */
};

static const struct misuse misuses[] = {
	{ DOUBLE_FREE, "double free", "double free", "free" },
	{ DOUBLE_FREE_DELAYED, "double free, another block freed between", "double free", "free" },
	{ DOUBLE_FREE_LAST, "double free of the last block of its page", "double free", "free" },
	{ DOUBLE_FREE_REUSED, "double free through a stale pointer to a reused block", "double free", "free" },
	{ DOUBLE_FREE_SIZED, "double free by free_sized", "double free", "free_sized" },
	{ DOUBLE_FREE_THREAD, "double free, the second by another thread", "double free", "free" },
	{ DOUBLE_FREE_THREAD_TWICE, "double free, both by another thread", "double free", "free" },
	{ DOUBLE_FREE_THREAD_OWNER, "double free, the first by another thread", "double free", "free" },
	{ FREE_INSIDE, "free of an address inside the block", "pointer inside a block", "free" },
	{ FREE_MISALIGNED, "free of p + 1", "pointer inside a block", "free" },
	{ REALLOC_INSIDE, "realloc of an address inside the block", "pointer inside a block", "realloc" },
	{ WRITE_AFTER_FREE_LINK, "write to a freed block's first word", "write to a freed block", "malloc" },
	{ WRITE_AFTER_FREE_WORD, "write to a freed block's second word", "write to a freed block", "malloc" },
	{ WRITE_AFTER_FREE_LAST, "write to a freed block's last byte", "write to a freed block", "malloc" },
	/* calloc reads every byte; malloc (which calloc calls first) all of a
	 * block up to 128 bytes, and names itself there (run_case). */
	{ WRITE_AFTER_FREE_MIDDLE, "write to a freed block's middle byte, found by calloc",
	  "write to a freed block", "calloc" },
	{ STALE_READ, "a reused block shows the old block's bytes", NULL, NULL },
	{ DELETE_ARRAY, "delete (sized) of an array", "wrong size", "operator delete" },
	{ DELETE_ONE, "delete[] (sized) of one object", "wrong size", "operator delete[]" },
	{ LAYOUT, "blocks handed out in the order they lie in memory", NULL, NULL },
};

/* Small, medium, large and huge (a huge block's double free and the write
 * after it are caught while its range is in the huge cache, which a 1 MiB
 * range is by default). */
static const size_t sizes[] = { 16, 64, 1024, 4096, 8000, 100000, 1 << 20 };

struct job {
	const struct misuse *m;
	size_t size;   /* requested */
	size_t block;  /* usable size: the block size in the report */
	char *p;       /* allocated by the parent, so that it knows the address */
	char *q;       /* another block of the size */
	char *addr;    /* the address the report must name */
};

static void *thread_free(void *arg)
{
	free(arg);
	return NULL;
}

static void *thread_free_twice(void *arg)
{
	free(arg);
	free(arg);
	return NULL;
}

static void free_in_thread(void *(*fn)(void *), void *p)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, p) == 0)
		pthread_join(t, NULL);
}

/* Mallocs of the size until p comes back (or many did not). */
static bool malloc_until(size_t size, const void *p)
{
	for (int i = 0; i < 20000; i++)
		if (malloc(size) == p)
			return true;
	return false;
}

/* The sized operator deletes (C++14), called the way a C++ program's
 * `delete p` and `delete[] p` call them for a type without a destructor
 * (new[] then keeps no count before the array): found at run time, so that
 * this C program needs no C++ runtime. */
typedef void sized_delete(void *, size_t);

static void call_delete(const char *name, void *p, size_t size)
{
	sized_delete *fn = (sized_delete *)dlsym(RTLD_DEFAULT, name);
	if (fn == NULL)
		exit(5);
	fn(p, size);
}

static void misuse(void *arg)
{
	const struct job *j = arg;
	char *p = j->p;
	switch (j->m->kind) {
	case DOUBLE_FREE:
	case DOUBLE_FREE_LAST:
		free(p);
		free(p);
		break;
	case DOUBLE_FREE_DELAYED:
		free(p);
		free(j->q);
		free(p);
		break;
	case DOUBLE_FREE_REUSED: {
		free(p);
		char *r = malloc(j->size);
		free(r);
		free(p);
		break;
	}
	case DOUBLE_FREE_SIZED:
		free(p);
		free_sized(p, j->size);
		break;
	case DOUBLE_FREE_THREAD:
		free(p);
		free_in_thread(thread_free, p);
		break;
	case DOUBLE_FREE_THREAD_TWICE:
		free_in_thread(thread_free_twice, p);
		break;
	case DOUBLE_FREE_THREAD_OWNER:
		free_in_thread(thread_free, p);
		free(p);
		break;
	case FREE_INSIDE:
	case FREE_MISALIGNED:
		free(j->addr);
		break;
	case REALLOC_INSIDE:
		realloc(j->addr, 10);
		break;
	case WRITE_AFTER_FREE_LINK:
	case WRITE_AFTER_FREE_WORD:
	case WRITE_AFTER_FREE_LAST: {
		free(p);
		size_t at = j->m->kind == WRITE_AFTER_FREE_LINK ? 0
			  : j->m->kind == WRITE_AFTER_FREE_WORD ? 8 : j->block - 1;
		p[at] ^= 0x5a;
		malloc_until(j->size, p);
		break;
	}
	case WRITE_AFTER_FREE_MIDDLE:
		free(p);
		p[j->block / 2] ^= 0x5a;
		for (int i = 0; i < 20000 && calloc(1, j->size) != p; i++)
			;
		break;
	case DELETE_ARRAY:
		call_delete("_ZdlPvm", p, 1);
		break;
	case DELETE_ONE:
		call_delete("_ZdaPvm", p, 4 * j->size);
		break;
	case LAYOUT: {
		char *last = malloc(j->size);
		for (int i = 0; i < 16; i++) {
			char *next = malloc(j->size);
			if (next != last + j->block)
				exit(0); /* not foretold */
			last = next;
		}
		exit(3);
	}
	case STALE_READ: {
		memset(p, 0xab, j->block);
		free(p);
		if (!malloc_until(j->size, p))
			exit(4); /* not handed out again: nothing to tell */
		for (size_t i = 0; i < j->block; i++)
			if ((unsigned char)p[i] == 0xab)
				exit(3);
		break;
	}
	}
}

static unsigned cases, caught;

static void run_case(const struct misuse *m, size_t size, bool hardened)
{
	struct job j = { .m = m, .size = size };
	/* q, allocated first, keeps a medium or large page in use after p's
	 * free (an emptied page may be retired: its blocks are then nobody's). */
	j.q = m->kind == DOUBLE_FREE_LAST ? NULL : malloc(size);
	j.p = malloc(size);
	j.block = malloc_usable_size(j.p);
	size_t inside = (j.block / 2) & ~(size_t)15;
	j.addr = m->kind == FREE_MISALIGNED ? j.p + 1 : inside ? j.p + inside : j.p + 8;
	if (m->kind != FREE_INSIDE && m->kind != FREE_MISALIGNED && m->kind != REALLOC_INSIDE)
		j.addr = j.p;

	char want[200] = "";
	const char *call = m->kind == WRITE_AFTER_FREE_MIDDLE && j.block <= 128 ? "malloc" : m->call;
	if (m->what != NULL)
		snprintf(want, sizeof want, "hakmem: %s: %s(0x%" PRIxPTR ") %zu\n", m->what, call,
			 (uintptr_t)j.addr, j.block);

	struct child_result r;
	if (!CHECK(run_in_child(misuse, &j, 10, &r) == 0))
		return;
	/* Caught: SIGABRT after one line of hakmem's (the default build's
	 * "invalid pointer" line counts); exact: the hardened build's line. */
	bool detected, exact;
	if (m->kind == STALE_READ || m->kind == LAYOUT) {
		detected = exact = WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
	} else {
		detected = WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT &&
			   strncmp(r.err, "hakmem: ", 8) == 0 &&
			   strchr(r.err, '\n') == r.err + r.err_len - 1;
		exact = detected && strcmp(r.err, want) == 0;
	}
	char how[64];
	describe_status(r.status, how, sizeof how);
	cases++;
	caught += detected;
	printf("%-7s %s, %zu bytes (child %s)\n", detected ? "caught" : "missed", m->name, size,
	       how);
	if (hardened)
		CHECKF(exact, "%s, %zu bytes: child %s, stderr \"%s\", want \"%s\"", m->name, size,
		       how, r.err,
		       m->kind == STALE_READ ? "(exit 0: the block cleared)"
		       : m->kind == LAYOUT   ? "(exit 0: an order not foretold)" : want);
	free(j.q);
	/* p stays: the child did what it did to its copy of the heap. */
}

int main(void)
{
	check_init("hardened/misuse");
	const char *env = getenv("HAKMEM_TEST_HARDENED");
	bool hardened = env != NULL && strcmp(env, "1") == 0;
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (size_t m = 0; m < sizeof misuses / sizeof misuses[0]; m++)
			if (misuses[m].kind != DOUBLE_FREE_LAST &&
			    /* Every size up to 16 bytes has the class of 16: a
			     * delete of the array says nothing wrong. */
			    !(misuses[m].kind == DELETE_ARRAY && sizes[s] <= 16) &&
			    /* Medium, large and huge blocks are handed out lowest
			     * first, in both builds (bitmap_page.c: the high pages
			     * drain and give their memory back). */
			    !(misuses[m].kind == LAYOUT && sizes[s] > 4096) &&
			    /* A freed huge block is checked in its first and last
			     * 64 bytes only (its range is cleared when it serves
			     * again, not read). */
			    !(misuses[m].kind == WRITE_AFTER_FREE_MIDDLE && sizes[s] > (512 << 10)))
				run_case(&misuses[m], sizes[s], hardened);
	/* A class nothing else here uses: p is alone in its page, which its
	 * free retires. */
	for (size_t m = 0; m < sizeof misuses / sizeof misuses[0]; m++)
		if (misuses[m].kind == DOUBLE_FREE_LAST)
			run_case(&misuses[m], 300000, hardened);
	printf("%s build: %u of %u misuse cases caught\n", hardened ? "hardened" : "default", caught,
	       cases);
	return check_finish();
}
