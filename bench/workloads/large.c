/* large: blocks from 64 KiB to 32 MiB.
 *
 * random-mixed over a small working set of large blocks.  Each new block is
 * written once every <stride> bytes (every page by default), as a program
 * fills the buffers it asks for; so the figure includes the page faults an
 * allocator causes by returning memory to the kernel and mapping it again,
 * and what its cache of large blocks saves.  An op is one call.
 *
 * usage: large <ops> <working-set> <min> <max> <stride> <seed> */
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "report.h"
#include "rng.h"
#include "slot_run.h"

#define USAGE "<ops> <working-set> <min> <max> <stride> <seed>"

static uint64_t min_size, max_size, stride;

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
        size_t size = rng_range(&r, min_size, max_size);
        char *p = malloc(size);
        CHECK(p != NULL, "malloc returned NULL");
        for (size_t off = 0; off < size; off += stride)
            p[off] = (char)i;
        p[size - 1] = (char)i;
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
    uint64_t ops = arg_u64(argc, argv, 1, 2000, USAGE);
    uint32_t ws = (uint32_t)arg_u64(argc, argv, 2, 8, USAGE);
    min_size = arg_u64(argc, argv, 3, 64 << 10, USAGE);
    max_size = arg_u64(argc, argv, 4, 32 << 20, USAGE);
    stride = arg_u64(argc, argv, 5, 4096, USAGE);
    rng_t rng = rng_seed(arg_u64(argc, argv, 6, 42, USAGE));
    CHECK(ws > 0 && min_size > 0 && min_size <= max_size && stride > 0, USAGE);

    report_start();
    double seconds = slot_run(ws, ops, 1, step, &rng);
    report_begin("large", "call", ops, seconds, 1);
    report_int("working_set", ws);
    report_int("min_size", (long long)min_size);
    report_int("max_size", (long long)max_size);
    report_int("stride", (long long)stride);
    report_end();
    return 0;
}
