/* rss.c: see rss.h. */
#include "rss.h"

#include <fcntl.h>
#include <stdlib.h>
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
