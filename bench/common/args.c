#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t arg_u64(int argc, char **argv, int i, uint64_t fallback,
                 const char *usage)
{
    if (argc <= i)
        return fallback;
    char *end;
    errno = 0;
    uint64_t v = strtoull(argv[i], &end, 10);
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    }
    if (errno != 0 || end == argv[i] || *end != '\0') {
        fprintf(stderr, "%s: bad number '%s'\nusage: %s %s\n",
                argv[0], argv[i], argv[0], usage);
        exit(2);
    }
    return v;
}
