/* The timed part of a single-threaded slot workload (random-mixed, aligned,
 * calloc, large): each op works on one slot of an array of blocks. */
#ifndef BENCH_SLOT_RUN_H
#define BENCH_SLOT_RUN_H

#include <stdint.h>

/* n ops of the workload on its slots: a wrapper around its bench_loop. */
typedef void slot_step(char **slot, uint32_t ws, uint64_t n, void *ctx);

/* Runs `ops` ops of step over a fresh array of ws empty slots, in stretches
 * of at most `chunk` ops (the progress counter and the markers go between
 * stretches, so they cost nothing per op), with the RSS sampler running;
 * then frees every block left.  Returns the seconds the ops took. */
double slot_run(uint32_t ws, uint64_t ops, uint64_t chunk, slot_step *step, void *ctx);

#endif
