/* child.h: run a function in a forked child and collect how it ended and
 * what it wrote on stderr.  Used for behaviour that kills the process
 * (invalid frees) and for fork-safety tests. */
#ifndef TESTS_CHILD_H
#define TESTS_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct child_result {
	int status;          /* as from waitpid */
	char err[4096];      /* stderr, NUL-terminated, cut at sizeof - 1 */
	size_t err_len;
};

/* Runs fn(arg) in a child that exits with status 0 when fn returns.  The
 * child is killed by SIGALRM after timeout_s seconds, so a deadlock shows
 * up as a signal instead of hanging the suite.  Returns 0, or -1 when the
 * child could not be started. */
int run_in_child(void (*fn)(void *), void *arg, unsigned timeout_s,
		 struct child_result *out);

/* Runs this program again as `argv0 --limited`, with its address space
 * limited to `limit` bytes (RLIMIT_AS, set before exec so that the
 * allocator starts under it), and checks that it exits with status 0. */
void check_limited_rerun(const char *argv0, size_t limit);

/* Waits up to timeout_ms for child pid to end and stores its status.  A
 * child still there then is killed with SIGKILL (the one signal it cannot
 * block or leave pending) and reaped: returns false, the child hung. */
bool wait_child_ms(int pid, unsigned timeout_ms, int *status);

/* Is err exactly the one line hakmem writes for a pointer it did not hand
 * out, "hakmem: <call>(): invalid pointer 0x<hex>\n"?  The address goes to
 * *address when that is not NULL. */
bool invalid_pointer_line(const char *err, const char *call, uintmax_t *address);

/* Did the child end as hakmem ends on a pointer it did not hand out to
 * `call`: SIGABRT after exactly the invalid-pointer line (any address)? */
bool ended_on_invalid_pointer(const struct child_result *r, const char *call);

/* "exited 3", "killed by SIGABRT", ...: for failure messages. */
const char *describe_status(int status, char *buf, size_t len);

#endif
