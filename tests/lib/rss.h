/* rss.h: resident memory of this process, for tests that bound growth. */
#ifndef TESTS_RSS_H
#define TESTS_RSS_H

#include <stddef.h>

/* Resident set size in bytes (from /proc/self/statm), 0 if unknown. */
size_t rss_bytes(void);

#define MiB ((size_t)1 << 20)

/* The free memory a single-threaded program's heap keeps per kind of page
 * (small, medium, large) and in its cache of huge blocks: HAKMEM_IDLE_KEEP,
 * else the profile's (README: 4 MiB by default, 1 MiB in lean). */
size_t hakmem_idle_keep(void);

#endif
