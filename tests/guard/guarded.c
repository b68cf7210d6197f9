/*
 * guarded.c: sampled guarded allocations (HAKMEM_GUARD_SAMPLE=N), run by
 * tests/run.sh with N = 1 (every block guarded) and N = 1000, preloaded and
 * linked statically, and with the feature off.
 *
 * On: a use after free (a read of the first byte of each freed block), an
 * overflow (a read one past the 64-byte class of each live block) and a
 * double free, each in a child process, must end in the exact report line,
 * the allocation's stack (and for a use after free the free's) naming this
 * program's allocating and freeing functions, and death by SIGSEGV (SIGABRT
 * for the double free).  Reads of unguarded blocks are harmless: the first
 * guarded one faults.  A fault elsewhere, or a SIGSEGV or SIGBUS the program
 * sends itself, still kills as it would have.
 *
 * Off: no SIGSEGV or SIGBUS handler is installed and no block is guarded.
 */
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

#define SIZE 64

/* Not static: -rdynamic exports them, for dladdr's names in the reports. */
void alloc_blocks(void);
void free_blocks(void);
void read_each(unsigned long offset);
void free_twice(void);

static unsigned long nblocks;
static char **blocks;
static volatile char sink;

__attribute__((noinline)) void alloc_blocks(void)
{
	for (unsigned long i = 0; i < nblocks; i++)
		blocks[i] = malloc(SIZE);
	__asm__ volatile("" ::: "memory"); /* a return address inside, not a tail call */
}

__attribute__((noinline)) void free_blocks(void)
{
	for (unsigned long i = 0; i < nblocks; i++)
		free(blocks[i]);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void read_each(unsigned long offset)
{
	for (unsigned long i = 0; i < nblocks; i++)
		sink = blocks[i][offset];
}

/* Whether the page at p can be read: write(2) from it fails with EFAULT,
 * and does not fault, where it cannot. */
static bool readable(const void *p)
{
	int fds[2];
	if (pipe(fds) != 0)
		return true;
	bool ok = write(fds[1], p, 1) == 1;
	close(fds[0]);
	close(fds[1]);
	return ok;
}

/* A guarded 64-byte block ends where its page ends, before a guard page. */
static bool guarded(const char *p)
{
	return (uintptr_t)(p + SIZE) % 4096 == 0 && !readable(p + SIZE);
}

static void use_after_free(void *arg)
{
	(void)arg;
	alloc_blocks();
	free_blocks();
	read_each(0);
}

static void overflow(void *arg)
{
	(void)arg;
	alloc_blocks();
	read_each(SIZE);
}

__attribute__((noinline)) void free_twice(void)
{
	for (unsigned long i = 0; i < nblocks; i++) {
		if (guarded(blocks[i])) {
			free(blocks[i]);
			free(blocks[i]);
		}
	}
	__asm__ volatile("" ::: "memory");
}

static void double_free(void *arg)
{
	(void)arg;
	alloc_blocks();
	free_twice();
}

static void wild_read(void *arg)
{
	volatile char *wild = arg;
	sink = *wild;
}

/* A SIGSEGV or SIGBUS the program sends itself: no fault, no address. */
static void send_self(void *arg)
{
	int sig = (int)(intptr_t)arg;
	if (sig == SIGSEGV)
		raise(sig);
	else
		kill(getpid(), sig);
}

/* This program's functions, for naming the frames of a stack by address
 * (the static program has no dynamic symbols for dladdr). */
static const struct {
	const char *name;
	uintptr_t addr;
} functions[] = {
	{"alloc_blocks", (uintptr_t)alloc_blocks}, {"free_blocks", (uintptr_t)free_blocks},
	{"read_each", (uintptr_t)read_each},       {"readable", (uintptr_t)readable},
	{"guarded", (uintptr_t)guarded},           {"use_after_free", (uintptr_t)use_after_free},
	{"overflow", (uintptr_t)overflow},         {"free_twice", (uintptr_t)free_twice},
	{"double_free", (uintptr_t)double_free},   {"wild_read", (uintptr_t)wild_read},
	{"send_self", (uintptr_t)send_self},
};

/* The function of this program a frame's address lies in, or NULL. */
static const char *function_at(uintptr_t pc)
{
	const char *best = NULL;
	uintptr_t best_addr = 0;
	for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
		if (functions[i].addr < pc && functions[i].addr >= best_addr) {
			best = functions[i].name;
			best_addr = functions[i].addr;
		}
	}
	return best != NULL && pc - best_addr < 1024 ? best : NULL;
}

/* Whether the stack after the line `title` in err has a frame in `fn`. */
static bool stack_names(const char *err, const char *title, const char *fn)
{
	const char *s = strstr(err, title);
	if (s == NULL)
		return false;
	for (s = strchr(s, '\n'); s != NULL && strncmp(s, "\n    #", 6) == 0; s = strchr(s + 1, '\n')) {
		const char *hex = strstr(s, " 0x");
		if (hex == NULL)
			return false;
		const char *fn_at = function_at((uintptr_t)strtoumax(hex + 1, NULL, 16));
		if (fn_at != NULL && strcmp(fn_at, fn) == 0)
			return true;
	}
	return false;
}

