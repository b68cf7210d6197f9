/*
 * early_malloc_lib.c: a shared library whose constructor allocates, as
 * libselinux's does (fopen, in mkdir, tar and git).  The dynamic linker runs
 * it before the constructors of a preloaded libhakmem.so and of a program
 * linked with the static archive, so these are the allocator's very first
 * calls, made before its own initialisation.  api/early_malloc checks the
 * blocks once main runs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pattern.h"

/* Every size class boundary region an early caller might hit: tiny, the
 * inline fast path up to 4 KiB (fopen's FILE is 472 bytes), medium, large
 * and huge blocks. */
const size_t early_sizes[] = {
	0, 1, 8, 15, 16, 17, 24, 100, 128, 129, 472, 500, 1000, 1024, 2000,
	4095, 4096, 4097, 5000, 16384, 20000, 100000, 524288, 600000,
};
enum { EARLY_COUNT = sizeof early_sizes / sizeof early_sizes[0] };
const size_t early_count = EARLY_COUNT;
void *early_blocks[EARLY_COUNT];

__attribute__((constructor)) static void allocate_early(void)
{
	for (size_t i = 0; i < EARLY_COUNT; i++) {
		early_blocks[i] = malloc(early_sizes[i]);
		if (early_blocks[i] != NULL)
			pattern_fill(early_blocks[i], early_sizes[i], 1000 + i);
	}
}
