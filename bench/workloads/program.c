/* program: a real program, timed whole, as the suite times its workloads.
 *
 * Runs <command...> once in a child process that inherits this process's
 * environment, LD_PRELOAD included, so the child gets the allocator under
 * test exactly as this driver does (the probe line names what served the
 * driver: the child's dynamic linker binds the same way).  The child's
 * standard output goes to /dev/null, its standard error stays (the suite
 * shows it when the run fails).  An op is one whole run of the program;
 * the peak RSS is the child's (getrusage of the reaped child).  A non-zero
 * exit or a signal fails the run: an allocator must not change what a
 * program does.
 *
 * usage: program <name> <command> [<argument>...] */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "probe.h"
#include "report.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: program <name> <command> [<argument>...]\n");
        return 2;
    }
    probe_print();
    fflush(stdout);

    double t0 = clock_now();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "hakbench: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "hakbench: %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "hakbench: wait4: %s\n", strerror(errno));
            return 1;
        }
    }
    double seconds = clock_now() - t0;
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "hakbench: %s killed by signal %d\n", argv[1], WTERMSIG(status));
        return 1;
    }
    if (WEXITSTATUS(status) != 0) {
        fprintf(stderr, "hakbench: %s exited with status %d\n", argv[1], WEXITSTATUS(status));
        return 1;
    }

    /* The result line as report.c writes it, without its RSS readings:
     * they would be this driver's, not the program's. */
    fputs("HAKBENCH-RESULT {", stdout);
    json_put_str("workload", argv[1]);
    report_int("ops", 1);
    report_num("seconds", seconds);
    report_num("ops_per_sec", seconds > 0 ? 1.0 / seconds : 0);
    fputs(", ", stdout);
    json_put_str("op_unit", "run");
    report_int("peak_rss_kb", ru.ru_maxrss);
    report_num("user_s", (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6);
    report_num("sys_s", (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
    report_int("minor_faults", ru.ru_minflt);
    report_end();
    return 0;
}
