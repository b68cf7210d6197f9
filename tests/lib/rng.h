/* rng.h: a small deterministic random generator (splitmix64), one state per
 * thread, so that a failing run can be repeated with the same seed. */
#ifndef TESTS_RNG_H
#define TESTS_RNG_H

#include <stdint.h>

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t rng_next(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

/* Uniform in [0, n), n > 0.  The modulo bias is irrelevant for tests. */
static inline uint64_t rng_below(uint64_t *state, uint64_t n)
{
	return rng_next(state) % n;
}

#endif
