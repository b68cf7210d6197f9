/*
 * hardened_xfail.c: EXPECTED TO FAIL on the default build.  Its contract
 * does not promise to detect 16-byte aligned interior pointers or double
 * frees of blocks up to 4 KiB (medium_large_free.c covers the larger
 * blocks); the runner reports this program as XFAIL there and as XPASS
 * once the default build detects these.  The hardened build (make secure)
 * does: there it runs as secure/bad/hardened_xfail and must pass.  Detection means: SIGABRT
 * and one "hakmem: " line on stderr.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "check.h"
#include "child.h"

static void *block;

static void free_interior(void *arg)
{
	free((char *)block + (size_t)(uintptr_t)arg);
}

static void double_free(void *arg)
{
	(void)arg;
	void *p = malloc(64);
	free(p);
	free(p);
	/* Make a missed double free visible: the list now hands p out twice. */
	void *a = malloc(64), *b = malloc(64);
	(void)a;
	(void)b;
}

static void expect_detected(const char *what, void (*fn)(void *), void *arg)
{
	struct child_result r;
	if (!CHECK(run_in_child(fn, arg, 10, &r) == 0))
		return;
	char how[64];
	CHECKF(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT &&
	       strncmp(r.err, "hakmem: ", 8) == 0 && strchr(r.err, '\n') == r.err + r.err_len - 1,
	       "%s not detected: child %s, stderr \"%s\"", what,
	       describe_status(r.status, how, sizeof how), r.err);
}

int main(void)
{
	check_init("hardened_xfail");
	block = malloc(4000);
	expect_detected("free(p + 16)", free_interior, (void *)16);
	expect_detected("free(p + 1024)", free_interior, (void *)1024);
	expect_detected("double free", double_free, NULL);
	free(block);
	return check_finish();
}
