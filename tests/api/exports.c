/*
 * exports.c: hakmem provides every C function of its contract, so that no
 * call reaches glibc's allocator by a side door (a block from glibc's
 * valloc freed by hakmem's free would be fatal).  The C++ operators are
 * checked by cxx/operators.
 */
#include <malloc.h>
#include <stdlib.h>

#include "active.h"
#include "check.h"
#include "compat.h"

int main(void)
{
	check_init("exports");
	/* Addresses taken in the program itself: the dynamic linker (or, for
	 * the static archive, the linker) resolves them as for any caller. */
	const struct {
		const char *name;
		const void *fn;
	} fns[] = {
#define FN(f) { #f, (const void *)(f) }
		FN(malloc), FN(free), FN(calloc), FN(realloc), FN(reallocarray),
		FN(posix_memalign), FN(aligned_alloc), FN(memalign), FN(valloc),
		FN(pvalloc), FN(malloc_usable_size), FN(free_sized),
		FN(free_aligned_sized), FN(malloc_trim),
#undef FN
	};
	for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
		CHECKF(provided_by_hakmem(fns[i].fn), "%s is not hakmem's (%p)",
		       fns[i].name, fns[i].fn);
	return check_finish();
}
