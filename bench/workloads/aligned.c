/* aligned: allocation with alignment beyond malloc's 16 bytes.
 *
 * random-mixed where every allocation asks for a random power-of-two
 * alignment from 16 bytes to <max-align>, by posix_memalign and
 * aligned_alloc in turn, and checks it got it.  An op is one call.
 *
 * usage: aligned <ops> <working-set> <min> <max> <max-align> <seed> */
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "report.h"
#include "rng.h"
#include "slot_run.h"

#define USAGE "<ops> <working-set> <min> <max> <max-align> <seed>"
#define CHUNK (1u << 16)

static uint32_t min_size, max_size, align_steps;

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
        size_t align = (size_t)16 << rng_below(&r, align_steps);
        void *p;
        if (i & 1) {
            CHECK(posix_memalign(&p, align, size) == 0, "posix_memalign failed");
        } else {
            /* C11 wants the size to be a multiple of the alignment. */
            p = aligned_alloc(align, (size + align - 1) & ~(align - 1));
            CHECK(p != NULL, "aligned_alloc returned NULL");
        }
        CHECK(((uintptr_t)p & (align - 1)) == 0, "block is not aligned");
        ((char *)p)[0] = (char)i;
        ((char *)p)[size - 1] = (char)i;
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
    max_size = (uint32_t)arg_u64(argc, argv, 4, 1024, USAGE);
    uint64_t max_align = arg_u64(argc, argv, 5, 4096, USAGE);
    rng_t rng = rng_seed(arg_u64(argc, argv, 6, 42, USAGE));
    CHECK(ws > 0 && min_size > 0 && min_size <= max_size && max_align >= 16 &&
          (max_align & (max_align - 1)) == 0, USAGE);
    align_steps = (uint32_t)__builtin_ctzll(max_align / 16) + 1;

    report_start();
    double seconds = slot_run(ws, ops, CHUNK, step, &rng);
    report_begin("aligned", "call", ops, seconds, 1);
    report_int("working_set", ws);
    report_int("max_align", (long long)max_align);
    report_end();
    return 0;
}
