/*
 * C++ operator new and delete, written in C under their mangled names so that
 * the library needs no C++ runtime.  The throwing forms follow the standard:
 * on failure call the installed new_handler and retry, and throw
 * std::bad_alloc when there is none.  Both come from the program's C++
 * runtime, which a program that uses operator new has loaded; they are weak
 * references so that C programs load no C++ runtime at all.
 */
#include <stddef.h>

#include "hakmem.h"
#include "internal.h"

#ifndef HAKMEM_NO_OVERRIDE

typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* operator new could not get memory: the standard's handler loop. */
static HK_COLD void *new_failed(size_t size, size_t align, bool nothrow)
{
    for (;;) {
        new_handler_fn handler = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : NULL;
        if (handler == NULL)
            break;
        handler();
        void *p = align <= 16 ? hak_malloc(size) : hk_aligned(align, size);
        if (p != NULL)
            return p;
    }
    if (nothrow)
        return NULL;
    if (_ZSt17__throw_bad_allocv)
        _ZSt17__throw_bad_allocv();
    hk_fatal("operator new: out of memory");
}

static HK_NOINLINE void *new_slow(size_t size, bool nothrow)
{
    void *p = hak_malloc(size);
    return HK_LIKELY(p != NULL) ? p : new_failed(size, 16, nothrow);
}

/* malloc's fast path, inline: through hak_malloc every new paid a call by
 * the GOT (the name is exported, so it can be interposed) and a frame to
 * test its result, 7 instructions on top of malloc's 11. */
static inline void *new_plain(size_t size, bool nothrow)
{
    void *block = hk_small_pop(size);
    return HK_LIKELY(block != NULL) ? block : new_slow(size, nothrow);
}

static inline void *new_aligned(size_t size, size_t align, bool nothrow)
{
    /* align_val_t values that are not powers of two are undefined behaviour;
     * round them up rather than return misaligned memory. */
    if ((align & (align - 1)) != 0)
        align = (size_t)1 << (64 - __builtin_clzl(align));
    void *p = hk_aligned(align, size);
    return HK_LIKELY(p != NULL) ? p : new_failed(size, align, nothrow);
}

/* Declared and defined at once, to keep -Wmissing-prototypes meaningful. */
#define NEW_OPERATOR(name, params, body) \
    HK_API void *name params;            \
    HK_API void *name params { body }

typedef const void *nothrow_ref; /* const std::nothrow_t & */

NEW_OPERATOR(_Znwm, (size_t size), return new_plain(size, false);)
NEW_OPERATOR(_Znam, (size_t size), return new_plain(size, false);)
NEW_OPERATOR(_ZnwmRKSt9nothrow_t, (size_t size, nothrow_ref t), (void)t; return new_plain(size, true);)
NEW_OPERATOR(_ZnamRKSt9nothrow_t, (size_t size, nothrow_ref t), (void)t; return new_plain(size, true);)
NEW_OPERATOR(_ZnwmSt11align_val_t, (size_t size, size_t align),
             return new_aligned(size, align, false);)
NEW_OPERATOR(_ZnamSt11align_val_t, (size_t size, size_t align),
             return new_aligned(size, align, false);)
NEW_OPERATOR(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t size, size_t align, nothrow_ref t),
             (void)t; return new_aligned(size, align, true);)
NEW_OPERATOR(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t size, size_t align, nothrow_ref t),
             (void)t; return new_aligned(size, align, true);)

/* Every operator delete is an alias of free, in free.c, but the sized ones
 * of the hardened build: the size is checked first, so that a delete of
 * an array or a delete[] of one object (new[] of a type without a
 * destructor keeps no count before the array, so the pointer is the
 * block's) is reported, not freed. */
#ifdef HK_SECURE
static inline void delete_sized(void *p, size_t size, size_t align, const char *call)
{
    if ((align & (align - 1)) != 0)
        align = (size_t)1 << (64 - __builtin_clzl(align)); /* as new_aligned */
    hk_secure_sized_free(p, size, align, true, call);
    hak_free(p);
}

#define DELETE_OPERATOR(name, params, body) \
    HK_API void name params;                \
    HK_API void name params { body }

DELETE_OPERATOR(_ZdlPvm, (void *p, size_t size), delete_sized(p, size, 0, "operator delete");)
DELETE_OPERATOR(_ZdaPvm, (void *p, size_t size), delete_sized(p, size, 0, "operator delete[]");)
DELETE_OPERATOR(_ZdlPvmSt11align_val_t, (void *p, size_t size, size_t align),
                delete_sized(p, size, align, "operator delete");)
DELETE_OPERATOR(_ZdaPvmSt11align_val_t, (void *p, size_t size, size_t align),
                delete_sized(p, size, align, "operator delete[]");)
#endif

#endif
