#include "scratch.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

void *scratch_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("hakbench: mmap");
        exit(2);
    }
    return p;
}

void scratch_free(void *p, size_t size)
{
    munmap(p, size);
}
