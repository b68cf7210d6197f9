/*
 * Fatal errors.  Messages are formatted by hand and written with write(2):
 * stdio could call malloc, which may be what just failed.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void hk_line_str(struct hk_line *l, const char *s)
{
    size_t n = strlen(s), room = sizeof l->buf - l->len;
    n = n < room ? n : room;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

void hk_line_hex(struct hk_line *l, uintptr_t x)
{
    char digits[2 + 16 + 1] = "0x";
    int n = 2;
    int shift = 60;
    while (shift > 0 && ((x >> shift) & 15) == 0)
        shift -= 4;
    for (; shift >= 0; shift -= 4)
        digits[n++] = "0123456789abcdef"[(x >> shift) & 15];
    digits[n] = '\0';
    hk_line_str(l, digits);
}

void hk_line_dec(struct hk_line *l, uint64_t x)
{
    char digits[21];
    int n = sizeof digits - 1;
    digits[n] = '\0';
    do
        digits[--n] = (char)('0' + x % 10);
    while ((x /= 10) != 0);
    hk_line_str(l, digits + n);
}

void hk_line_write(struct hk_line *l)
{
    (void)!write(STDERR_FILENO, l->buf, l->len);
    l->len = 0;
}

void hk_invalid_pointer(const char *call, const void *p)
{
#ifdef HK_SECURE
    hk_secure_bad_pointer(call, p); /* a better report, if p is in a block */
#endif
    struct hk_line l = {0};
    hk_line_str(&l, "hakmem: ");
    hk_line_str(&l, call);
    hk_line_str(&l, "(): invalid pointer ");
    hk_line_hex(&l, (uintptr_t)p);
    hk_line_str(&l, "\n");
    hk_line_write(&l);
    abort();
}

void hk_report(const char *what, const char *call, const void *p, size_t size)
{
    struct hk_line l = {0};
    hk_line_str(&l, "hakmem: ");
    hk_line_str(&l, what);
    hk_line_str(&l, ": ");
    hk_line_str(&l, call);
    hk_line_str(&l, "(");
    hk_line_hex(&l, (uintptr_t)p);
    hk_line_str(&l, ") ");
    hk_line_dec(&l, size);
    hk_line_str(&l, "\n");
    hk_line_write(&l);
    abort();
}

/* One line on stderr: "hakmem: <what><detail>". */
static void say(const char *what, const char *detail)
{
    struct hk_line l = {0};
    hk_line_str(&l, "hakmem: ");
    hk_line_str(&l, what);
    hk_line_str(&l, detail);
    hk_line_str(&l, "\n");
    hk_line_write(&l);
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
