/*
 * Options: read once from HAKMEM_* environment variables into a plain
 * structure that only slow paths consult.  A bad value is reported (with
 * HAKMEM_VERBOSE) and the default kept; it never stops the program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "hakmem.h"
#include "internal.h"

/* The profiles: a documented set of delays and cache bounds each. */
static const struct hk_config profiles[] = {
    /* speed: keep free memory longer; purge only while the program runs */
    {.profile = "speed", .purge_delay_ms = 5000, .purge_thread = false, .idle_keep = SIZE_MAX,
     .huge_cache_bytes = (size_t)256 << 20, .huge_cache_live_pct = 100, .huge_cache_ms = 5000,
     .thp_from = 1},
    /* balanced (the default).  No share of the live huge bytes in the huge
     * cache: a growing table's old copy, which no later request fits, stayed
     * resident beside the new one (python3's dict of 1 M strings: 251 MiB
     * peak, 232 without; glibc 226), and large-5m ran 1.30 times as fast
     * without it. */
    {.profile = "balanced", .purge_delay_ms = 250, .purge_thread = true, .idle_keep = (size_t)4 << 20,
     .huge_cache_bytes = (size_t)64 << 20, .huge_cache_live_pct = 0, .huge_cache_ms = 250,
     .thp_from = (size_t)32 << 20},
    /* lean: give memory back almost at once */
    {.profile = "lean", .purge_delay_ms = 20, .purge_thread = true, .idle_keep = (size_t)1 << 20,
     .huge_cache_bytes = (size_t)8 << 20, .huge_cache_live_pct = 25, .huge_cache_ms = 20,
     .thp_from = 0},
};

struct hk_config hk_config = {
    .profile = "balanced", .purge_delay_ms = 250, .purge_thread = true, .idle_keep = (size_t)4 << 20,
    .huge_cache_bytes = (size_t)64 << 20, .huge_cache_live_pct = 0, .huge_cache_ms = 250,
    .thp_from = (size_t)32 << 20,
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
    if (end == v || *end != '\0' || v[0] == '-') {
        hk_warn(name);
        return false;
    }
    *out = (uint64_t)x * scale;
    return true;
}

void hk_config_load(void)
{
    const char *verbose = getenv("HAKMEM_VERBOSE");
    bool is_verbose = verbose != NULL && *verbose != '\0' && strcmp(verbose, "0") != 0;
    hk_config = profiles[1];
    hk_config.verbose = is_verbose;
    const char *profile = getenv("HAKMEM_PROFILE");
    if (profile != NULL && *profile != '\0') {
        bool found = false;
        for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
            if (strcmp(profile, profiles[i].profile) == 0) {
                hk_config = profiles[i];
                hk_config.verbose = is_verbose;
                found = true;
            }
        }
        if (!found)
            hk_warn("HAKMEM_PROFILE");
    }
    const char *stats = getenv("HAKMEM_STATS");
    if (stats != NULL && *stats != '\0' && strcmp(stats, "0") != 0)
        hk_config.stats = strcmp(stats, "json") == 0 ? 2 : 1;
    uint64_t x;
    if (parse_u64("HAKMEM_PURGE_DELAY_MS", &x))
        hk_config.purge_delay_ms = x;
    if (parse_u64("HAKMEM_PURGE_THREAD", &x))
        hk_config.purge_thread = x != 0;
    if (parse_u64("HAKMEM_IDLE_KEEP", &x))
        hk_config.idle_keep = (size_t)x;
    if (parse_u64("HAKMEM_HUGE_CACHE", &x))
        hk_config.huge_cache_bytes = (size_t)x;
    if (parse_u64("HAKMEM_HUGE_CACHE_MS", &x))
        hk_config.huge_cache_ms = x;
    if (parse_u64("HAKMEM_HUGE_CACHE_LIVE_PCT", &x))
        hk_config.huge_cache_live_pct = x;
    if (parse_u64("HAKMEM_THP", &x))
        hk_config.thp_from = (size_t)x;
    const char *heap_profile = getenv("HAKMEM_HEAP_PROFILE");
    hk_config.heap_profile = heap_profile != NULL && *heap_profile != '\0' ? heap_profile : NULL;
    hk_config.heap_sample = (uint64_t)512 << 10;
    if (parse_u64("HAKMEM_HEAP_SAMPLE", &x)) {
        if (x != 0)
            hk_config.heap_sample = x;
        else
            hk_warn("HAKMEM_HEAP_SAMPLE");
    }
    if (parse_u64("HAKMEM_GUARD_SAMPLE", &x))
        hk_config.guard_sample = x;
}

void hk_config_print(void)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf,
                     "hakmem %s: profile=%s purge_delay_ms=%llu purge_thread=%d idle_keep=%zu "
                     "huge_cache=%zu huge_cache_live_pct=%llu huge_cache_ms=%llu thp=%zu stats=%s\n",
                     HAKMEM_VERSION_STRING, hk_config.profile,
                     (unsigned long long)hk_config.purge_delay_ms, hk_config.purge_thread,
                     hk_config.idle_keep,
                     hk_config.huge_cache_bytes, (unsigned long long)hk_config.huge_cache_live_pct,
                     (unsigned long long)hk_config.huge_cache_ms, hk_config.thp_from,
                     hk_config.stats == 0 ? "off" : hk_config.stats == 1 ? "table" : "json");
    if (n > 0)
        (void)!write(STDERR_FILENO, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}
