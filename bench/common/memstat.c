#include "memstat.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Plain open/read into a stack buffer rather than stdio: fopen would call
 * malloc, and these readings must not disturb the allocator they measure. */
static ssize_t read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

long memstat_rss_kb(void)
{
    char buf[256];
    if (read_file("/proc/self/statm", buf, sizeof buf) < 0)
        return -1;
    /* Fields: size resident shared text lib data dt, in pages. */
    char *p = buf;
    strtol(p, &p, 10);
    long pages = strtol(p, NULL, 10);
    return pages * (sysconf(_SC_PAGESIZE) / 1024);
}

long memstat_peak_kb(void)
{
    char buf[4096];
    if (read_file("/proc/self/status", buf, sizeof buf) < 0)
        return -1;
    const char *line = strstr(buf, "VmHWM:");
    return line ? strtol(line + strlen("VmHWM:"), NULL, 10) : -1;
}
