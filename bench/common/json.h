/* Just enough JSON output for the harness's result lines. */
#ifndef BENCH_JSON_H
#define BENCH_JSON_H

/* Each writes "key": value to stdout; the caller writes the braces and commas. */
void json_put_str(const char *key, const char *value);
void json_put_int(const char *key, long long value);
void json_put_num(const char *key, double value);

#endif
