/* Sizes drawn as programs ask for them: many small blocks, fewer middling
 * ones, a few large, each range with its share of the draws. */
#ifndef BENCH_SIZES_H
#define BENCH_SIZES_H

#include <stdint.h>

#include "rng.h"

/* Three ranges of sizes; upto_pct is the percentage of draws that fall in
 * a range or an earlier one (the last range takes the rest). */
struct size_mix {
    struct {
        uint32_t upto_pct, min, max;
    } small, middling, large;
};

/* Written out range by range, so that with a constant mix the compiler
 * folds every bound into an immediate, as in a hand-written draw. */
static inline uint32_t draw_from_mix(rng_t *r, const struct size_mix *m)
{
    uint32_t p = rng_below(r, 100);
    if (p < m->small.upto_pct)
        return m->small.min + rng_below(r, m->small.max - m->small.min + 1);
    if (p < m->middling.upto_pct)
        return m->middling.min + rng_below(r, m->middling.max - m->middling.min + 1);
    return m->large.min + rng_below(r, m->large.max - m->large.min + 1);
}

/* Like an application: 80% 16-256 B, 15% 257 B-2 KiB, 5% 2-32 KiB. */
static const struct size_mix APP_SIZES = {{80, 16, 256}, {95, 257, 2048}, {100, 2049, 32768}};

#endif
