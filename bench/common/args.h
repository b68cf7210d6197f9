/* Command-line numbers for the workloads. */
#ifndef BENCH_ARGS_H
#define BENCH_ARGS_H

#include <stdint.h>

/* argv[i] as an unsigned number (decimal; k/m/g suffixes multiply by 2^10,
 * 2^20, 2^30), or fallback when argc <= i.  Prints usage and exits with status
 * 2 on a malformed argument. */
uint64_t arg_u64(int argc, char **argv, int i, uint64_t fallback,
                 const char *usage);

#endif
