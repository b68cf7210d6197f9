/* churn_memory.c: see churn_memory.h. */
#include "churn_memory.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void churn_size(size_t size, unsigned count)
{
	void *blocks[2000];
	if (count > sizeof blocks / sizeof blocks[0])
		count = sizeof blocks / sizeof blocks[0];
	for (unsigned i = 0; i < count; i++) {
		size_t n = size != 0 ? size : 16 + (i * 37) % 4081;
		blocks[i] = malloc(n);
		if (blocks[i] != NULL)
			memset(blocks[i], 0x5a, n);
	}
	for (unsigned i = 0; i < count; i++)
		free(blocks[i]);
}

void churn_memory(unsigned rounds)
{
	for (unsigned r = 0; r < rounds; r++) {
		churn_size(100000, 64);
		churn_size(0, 2000);
		churn_size(8192, 200);
		churn_size((size_t)2 << 20, 4);
	}
}

unsigned count_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return 0;
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}
