/* random-mixed: the original hakmem's headline workload, single-threaded.
 *
 * A working set of slots, all empty at first.  Each op draws a slot at
 * random: if it holds a block, free it; if not, allocate a block of a random
 * size and write its first and last byte.  Every op is one allocator call
 * and counts.  About half the slots are full in the steady state, so the
 * allocator sees an even, unpredictable mix of malloc and free.
 *
 * usage: random_mixed <ops> <working-set> <min> <max> <seed> [uniform|app]
 * "app" ignores min and max and draws sizes like an application: 80% in
 * 16-256 B, 15% in 257-2048 B, 5% in 2049-32768 B. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_loop.h"
#include "check.h"
#include "args.h"
#include "report.h"
#include "rng.h"
#include "sizes.h"
#include "slot_run.h"

#define CHUNK (1u << 16)
#define USAGE "<ops> <working-set> <min> <max> <seed> [uniform|app]"

struct sizes {
    uint32_t min, max;
    int app;
};

static inline size_t draw_size(rng_t *rng, const struct sizes *s)
{
    if (!s->app)
        return s->min + rng_below(rng, s->max - s->min + 1);
    return draw_from_mix(rng, &APP_SIZES);
}

/* One stretch of ops; slot_run calls it in chunks so that the progress counter
 * costs nothing per op. */
BENCH_LOOP void bench_loop(char **slot, uint32_t ws, uint64_t ops,
                           const struct sizes *sizes, rng_t *state)
{
    rng_t r = *state, *rng = &r; /* in a register, not through memory */
    for (uint64_t i = 0; i < ops; i++) {
        uint32_t k = rng_below(rng, ws);
        if (slot[k] != NULL) {
            free(slot[k]);
            slot[k] = NULL;
        } else {
            size_t n = draw_size(rng, sizes);
            char *p = malloc(n);
            CHECK(p != NULL, "malloc returned NULL");
            p[0] = (char)i;
            p[n - 1] = (char)i;
            slot[k] = p;
        }
    }
    *state = r;
}

struct run {
    const struct sizes *sizes;
    rng_t rng;
};

static void step(char **slot, uint32_t ws, uint64_t n, void *ctx)
{
    struct run *run = ctx;
    bench_loop(slot, ws, n, run->sizes, &run->rng);
}

int main(int argc, char **argv)
{
    uint64_t ops = arg_u64(argc, argv, 1, 10000000, USAGE);
    uint32_t ws = (uint32_t)arg_u64(argc, argv, 2, 400, USAGE);
    struct sizes sizes = {
        .min = (uint32_t)arg_u64(argc, argv, 3, 16, USAGE),
        .max = (uint32_t)arg_u64(argc, argv, 4, 1024, USAGE),
        .app = argc > 6 && strcmp(argv[6], "app") == 0,
    };
    rng_t rng = rng_seed(arg_u64(argc, argv, 5, 42, USAGE));
    CHECK(ws > 0 && sizes.min > 0 && sizes.min <= sizes.max, USAGE);

    report_start();
    struct run run = {&sizes, rng};
    double seconds = slot_run(ws, ops, CHUNK, step, &run);
    report_begin(sizes.app ? "random-mixed-app" : "random-mixed", "call", ops, seconds, 1);
    report_int("working_set", ws);
    report_int("min_size", sizes.app ? 16 : sizes.min);
    report_int("max_size", sizes.app ? 32768 : sizes.max);
    report_end();
    return 0;
}
