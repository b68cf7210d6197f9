/* The measured function of a workload.
 *
 * `make bench-ipo` counts instructions with callgrind's --toggle-collect=bench_loop,
 * so every workload names its measured loop bench_loop.  noipa keeps the
 * compiler from inlining or cloning it (a clone would be named
 * bench_loop.constprop.0 and escape the count). */
#ifndef BENCH_LOOP_H
#define BENCH_LOOP_H

#define BENCH_LOOP __attribute__((noipa))

#endif
