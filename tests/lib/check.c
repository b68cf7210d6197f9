/* check.c: counting assertions; see check.h. */
#include "check.h"
#include "active.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Printing every failure of a loop over a million sizes would bury the
 * first one, which is usually the interesting one. */
enum { MAX_PRINTED = 40 };

static atomic_ulong n_checks;
static atomic_ulong n_failed;
static atomic_ulong n_skipped;

bool check_at(bool ok, const char *file, int line, const char *fmt, ...)
{
	atomic_fetch_add_explicit(&n_checks, 1, memory_order_relaxed);
	if (ok)
		return true;
	unsigned long nth = atomic_fetch_add(&n_failed, 1);
	if (nth < MAX_PRINTED) {
		/* One formatted line, written at once so threads do not interleave. */
		char msg[512];
		int len = snprintf(msg, sizeof msg, "FAIL %s:%d: ", file, line);
		va_list ap;
		va_start(ap, fmt);
		len += vsnprintf(msg + len, sizeof msg - (size_t)len, fmt, ap);
		va_end(ap);
		if (len > (int)sizeof msg - 2)
			len = (int)sizeof msg - 2;
		msg[len++] = '\n';
		fwrite(msg, 1, (size_t)len, stdout);
		fflush(stdout);
	} else if (nth == MAX_PRINTED) {
		puts("(further failures are counted, not printed)");
	}
	return false;
}

void check_init(const char *program)
{
	/* Unbuffered stdout keeps the log in order if the test dies. */
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *want = getenv("TEST_ALLOCATOR");
	if (want && strcmp(want, "hakmem") == 0) {
		const char *why = hakmem_inactive_reason();
		CHECKF(why == NULL, "%s: hakmem is not the allocator in use: %s",
		       program, why ? why : "");
	}
}

void check_skip(const char *why)
{
	atomic_fetch_add(&n_skipped, 1);
	printf("skip: %s\n", why);
}

unsigned long check_failures(void)
{
	return atomic_load(&n_failed);
}

unsigned long test_scaled(unsigned long n)
{
	const char *s = getenv("TEST_SCALE");
	unsigned long pct = s ? strtoul(s, NULL, 10) : 100;
	unsigned long r = n * pct / 100;
	return r ? r : 1;
}

int check_finish(void)
{
	printf("checks: %lu\nfailed: %lu\n", atomic_load(&n_checks),
	       atomic_load(&n_failed));
	return atomic_load(&n_failed) ? 1 : 0;
}
