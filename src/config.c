/*
 * Options: read once from HAKMEM_* environment variables into a plain
 * structure that only slow paths consult.  A bad value is reported (with
 * HAKMEM_VERBOSE) and the default kept; it never stops the program.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct hk_config hk_config = {
    .purge_delay_ms = 1000,
    .huge_cache_bytes = (size_t)64 << 20,
    .huge_cache_ms = 1000,
    .verbose = false,
};

static bool parse_u64(const char *name, uint64_t *out)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return false;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    uint64_t scale = 1;
    if (*end == 'k' || *end == 'K')
        scale = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        scale = 1024 * 1024, end++;
    else if (*end == 'g' || *end == 'G')
        scale = 1024 * 1024 * 1024, end++;
    if (*end != '\0' || v[0] == '-') {
        hk_warn(name);
        return false;
    }
    *out = (uint64_t)x * scale;
    return true;
}

void hk_config_load(void)
{
    uint64_t x;
    const char *verbose = getenv("HAKMEM_VERBOSE");
    hk_config.verbose = verbose != NULL && strcmp(verbose, "0") != 0 && *verbose != '\0';
    if (parse_u64("HAKMEM_PURGE_DELAY_MS", &x))
        hk_config.purge_delay_ms = x;
    if (parse_u64("HAKMEM_HUGE_CACHE", &x))
        hk_config.huge_cache_bytes = (size_t)x;
    if (parse_u64("HAKMEM_HUGE_CACHE_MS", &x))
        hk_config.huge_cache_ms = x;
}
