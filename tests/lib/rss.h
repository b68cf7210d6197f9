/* rss.h: resident memory of this process, for tests that bound growth. */
#ifndef TESTS_RSS_H
#define TESTS_RSS_H

#include <stddef.h>

/* Resident set size in bytes (from /proc/self/statm), 0 if unknown. */
size_t rss_bytes(void);

#define MiB ((size_t)1 << 20)

#endif