static void expect_fault(const char *what, void (*fn)(void *), const char *kind, const char *access,
			 bool freed)
{
	struct child_result r;
	if (!CHECK(run_in_child(fn, NULL, 60, &r) == 0))
		return;
	char how[64];
	CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV, "%s: child %s, want SIGSEGV",
	       what, describe_status(r.status, how, sizeof how));
	uintptr_t addr = 0, block = 0;
	char line[256];
	int n = sscanf(r.err, "hakmem: %*s at 0x%" SCNxPTR " : %*s %*s bytes %*s", &addr);
	const char *at = strstr(r.err, "-byte block at 0x");
	if (at != NULL)
		block = (uintptr_t)strtoumax(at + 15, NULL, 16);
	snprintf(line, sizeof line, "hakmem: %s at 0x%" PRIxPTR " : %s %s a %d-byte block at 0x%" PRIxPTR "\n",
		 kind, addr, access, freed ? "0 bytes into" : "0 bytes past the end of", SIZE, block);
	CHECKF(n == 1 && addr == block + (freed ? 0 : SIZE) && strncmp(r.err, line, strlen(line)) == 0,
	       "%s: report \"%.300s\", want \"%s\"", what, r.err, line);
	CHECKF(stack_names(r.err, "  allocated at:\n", "alloc_blocks"),
	       "%s: the allocation's stack does not name alloc_blocks:\n%s", what, r.err);
	if (freed)
		CHECKF(stack_names(r.err, "  freed at:\n", "free_blocks"),
		       "%s: the free's stack does not name free_blocks:\n%s", what, r.err);
#ifdef PRELOADED
	/* Preloaded, dladdr names them (the program is linked -rdynamic). */
	CHECKF(strstr(r.err, " alloc_blocks+0x") != NULL, "%s: no alloc_blocks by name:\n%s", what,
	       r.err);
#endif
}

static void guard_on(unsigned long rate)
{
	struct sigaction sa;
	CHECK(sigaction(SIGSEGV, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO));
	expect_fault("use after free", use_after_free, "use-after-free", "read", true);
	expect_fault("overflow", overflow, "heap-buffer-overflow", "read", false);

	struct child_result r;
	if (CHECK(run_in_child(double_free, NULL, 60, &r) == 0)) {
		char how[64];
		CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT,
		       "double free: child %s, want SIGABRT", describe_status(r.status, how, sizeof how));
		uintptr_t p = 0;
		int n = sscanf(r.err, "hakmem: double free: free(0x%" SCNxPTR ") 64\n", &p);
		char line[128];
		snprintf(line, sizeof line, "hakmem: double free: free(0x%" PRIxPTR ") 64\n", p);
		CHECKF(n == 1 && strcmp(r.err, line) == 0, "double free: report \"%s\"", r.err);
	}
	/* A fault that is not the guard's goes to the handler there before (here
	 * the default): the process dies of it, with no report. */
	if (CHECK(run_in_child(wild_read, (void *)16, 60, &r) == 0)) {
		CHECK(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV);
		CHECKF(strstr(r.err, "hakmem") == NULL, "wild read: stderr \"%s\"", r.err);
	}
	/* So does one the program sends itself (raise, kill), which no access
	 * made again brings back: python's concurrent.futures tests crash
	 * workers so, and the workers lived on. */
	int sent[] = {SIGSEGV, SIGBUS};
	for (unsigned i = 0; i < 2; i++) {
		if (CHECK(run_in_child(send_self, (void *)(intptr_t)sent[i], 60, &r) == 0)) {
			char how[64];
			CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == sent[i],
			       "%s sent to itself: child %s", strsignal(sent[i]),
			       describe_status(r.status, how, sizeof how));
			CHECKF(strstr(r.err, "hakmem") == NULL, "sent signal: stderr \"%s\"", r.err);
		}
	}
	/* Usable size, realloc and free of guarded blocks, from the parent. */
	alloc_blocks();
	unsigned long nguarded = 0;
	for (unsigned long i = 0; i < nblocks; i++) {
		nguarded += guarded(blocks[i]);
		CHECK(malloc_usable_size(blocks[i]) == SIZE);
		memset(blocks[i], (int)i, SIZE);
		blocks[i] = realloc(blocks[i], 3 * SIZE);
		CHECK(blocks[i] != NULL && blocks[i][SIZE - 1] == (char)i);
	}
	free_blocks();
	if (rate == 1)
		CHECKF(nguarded == nblocks, "%lu of %lu blocks guarded", nguarded, nblocks);
	else
		CHECKF(nguarded > 0 && nguarded < nblocks / 100, "%lu of %lu blocks guarded", nguarded,
		       nblocks);
}

static void guard_off(void)
{
	struct sigaction sa;
	CHECK(sigaction(SIGSEGV, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL);
	CHECK(sigaction(SIGBUS, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL);
	alloc_blocks();
	unsigned long nguarded = 0;
	for (unsigned long i = 0; i < nblocks; i++)
		nguarded += guarded(blocks[i]);
	CHECKF(nguarded == 0, "%lu blocks guarded with guard sampling off", nguarded);
	read_each(SIZE); /* a neighbour's byte: harmless */
	free_blocks();
}

int main(void)
{
	check_init("guarded");
	const char *env = getenv("HAKMEM_GUARD_SAMPLE");
	unsigned long rate = env != NULL ? strtoul(env, NULL, 10) : 0;
	nblocks = rate == 1 ? 200 : 50000;
	blocks = calloc(nblocks, sizeof *blocks);
	if (rate == 0)
		guard_off();
	else
		guard_on(rate);
	return check_finish();
}
