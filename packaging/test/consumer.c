/* Built by test-install.sh against an installed hakmem (with pkg-config and
 * with CMake): it must compile with <hakmem.h>, and its malloc must be
 * hakmem's.  Prints where malloc came from, for the test to check. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <hakmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
    char *p = malloc(100);
    if (p == NULL)
        return 1;
    memset(p, 1, 100);
    /* Aborts if hakmem did not hand out p: the real check. */
    size_t usable = hak_malloc_usable_size(p);
    if (usable < 100) {
        fprintf(stderr, "consumer: usable size %zu < 100\n", usable);
        return 1;
    }
    Dl_info info;
    void *(*m)(size_t) = malloc;
    const char *from = dladdr((void *)m, &info) && info.dli_fname ? info.dli_fname : "?";
    printf("hakmem %s: malloc from %s, usable size %zu\n", HAKMEM_VERSION_STRING, from, usable);
    free(p);
    return 0;
}
