#include "probe.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"

typedef void (*fn_t)(void);

/* The addresses are taken in this executable, so they are what the dynamic
 * linker bound the program's own calls to: with LD_PRELOAD, the preloaded
 * library's definitions; without, the C library's. */
static const struct { const char *name; fn_t fn; } family[] = {
    { "malloc", (fn_t)malloc },
    { "free", (fn_t)free },
    { "calloc", (fn_t)calloc },
    { "realloc", (fn_t)realloc },
    { "posix_memalign", (fn_t)posix_memalign },
    { "aligned_alloc", (fn_t)aligned_alloc },
    { "memalign", (fn_t)memalign },
    { "malloc_usable_size", (fn_t)malloc_usable_size },
};

static const char *provider(fn_t fn)
{
    Dl_info info;
    if (dladdr((void *)fn, &info) == 0 || info.dli_fname == NULL)
        return "?";
    return info.dli_fname;
}

void probe_print(void)
{
    fputs("HAKBENCH-PROBE {", stdout);
    for (size_t i = 0; i < sizeof family / sizeof family[0]; i++) {
        if (i > 0)
            fputs(", ", stdout);
        json_put_str(family[i].name, provider(family[i].fn));
    }
    fputs("}\n", stdout);
    fflush(stdout);
}
