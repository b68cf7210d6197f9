/*
 * glibc's other names for the malloc family.  glibc exports its allocator
 * under __libc_* names as well, and some wrappers, tracers and language
 * runtimes call those and free the block with free (or the other way
 * round): left to glibc, such a block would reach hakmem's free as a
 * foreign pointer, or hakmem's block glibc's free.  So each name is
 * hakmem's entry point; __posix_memalign too, which glibc lacks but other
 * allocators export.
 *
 * An alias must be defined beside its target, so these are calls instead:
 * each compiles to a single jump, and keeps the concept in one file.
 */
#include <stddef.h>

#include "hakmem.h"
#include "internal.h"

#ifndef HAKMEM_NO_OVERRIDE

/* Declared and defined at once, to keep -Wmissing-prototypes meaningful. */
#define GLIBC_NAME(type, name, params, call) \
    HK_API type name params;                 \
    HK_API type name params { return call; }

GLIBC_NAME(void *, __libc_malloc, (size_t size), hak_malloc(size))
GLIBC_NAME(void *, __libc_calloc, (size_t count, size_t size), hak_calloc(count, size))
GLIBC_NAME(void *, __libc_realloc, (void *p, size_t size), hak_realloc(p, size))
GLIBC_NAME(void *, __libc_memalign, (size_t alignment, size_t size), hak_memalign(alignment, size))
GLIBC_NAME(void *, __libc_valloc, (size_t size), hak_valloc(size))
GLIBC_NAME(void *, __libc_pvalloc, (size_t size), hak_pvalloc(size))
GLIBC_NAME(int, __posix_memalign, (void **out, size_t alignment, size_t size),
           hak_posix_memalign(out, alignment, size))

HK_API void __libc_free(void *p);
HK_API void __libc_free(void *p)
{
    hak_free(p);
}

#endif
