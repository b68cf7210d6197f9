#include "slot_run.h"

#include <stdlib.h>

#include "clock.h"
#include "marker.h"
#include "sampler.h"
#include "scratch.h"

double slot_run(uint32_t ws, uint64_t ops, uint64_t chunk, slot_step *step, void *ctx)
{
    char **slot = scratch_alloc(ws * sizeof *slot);
    sampler_start(0);

    marker_begin();
    double t0 = clock_now();
    for (uint64_t done = 0; done < ops; done += chunk) {
        uint64_t n = ops - done < chunk ? ops - done : chunk;
        step(slot, ws, n, ctx);
        progress_add(0, n);
    }
    double t1 = clock_now();
    marker_end();

    sampler_stop();
    for (uint32_t k = 0; k < ws; k++)
        free(slot[k]);
    return t1 - t0;
}
