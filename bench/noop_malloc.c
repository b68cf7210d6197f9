/* A malloc that does no work: the floor for instructions per operation.
 *
 * Preloaded under callgrind, it shows what the benchmark loop itself costs
 * (random numbers, slot bookkeeping, writing the blocks), which no allocator
 * can go below.  malloc bumps an offset through one static buffer and free
 * does nothing, so memory is never reused: fit only for short runs.  The
 * buffer is zero-initialised (.bss), so the kernel maps it lazily and its
 * untouched pages cost nothing. */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_SIZE (8ull << 30)
#define ALIGN 16

static _Alignas(4096) char arena[ARENA_SIZE];
static size_t used;

static void *bump(size_t align, size_t size)
{
    size_t start = (used + align - 1) & ~(align - 1);
    size_t rounded = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (rounded < size || start > ARENA_SIZE || rounded > ARENA_SIZE - start) {
        errno = ENOMEM;
        return NULL;
    }
    used = start + rounded;
    return arena + start;
}

/* The hot path, kept to a handful of instructions: 'used' is always a
 * multiple of ALIGN, so there is nothing to align. */
void *malloc(size_t size)
{
    size_t rounded = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (__builtin_expect(rounded > ARENA_SIZE - used || rounded < size, 0)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = arena + used;
    used += rounded;
    return p;
}

void free(void *p)
{
    (void)p;
}

/* Nothing is ever reused, so the memory is still zero: no memset needed. */
void *calloc(size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return bump(ALIGN, total);
}

/* The old size is not kept: copying `size` bytes may read past the old block
 * into later blocks or untouched (zero) arena, which is harmless here. */
void *realloc(void *old, size_t size)
{
    char *p = bump(ALIGN, size);
    if (p != NULL && old != NULL) {
        size_t room = (size_t)(arena + ARENA_SIZE - (char *)old);
        memcpy(p, old, size < room ? size : room);
    }
    return p;
}

void *memalign(size_t align, size_t size)
{
    return bump(align < ALIGN ? ALIGN : align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
    return memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    void *p = memalign(align, size);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size)
{
    return memalign(4096, size);
}

size_t malloc_usable_size(void *p)
{
    (void)p;
    return 0;
}
