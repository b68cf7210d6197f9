/* active.c: find out whether hakmem provides malloc; see active.h.
 *
 * The dynamic linker resolves `malloc` for the executable to the first
 * definition in its search order: the LD_PRELOAD library, the executable
 * itself (static link), or libhakmem.so ahead of libc (-lhakmem).  That
 * definition must live in the same object as hak_malloc. */
#include "active.h"

#include <dlfcn.h>
#include <stdlib.h>

static const void *object_base(const void *addr)
{
	Dl_info info;
	if (!dladdr(addr, &info))
		return NULL;
	return info.dli_fbase;
}

bool provided_by_hakmem(const void *fn)
{
	void *hak = dlsym(RTLD_DEFAULT, "hak_malloc");
	if (!hak || !fn)
		return false;
	const void *base = object_base(hak);
	return base != NULL && base == object_base(fn);
}

const char *hakmem_inactive_reason(void)
{
	if (!dlsym(RTLD_DEFAULT, "hak_malloc"))
		return "hak_malloc is not loaded (no LD_PRELOAD or -lhakmem?)";
	/* Through a volatile pointer so the compiler keeps the real address. */
	void *(*volatile m)(size_t) = malloc;
	if (!provided_by_hakmem((const void *)m))
		return "malloc resolves to another object than hak_malloc";
	return NULL;
}
