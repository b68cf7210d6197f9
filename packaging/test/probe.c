/* Built without hakmem, run by test-install.sh through the launcher: finds
 * hakmem only if it was preloaded.  Exits with argv[1], to check that the
 * launcher passes the exit status through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    size_t (*usable)(const void *) =
        (size_t (*)(const void *))dlsym(RTLD_DEFAULT, "hak_malloc_usable_size");
    if (usable == NULL) {
        fprintf(stderr, "probe: hakmem is not loaded\n");
        return 100;
    }
    void *p = malloc(1000);
    /* Aborts if this malloc is not hakmem's. */
    printf("probe: malloc served by hakmem (usable size %zu)\n", usable(p));
    printf("probe: LD_PRELOAD=%s\n", getenv("LD_PRELOAD"));
    const char *profile = getenv("HAKMEM_PROFILE");
    printf("probe: HAKMEM_PROFILE=%s\n", profile ? profile : "");
    free(p);
    return argc > 1 ? atoi(argv[1]) : 0;
}
