/* The workloads' random numbers: a 64-bit linear congruential generator.
 *
 * An LCG, like the original hakmem benchmark's: a multiply and an add, so the
 * generator adds almost nothing to the instruction count per operation.  Only
 * the high 32 bits are used, because an LCG's low bits have short periods. */
#ifndef BENCH_RNG_H
#define BENCH_RNG_H

#include <stdint.h>

typedef struct { uint64_t state; } rng_t;

static inline rng_t rng_seed(uint64_t seed)
{
    rng_t r = { seed * 0x9E3779B97F4A7C15ull + 1 };
    return r;
}

static inline uint32_t rng_next(rng_t *r)
{
    r->state = r->state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->state >> 32);
}

/* Uniform in [0, n): multiply-shift instead of '%', which would cost a
 * division on every call. */
static inline uint32_t rng_below(rng_t *r, uint32_t n)
{
    return (uint32_t)(((uint64_t)rng_next(r) * n) >> 32);
}

/* Uniform in [lo, hi]. */
static inline uint64_t rng_range(rng_t *r, uint64_t lo, uint64_t hi)
{
    uint64_t span = hi - lo + 1;
    if (span <= UINT32_MAX)
        return lo + rng_below(r, (uint32_t)span);
    return lo + ((((uint64_t)rng_next(r) << 32) | rng_next(r)) % span);
}

#endif
