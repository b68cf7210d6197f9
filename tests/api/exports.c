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

/* mallinfo is deprecated in favour of mallinfo2, but still exported. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

int main(void)
{
	check_init("exports");
	/* Addresses taken in the program itself: the dynamic linker (or, for
	 * the static archive, the linker) resolves them as for any caller.
	 * Taken by code, one call each, which loads them from the GOT: in a
	 * table of constants the linker would set the weak ones that glibc
	 * lacks (free_sized, __posix_memalign) to 0 for good. */
#define FN(f) CHECKF(provided_by_hakmem((const void *)(f)), "%s is not hakmem's (%p)", #f, \
		     (const void *)(f))
	FN(malloc); FN(free); FN(calloc); FN(realloc); FN(reallocarray);
	FN(posix_memalign); FN(aligned_alloc); FN(memalign); FN(valloc);
	FN(pvalloc); FN(malloc_usable_size); FN(free_sized);
	FN(free_aligned_sized); FN(malloc_trim);
	/* glibc's other names and its introspection */
	FN(__libc_malloc); FN(__libc_calloc); FN(__libc_realloc);
	FN(__libc_free); FN(__libc_memalign); FN(__libc_valloc);
	FN(__libc_pvalloc); FN(__posix_memalign); FN(mallinfo2);
	FN(mallinfo); FN(malloc_stats); FN(malloc_info); FN(mallopt);
#undef FN
	return check_finish();
}
