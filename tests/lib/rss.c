/* rss.c: see rss.h. */
#include "rss.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t rss_bytes(void)
{
	/* open/read rather than stdio: a FILE buffer would come from the very
	 * allocator whose footprint is being measured. */
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	strtoul(buf, &end, 10);                 /* total program size */
	unsigned long resident = strtoul(end, NULL, 10);
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

size_t hakmem_idle_keep(void)
{
	const char *keep = getenv("HAKMEM_IDLE_KEEP");
	if (keep != NULL)
		return strtoull(keep, NULL, 10);
	const char *profile = getenv("HAKMEM_PROFILE");
	return profile != NULL && strcmp(profile, "lean") == 0 ? 1 * MiB : 4 * MiB;
}
