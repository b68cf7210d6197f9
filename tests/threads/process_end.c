/*
 * process_end.c: a process ends exactly when and how it would under glibc,
 * whatever memory waits to be given back.  An allocator's own thread must
 * never keep a process alive or hold its signals.  Each case runs in a
 * child that first allocates and frees blocks of every kind (memory then
 * waits to be purged); the parent gives it a deadline and kills it with
 * SIGKILL if it hangs.
 *   - main calls pthread_exit while a worker allocates and frees: the
 *     process exits 0 when the worker ends, and its atexit handler runs;
 *   - main alone frees memory and calls pthread_exit: exits 0;
 *   - a thread forks; in the child, that thread (the child's only one)
 *     returns from its start function: the child exits 0 and is reaped;
 *   - SIGTERM and SIGINT sent to a process that has freed memory and idles
 *     (single-threaded, with an idle worker, and with main gone and only a
 *     worker left): it dies of the signal.
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "churn_memory.h"

#define DEADLINE_MS 10000

static int report_fd = -1; /* the child's end of a pipe to the parent */

static void say(const char *what)
{
	if (write(report_fd, what, strlen(what)) < 0)
		_exit(100);
}

static void atexit_handler(void)
{
	say("atexit;");
}

static void *worker_churns(void *arg)
{
	(void)arg;
	churn_memory(5);
	say("worker;");
	return NULL;
}

/* Case 1: main leaves with pthread_exit while a worker still works. */
static void main_exits_first(void)
{
	atexit(atexit_handler);
	churn_memory(2);
	pthread_t t;
	if (pthread_create(&t, NULL, worker_churns, NULL) != 0)
		_exit(101);
	churn_memory(2);
	pthread_exit(NULL);
}

/* Case 2: main alone frees memory and leaves with pthread_exit. */
static void main_alone_exits(void)
{
	atexit(atexit_handler);
	churn_memory(3);
	pthread_exit(NULL);
}

/* Case 3: a thread forks; the child's only thread returns. */
static void *forking_thread(void *arg)
{
	(void)arg;
	churn_memory(3);
	pid_t pid = fork();
	if (pid == 0) {
		churn_memory(2);
		return NULL; /* the child's last thread: the child exits 0 */
	}
	int status = 0;
	if (pid < 0)
		say("fork failed;");
	else if (!wait_child_ms(pid, DEADLINE_MS / 2, &status))
		say("grandchild hung;");
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		say("grandchild ended badly;");
	else
		say("grandchild exited 0;");
	return NULL;
}

static void fork_from_thread(void)
{
	churn_memory(2);
	pthread_t t;
	if (pthread_create(&t, NULL, forking_thread, NULL) != 0)
		_exit(101);
	churn_memory(2);
	pthread_join(t, NULL);
	exit(0);
}

/* Case 4: free memory, say so, and idle until a signal comes. */
static void *worker_idles(void *arg)
{
	(void)arg;
	churn_memory(3);
	say("ready;");
	for (;;)
		pause();
	return NULL;
}

enum idle_shape { IDLE_ALONE, IDLE_WITH_WORKER, IDLE_WORKER_ONLY };

static enum idle_shape idle_shape;

static void idle_until_signal(void)
{
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	churn_memory(3);
	if (idle_shape == IDLE_ALONE) {
		say("ready;");
		for (;;)
			pause();
	}
	pthread_t t;
	if (pthread_create(&t, NULL, worker_idles, NULL) != 0)
		_exit(101);
	churn_memory(2);
	if (idle_shape == IDLE_WORKER_ONLY)
		pthread_exit(NULL);
	for (;;)
		pause();
}

/* Runs fn in a child, reading what it reports until it closes the pipe or
 * says `wait_for` (then sends `sig` if not 0); returns its report and status. */
static bool run_case(void (*fn)(void), const char *wait_for, int sig, char *report,
		     size_t len, int *status)
{
	int fds[2];
	if (!CHECK(pipe(fds) == 0))
		return false;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		report_fd = fds[1];
		fn();
		_exit(102);
	}
	close(fds[1]);
	size_t have = 0;
	report[0] = '\0';
	/* A hung child keeps the pipe open: reading has the deadline too. */
	for (unsigned waited = 0; waited < DEADLINE_MS;) {
		struct pollfd pfd = { fds[0], POLLIN, 0 };
		if (poll(&pfd, 1, 50) == 0) {
			waited += 50;
			continue;
		}
		ssize_t n = read(fds[0], report + have, len - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		report[have] = '\0';
		if (wait_for != NULL && strstr(report, wait_for) != NULL) {
			sleep_ms(30); /* into the purge delay of what was just freed */
			kill(pid, sig);
			break;
		}
	}
	close(fds[0]);
	return wait_child_ms(pid, DEADLINE_MS, status);
}

static void check_exit_zero(const char *what, void (*fn)(void), const char *expect)
{
	char report[256], how[64];
	int status = 0;
	bool ended = run_case(fn, NULL, 0, report, sizeof report, &status);
	CHECKF(ended, "%s: still running after %d ms (killed)", what, DEADLINE_MS);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s, expected exit 0", what,
	       describe_status(status, how, sizeof how));
	CHECKF(strcmp(report, expect) == 0, "%s: reported \"%s\", expected \"%s\"", what, report,
	       expect);
}

static void check_killed_by(const char *what, enum idle_shape shape, int sig)
{
	char report[256], how[64];
	int status = 0;
	idle_shape = shape;
	bool ended = run_case(idle_until_signal, "ready;", sig, report, sizeof report, &status);
	CHECKF(ended, "%s, %s: still running %d ms after the signal (killed)", what,
	       strsignal(sig), DEADLINE_MS);
	CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == sig, "%s: %s after %s", what,
	       describe_status(status, how, sizeof how), strsignal(sig));
}

int main(void)
{
	check_init("process_end");
	check_exit_zero("main calls pthread_exit, a worker goes on", main_exits_first,
			"worker;atexit;");
	check_exit_zero("main alone calls pthread_exit", main_alone_exits, "atexit;");
	check_exit_zero("fork from a thread, the child's thread returns", fork_from_thread,
			"grandchild exited 0;");
	static const int sigs[] = { SIGTERM, SIGINT };
	for (unsigned i = 0; i < 2; i++) {
		check_killed_by("idle, single-threaded", IDLE_ALONE, sigs[i]);
		check_killed_by("idle, with an idle worker", IDLE_WITH_WORKER, sigs[i]);
		check_killed_by("idle, main gone, a worker left", IDLE_WORKER_ONLY, sigs[i]);
	}
	return check_finish();
}
