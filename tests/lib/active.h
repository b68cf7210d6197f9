/* active.h: is hakmem really the allocator behind malloc in this process? */
#ifndef TESTS_ACTIVE_H
#define TESTS_ACTIVE_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NULL when malloc is hakmem's, else a sentence saying what is wrong.  A test
 * that silently ran against glibc would prove nothing about hakmem. */
const char *hakmem_inactive_reason(void);

/* True when both addresses lie in the same loaded object (library or
 * executable) as hak_malloc, i.e. hakmem provides the function at fn. */
bool provided_by_hakmem(const void *fn);

#ifdef __cplusplus
}
#endif

#endif
