/* Memory for the harness's own bookkeeping (slot arrays, queues). */
#ifndef BENCH_SCRATCH_H
#define BENCH_SCRATCH_H

#include <stddef.h>

/* Zeroed memory straight from mmap, so the harness's arrays neither come from
 * the allocator under test nor count in its free lists; exits on failure. */
void *scratch_alloc(size_t size);
void scratch_free(void *p, size_t size);

#endif
