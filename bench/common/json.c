#include "json.h"

#include <stdio.h>

static void put_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

void json_put_str(const char *key, const char *value)
{
    put_string(key);
    fputs(": ", stdout);
    put_string(value);
}

void json_put_int(const char *key, long long value)
{
    put_string(key);
    printf(": %lld", value);
}

void json_put_num(const char *key, double value)
{
    put_string(key);
    printf(": %.17g", value);
}
