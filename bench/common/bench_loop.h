/* The measured function of a workload.
 *
 * `make bench-ipo` counts instructions with callgrind's --toggle-collect=bench_loop,
 * so every workload names its measured loop bench_loop.  noipa keeps the
 * compiler from inlining or cloning it (a clone would be named
 * bench_loop.constprop.0 and escape the count); static keeps it local, and
 * the symbol table still names it for callgrind. */
#ifndef BENCH_LOOP_H
#define BENCH_LOOP_H

#define BENCH_LOOP static __attribute__((noipa, used))

#endif
