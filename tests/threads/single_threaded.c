/*
 * single_threaded.c: a program that has no thread of its own besides main
 * is single-threaded whenever it could look, as under glibc, however much
 * memory it just freed.  Each case runs in a child that allocates and frees
 * blocks of every kind first (memory then waits to be given back):
 *   - /proc/self/task lists one thread, at once, after 20 ms and after
 *     300 ms (past the default purge delay);
 *   - unshare(CLONE_NEWUSER) and setns() into its own mount namespace
 *     succeed (both require a single-threaded caller; skipped where the
 *     kernel refuses them for other reasons);
 *   - the same after the program ran threads and joined them all;
 *   - under a seccomp filter that kills the process on clone and clone3
 *     (as sandboxed programs install), allocating and freeing, idling past
 *     the purge delay and allocating again do not kill it.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "churn_memory.h"

#define DEADLINE_MS 20000

/* Exit codes of the children. */
enum { OK = 0, MORE_TASKS = 10, UNSHARE_EINVAL, SETNS_EINVAL, OTHER_ERROR, SKIP_UNSHARE = 20,
       SKIP_SETNS, SKIP_SECCOMP };

static int tasks_now_and_later(void)
{
	static const unsigned after_ms[] = { 0, 20, 300 };
	for (unsigned i = 0; i < 3; i++) {
		sleep_ms(after_ms[i]);
		if (count_tasks() != 1)
			return MORE_TASKS;
	}
	return OK;
}

static int try_unshare(void)
{
	churn_memory(3);
	sleep_ms(20);
	if (unshare(CLONE_NEWUSER) == 0)
		return OK;
	return errno == EINVAL ? UNSHARE_EINVAL : SKIP_UNSHARE;
}

static int try_setns(void)
{
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return SKIP_SETNS;
	churn_memory(3);
	sleep_ms(20);
	int r = setns(fd, CLONE_NEWNS);
	int e = errno;
	close(fd);
	if (r == 0)
		return OK;
	return e == EINVAL ? SETNS_EINVAL : SKIP_SETNS;
}

static void *thread_churns(void *arg)
{
	(void)arg;
	churn_memory(3);
	return NULL;
}

/* Run threads that allocate and free, join them all: single again. */
static void run_and_join_threads(void)
{
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, thread_churns, NULL) != 0)
			_exit(OTHER_ERROR);
	churn_memory(3);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

static int case_tasks(void)
{
	churn_memory(3);
	return tasks_now_and_later();
}

static int case_tasks_after_threads(void)
{
	run_and_join_threads();
	churn_memory(3);
	return tasks_now_and_later();
}

static int case_unshare_after_threads(void)
{
	run_and_join_threads();
	return try_unshare();
}

static int case_setns_after_threads(void)
{
	run_and_join_threads();
	return try_setns();
}

/* Kill the process on clone and clone3, allow everything else. */
static int case_seccomp(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { sizeof filter / sizeof filter[0], filter };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		return SKIP_SECCOMP;
	for (int i = 0; i < 3; i++) {
		churn_memory(2);
		sleep_ms(300);
	}
	return OK;
}

static void run(const char *what, int (*fn)(void))
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn());
	int status = 0;
	char how[64];
	if (!CHECK(pid > 0))
		return;
	bool ended = wait_child_ms(pid, DEADLINE_MS, &status);
	CHECKF(ended, "%s: still running after %d ms (killed)", what, DEADLINE_MS);
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	if (code >= SKIP_UNSHARE) {
		char why[128];
		snprintf(why, sizeof why, "%s: the kernel refuses it here for every program", what);
		check_skip(why);
		return;
	}
	static const char *const meaning[] = {
		[MORE_TASKS] = "/proc/self/task lists more than one thread",
		[UNSHARE_EINVAL] = "unshare(CLONE_NEWUSER) failed with EINVAL (not single-threaded)",
		[SETNS_EINVAL] = "setns(CLONE_NEWNS) failed with EINVAL (not single-threaded)",
		[OTHER_ERROR] = "the case could not run",
	};
	CHECKF(code == OK, "%s: %s", what,
	       code > 0 && code < SKIP_UNSHARE && meaning[code] ? meaning[code]
								 : describe_status(status, how, sizeof how));
}

int main(void)
{
	check_init("single_threaded");
	run("one thread listed after frees", case_tasks);
	run("unshare(CLONE_NEWUSER) after frees", try_unshare);
	run("setns(mount namespace) after frees", try_setns);
	run("one thread listed after threads were joined", case_tasks_after_threads);
	run("unshare after threads were joined", case_unshare_after_threads);
	run("setns after threads were joined", case_setns_after_threads);
	run("seccomp filter killing clone", case_seccomp);
	return check_finish();
}
