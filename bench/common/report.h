/* The start and the result line of every workload. */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stdint.h>

/* Call first thing in main: prints which library serves malloc (probe.h) and
 * notes the resident memory before the workload. */
void report_start(void);

/* Call once the workload has freed everything it allocated.  Reads the
 * resident memory as the allocator left it, then again after malloc_trim(0),
 * and the peak; then opens the line
 *   HAKBENCH-RESULT {"workload": ..., "ops": ..., ...
 * that report_int/report_num extend and report_end closes.  An op is one
 * call to the allocator unless op_unit says otherwise. */
void report_begin(const char *workload, const char *op_unit, uint64_t ops,
                  double seconds, int threads);
void report_int(const char *key, long long value);
void report_num(const char *key, double value);
void report_end(void);

#endif
