/* allocator.h: which allocator a test runs against, and what hakmem was
 * asked to do there, for tests of hakmem's own policies. */
#ifndef TESTS_ALLOCATOR_H
#define TESTS_ALLOCATOR_H

#include <stdbool.h>

/* The runner asked for hakmem (TEST_ALLOCATOR=hakmem), not glibc. */
bool testing_hakmem(void);

/* hakmem asks the kernel for transparent huge pages: not with HAKMEM_THP=0
 * or in the lean profile. */
bool hakmem_asks_huge_pages(void);

#endif
