/* The process's resident memory, read from /proc. */
#ifndef BENCH_MEMSTAT_H
#define BENCH_MEMSTAT_H

/* Resident set now, in KiB (/proc/self/statm), or -1. */
long memstat_rss_kb(void);

/* Peak resident set of the process so far, in KiB (VmHWM in
 * /proc/self/status), or -1. */
long memstat_peak_kb(void);

#endif
