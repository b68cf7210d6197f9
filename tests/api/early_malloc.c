/*
 * early_malloc.c: malloc called before hakmem's constructor has run (from
 * the constructor of a library loaded before it, tests/early/) gives blocks
 * as good as any other: at least the size asked for, 16-byte aligned, not
 * overlapping, contents kept, freeable.  Before ad0d261 a 472-byte request
 * there got a 16-byte block; with that commit's hk_init call in
 * hk_malloc_slow removed, the [preload] run aborts.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "pattern.h"

extern const size_t early_sizes[];
extern const size_t early_count;
extern void *early_blocks[];

int main(void)
{
	check_init("api/early_malloc");
	for (size_t i = 0; i < early_count; i++) {
		void *p = early_blocks[i];
		size_t size = early_sizes[i];
		CHECKF(p != NULL, "early malloc(%zu) returned NULL", size);
		if (p == NULL)
			continue;
		CHECKF(((uintptr_t)p & 15) == 0, "early malloc(%zu) = %p not 16-aligned", size, p);
		size_t usable = malloc_usable_size(p);
		CHECKF(usable >= size, "early malloc(%zu): usable size %zu", size, usable);
		CHECKF(pattern_find_mismatch(p, size, 1000 + i) == (size_t)-1,
		       "early malloc(%zu) = %p: contents changed (blocks overlap?)", size, p);
		/* The space past each block is the block's own, too. */
		pattern_fill(p, usable, 2000 + i);
	}
	for (size_t i = 0; i < early_count; i++) {
		void *p = early_blocks[i];
		if (p == NULL)
			continue;
		CHECKF(pattern_find_mismatch(p, malloc_usable_size(p), 2000 + i) == (size_t)-1,
		       "early block %zu (%zu bytes) overwritten by a neighbour", i, early_sizes[i]);
	}
	/* Freed and allocated again after initialisation. */
	for (size_t i = 0; i < early_count; i++)
		free(early_blocks[i]);
	for (size_t i = 0; i < early_count; i++) {
		void *p = malloc(early_sizes[i]);
		CHECKF(p != NULL && malloc_usable_size(p) >= early_sizes[i],
		       "malloc(%zu) after freeing the early blocks", early_sizes[i]);
		free(p);
	}
	return check_finish();
}
