#include "marker.h"

#include <fcntl.h>
#include <unistd.h>

/* faccessat exists on every Linux architecture (access does not on aarch64). */
void marker_begin(void)
{
    (void)faccessat(AT_FDCWD, "/hakbench-marker/begin", F_OK, 0);
}

void marker_end(void)
{
    (void)faccessat(AT_FDCWD, "/hakbench-marker/end", F_OK, 0);
}
