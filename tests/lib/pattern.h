/* pattern.h: fill a block with bytes derived from (seed, offset) and verify
 * them later.  A block that another block overlaps, that the allocator
 * reuses too early or that realloc copies wrongly no longer verifies. */
#ifndef TESTS_PATTERN_H
#define TESTS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

/* The tests build with -fno-builtin (so that malloc calls stay real); the
 * 8-byte copies here must still be inlined, not calls into libc. */
#define word_copy(d, s, n) __builtin_memcpy((d), (s), (n))

/* Word w of the pattern; byte i is byte (i % 8) of word i / 8.  One
 * multiply per word keeps multi-megabyte blocks cheap to fill and check;
 * different seeds or offsets still give different words. */
static inline uint64_t pattern_word(uint64_t seed, size_t w)
{
	return (mix64(seed) + (uint64_t)w) * 0x9e3779b97f4a7c15ull;
}

static inline void pattern_fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = (unsigned char *)p;
	size_t w = 0;
	for (; (w + 1) * 8 <= n; w++) {
		uint64_t v = pattern_word(seed, w);
		word_copy(b + w * 8, &v, 8);
	}
	if (w * 8 < n) {
		uint64_t v = pattern_word(seed, w);
		word_copy(b + w * 8, &v, n - w * 8);
	}
}

/* Offset of the first byte that differs, or (size_t)-1 when all match. */
static inline size_t pattern_find_mismatch(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = (const unsigned char *)p;
	size_t w = 0;
	for (; (w + 1) * 8 <= n; w++) {
		uint64_t got;
		word_copy(&got, b + w * 8, 8);
		if (got != pattern_word(seed, w))
			break;
	}
	for (size_t i = w * 8; i < n; i++) {
		uint64_t v = pattern_word(seed, i / 8);
		if (b[i] != (unsigned char)(v >> (8 * (i % 8))))
			return i;
	}
	return (size_t)-1;
}

static inline int pattern_ok(const void *p, size_t n, uint64_t seed)
{
	return pattern_find_mismatch(p, n, seed) == (size_t)-1;
}

/* Offset of the first non-zero byte, or (size_t)-1. */
static inline size_t find_nonzero(const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return i;
	return (size_t)-1;
}

#endif
