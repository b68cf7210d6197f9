/*
 * Fatal errors.  Messages are formatted by hand and written with write(2):
 * stdio could call malloc, which may be what just failed.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static void put(char *buf, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n > 255)
        n = 255 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
}

static void put_hex(char *buf, size_t *len, uintptr_t x)
{
    char digits[2 + 16 + 1] = "0x";
    int n = 2;
    int shift = 60;
    while (shift > 0 && ((x >> shift) & 15) == 0)
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        digits[n++] = "0123456789abcdef"[(x >> shift) & 15];
    digits[n] = '\0';
    put(buf, len, digits);
}

void hk_invalid_pointer(const char *call, const void *p)
{
#ifdef HK_SECURE
    hk_secure_bad_pointer(call, p); /* a better report, if p is in a block */
#endif
    char buf[256];
    size_t len = 0;
    put(buf, &len, "hakmem: ");
    put(buf, &len, call);
    put(buf, &len, "(): invalid pointer ");
    put_hex(buf, &len, (uintptr_t)p);
    put(buf, &len, "\n");
    (void)!write(STDERR_FILENO, buf, len);
    abort();
}

#ifdef HK_SECURE
static void put_decimal(char *buf, size_t *len, uint64_t x)
{
    char digits[21];
    int n = sizeof digits - 1;
    digits[n] = '\0';
    do
        digits[--n] = (char)('0' + x % 10);
    while ((x /= 10) != 0);
    put(buf, len, digits + n);
}

void hk_secure_report(const char *what, const char *call, const void *p, size_t size)
{
    char buf[256];
    size_t len = 0;
    put(buf, &len, "hakmem: ");
    put(buf, &len, what);
    put(buf, &len, ": ");
    put(buf, &len, call);
    put(buf, &len, "(");
    put_hex(buf, &len, (uintptr_t)p);
    put(buf, &len, ") ");
    put_decimal(buf, &len, size);
    put(buf, &len, "\n");
    (void)!write(STDERR_FILENO, buf, len);
    abort();
}
#endif

/* One line on stderr: "hakmem: <what><detail>". */
static void say(const char *what, const char *detail)
{
    char buf[256];
    size_t len = 0;
    put(buf, &len, "hakmem: ");
    put(buf, &len, what);
    put(buf, &len, detail);
    put(buf, &len, "\n");
    (void)!write(STDERR_FILENO, buf, len);
}

void hk_fatal(const char *msg)
{
    say("fatal: ", msg);
    abort();
}

/* A bad option value: reported with HAKMEM_VERBOSE, otherwise silent. */
void hk_warn(const char *msg)
{
    if (hk_config.verbose)
        say("warning: ignoring bad value of ", msg);
}
