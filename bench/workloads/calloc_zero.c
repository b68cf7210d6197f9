/* calloc: zeroed allocation of blocks that are reused.
 *
 * random-mixed with calloc in place of malloc.  Each new block is checked to
 * be zero at its first, middle and last byte, then dirtied there, so a
 * recycled block must really be cleared; an allocator may still skip the
 * clearing for memory fresh from the kernel, which is zero already.  An op
 * is one call.
 *
 * usage: calloc_zero <ops> <working-set> <min> <max> <seed> */
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "report.h"
#include "rng.h"
#include "slot_run.h"

#define USAGE "<ops> <working-set> <min> <max> <seed>"
#define CHUNK (1u << 16)

static uint32_t min_size, max_size;

BENCH_LOOP void bench_loop(char **slot, uint32_t ws, uint64_t n, rng_t *state)
{
    rng_t r = *state;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t k = rng_below(&r, ws);
        if (slot[k] != NULL) {
            free(slot[k]);
            slot[k] = NULL;
            continue;
        }
        size_t size = min_size + rng_below(&r, max_size - min_size + 1);
        char *p = calloc(1, size);
        CHECK(p != NULL, "calloc returned NULL");
        CHECK((p[0] | p[size / 2] | p[size - 1]) == 0,
              "calloc returned memory that is not zero");
        p[0] = p[size / 2] = p[size - 1] = 1;
        slot[k] = p;
    }
    *state = r;
}

static void step(char **slot, uint32_t ws, uint64_t n, void *rng)
{
    bench_loop(slot, ws, n, rng);
}

int main(int argc, char **argv)
{
    uint64_t ops = arg_u64(argc, argv, 1, 5000000, USAGE);
    uint32_t ws = (uint32_t)arg_u64(argc, argv, 2, 400, USAGE);
    min_size = (uint32_t)arg_u64(argc, argv, 3, 16, USAGE);
    max_size = (uint32_t)arg_u64(argc, argv, 4, 16384, USAGE);
    rng_t rng = rng_seed(arg_u64(argc, argv, 5, 42, USAGE));
    CHECK(ws > 0 && min_size > 0 && min_size <= max_size, USAGE);

    report_start();
    double seconds = slot_run(ws, ops, CHUNK, step, &rng);
    report_begin("calloc", "call", ops, seconds, 1);
    report_int("working_set", ws);
    report_int("min_size", min_size);
    report_int("max_size", max_size);
    report_end();
    return 0;
}
