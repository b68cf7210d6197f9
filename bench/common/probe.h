/* Which shared object serves the malloc family in this process. */
#ifndef BENCH_PROBE_H
#define BENCH_PROBE_H

/* Print one line "HAKBENCH-PROBE {json}" naming, for malloc, free and the rest
 * of the family, the file of the shared object that defines the function this
 * program calls.  The driver refuses a run whose line does not name the
 * allocator it preloaded: an early benchmark of the original hakmem measured
 * glibc by mistake. */
void probe_print(void);

#endif
