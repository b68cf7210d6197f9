/*
 * check.h: the assertion layer shared by every C and C++ test program.
 *
 * A check never stops the program: it counts, prints the first failures and
 * lets the test go on, so one run shows every broken behaviour.  main() ends
 * with `return check_finish();`, which prints the counts the runner sums up.
 */
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CHECK(cond) records one check; CHECKF adds a printf-style message. */
#define CHECK(cond) check_at((cond) != 0, __FILE__, __LINE__, "%s", #cond)
#define CHECKF(cond, ...) check_at((cond) != 0, __FILE__, __LINE__, __VA_ARGS__)

bool check_at(bool ok, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Start of a program: verifies that the allocator the runner asked for
 * (TEST_ALLOCATOR=hakmem) is the one that serves malloc. */
void check_init(const char *program);

/* Marks a part of the test that could not run here, with the reason. */
void check_skip(const char *why);

/* Number of failed checks so far (a child process reports it as exit code). */
unsigned long check_failures(void);

/* n scaled by the TEST_SCALE environment variable (a percentage, default
 * 100), at least 1: the sanitizer and valgrind runs do less work. */
unsigned long test_scaled(unsigned long n);

/* Prints "checks: N" and "failed: M"; returns the exit status for main. */
int check_finish(void);

#ifdef __cplusplus
}
#endif

#endif
