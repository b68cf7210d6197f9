/* realloc-growth: buffers that grow by realloc, as strings and vectors do.
 *
 * Several buffers grow side by side, so the block after a buffer is often
 * taken and growing in place is not always possible.  Each op picks a
 * buffer and grows it by a random step (mostly small appends, sometimes half
 * its size again); a buffer that passes <max> bytes is freed and starts
 * over.  Each buffer's first byte is checked after every move: realloc must
 * keep the contents.  An op is one call (realloc or free).
 *
 * usage: realloc_growth <ops> <buffers> <max> <seed> */
#include <stdint.h>
#include <stdlib.h>

#include "args.h"
#include "bench_loop.h"
#include "check.h"
#include "clock.h"
#include "marker.h"
#include "report.h"
#include "rng.h"
#include "sampler.h"
#include "scratch.h"

#define USAGE "<ops> <buffers> <max> <seed>"
#define CHUNK (1u << 16)

struct buffer {
    char *p;
    size_t size;
};

static uint64_t max_size;

BENCH_LOOP uint64_t bench_loop(struct buffer *buf, uint32_t nbuf, uint64_t n,
                               rng_t *state)
{
    rng_t r = *state;
    uint64_t calls = 0;
    for (uint64_t i = 0; i < n; i++) {
        struct buffer *b = &buf[rng_below(&r, nbuf)];
        if (b->size > max_size) {
            free(b->p);
            b->p = NULL;
            b->size = 0;
            calls++;
            continue;
        }
        size_t step = rng_below(&r, 8) == 0 ? b->size / 2 + 1
                                            : 1 + rng_below(&r, 64);
        char *p = realloc(b->p, b->size + step);
        CHECK(p != NULL, "realloc returned NULL");
        CHECK(b->size == 0 || p[0] == (char)(uintptr_t)b,
              "realloc lost the contents");
        p[b->size + step - 1] = 1;
        p[0] = (char)(uintptr_t)b;
        b->p = p;
        b->size += step;
        calls++;
    }
    *state = r;
    return calls;
}

int main(int argc, char **argv)
{
    uint64_t ops = arg_u64(argc, argv, 1, 5000000, USAGE);
    uint32_t nbuf = (uint32_t)arg_u64(argc, argv, 2, 32, USAGE);
    max_size = arg_u64(argc, argv, 3, 65536, USAGE);
    rng_t rng = rng_seed(arg_u64(argc, argv, 4, 42, USAGE));
    CHECK(nbuf > 0 && max_size > 0, USAGE);

    report_start();
    struct buffer *buf = scratch_alloc(nbuf * sizeof *buf);
    sampler_start(0);

    uint64_t calls = 0;
    marker_begin();
    double t0 = clock_now();
    for (uint64_t done = 0; done < ops; done += CHUNK) {
        uint64_t n = ops - done < CHUNK ? ops - done : CHUNK;
        calls += bench_loop(buf, nbuf, n, &rng);
        progress_add(0, n);
    }
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    for (uint32_t k = 0; k < nbuf; k++)
        free(buf[k].p);
    report_begin("realloc-growth", "call", calls, t1 - t0, 1);
    report_int("buffers", nbuf);
    report_int("max_size", (long long)max_size);
    report_end();
    return 0;
}
