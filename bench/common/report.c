#include "report.h"

#include <malloc.h>
#include <stdio.h>

#include "json.h"
#include "memstat.h"
#include "probe.h"

static long rss_start_kb;

void report_start(void)
{
    probe_print();
    rss_start_kb = memstat_rss_kb();
}

void report_begin(const char *workload, const char *op_unit, uint64_t ops,
                  double seconds, int threads)
{
    long after_free = memstat_rss_kb();
    /* glibc's malloc_trim, unless the preloaded allocator defines its own:
     * shows how much of what the allocator kept it could give back. */
    malloc_trim(0);
    long after_trim = memstat_rss_kb();
    long peak = memstat_peak_kb();

    fputs("HAKBENCH-RESULT {", stdout);
    json_put_str("workload", workload);
    report_int("ops", (long long)ops);
    report_num("seconds", seconds);
    report_num("ops_per_sec", seconds > 0 ? (double)ops / seconds : 0);
    fputs(", ", stdout);
    json_put_str("op_unit", op_unit);
    report_int("threads", threads);
    report_int("rss_start_kb", rss_start_kb);
    report_int("peak_rss_kb", peak);
    report_int("rss_after_free_kb", after_free);
    report_int("rss_after_trim_kb", after_trim);
}

void report_int(const char *key, long long value)
{
    fputs(", ", stdout);
    json_put_int(key, value);
}

void report_num(const char *key, double value)
{
    fputs(", ", stdout);
    json_put_num(key, value);
}

void report_end(void)
{
    fputs("}\n", stdout);
    fflush(stdout);
}
