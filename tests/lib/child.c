/* child.c: see child.h. */
#include "child.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

int run_in_child(void (*fn)(void *), void *arg, unsigned timeout_s,
		 struct child_result *out)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		alarm(timeout_s);
		fn(arg);
		/* _exit: the parent's stdio buffers must not be flushed twice. */
		_exit(0);
	}
	close(fds[1]);
	out->err_len = 0;
	for (;;) {
		char buf[512];
		ssize_t n = read(fds[0], buf, sizeof buf);
		if (n <= 0)
			break;
		size_t room = sizeof out->err - 1 - out->err_len;
		size_t take = (size_t)n < room ? (size_t)n : room;
		memcpy(out->err + out->err_len, buf, take);
		out->err_len += take;
	}
	out->err[out->err_len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &out->status, 0) < 0)
		;
	return 0;
}

bool wait_child_ms(int pid, unsigned timeout_ms, int *status)
{
	for (unsigned waited = 0;; waited += 5) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return true;
		if (r < 0)
			return false;
		if (waited >= timeout_ms)
			break;
		usleep(5000);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0)
		;
	return false;
}

const char *describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status 0x%x", status);
	return buf;
}

void check_limited_rerun(const char *argv0, size_t limit)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = { limit, limit };
		setrlimit(RLIMIT_AS, &rl);
		execl("/proc/self/exe", argv0, "--limited", (char *)NULL);
		_exit(127);
	}
	int status = 0;
	if (CHECK(pid > 0))
		waitpid(pid, &status, 0);
	char how[64];
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "the child under a %zu MiB address-space limit %s", limit >> 20,
	       describe_status(status, how, sizeof how));
}

bool invalid_pointer_line(const char *err, const char *call, uintmax_t *address)
{
	char prefix[64];
	snprintf(prefix, sizeof prefix, "hakmem: %s(): invalid pointer 0x", call);
	size_t len = strlen(prefix);
	if (strncmp(err, prefix, len) != 0)
		return false;
	char *end = NULL;
	uintmax_t value = strtoumax(err + len, &end, 16);
	if (end == err + len || strcmp(end, "\n") != 0)
		return false;
	if (address != NULL)
		*address = value;
	return true;
}

bool ended_on_invalid_pointer(const struct child_result *r, const char *call)
{
	return WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGABRT &&
	       invalid_pointer_line(r->err, call, NULL);
}
