/* pcsample: where a program's threads spend their CPU time, for machines
 * without perf (the lent many-core ones).  Preloaded after the allocator
 * (LD_PRELOAD="liballoc.so libpcsample.so"), it samples the interrupted
 * instruction of whichever thread the process CPU-time timer fires in
 * (ITIMER_PROF: the kernel signals the thread that was running), and at
 * exit writes the addresses and the process's maps to
 * $PCSAMPLE_OUT.<pid>; bench/pcsample.py names them by symbol.
 *
 * It calls no malloc: the buffer comes from mmap, the handler only stores.
 * Period: $PCSAMPLE_US microseconds of process CPU time (default 500). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_SAMPLES (1u << 22)

static uintptr_t *samples;
static _Atomic unsigned taken;

static void on_prof(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)info;
    unsigned i = atomic_fetch_add_explicit(&taken, 1, memory_order_relaxed);
    if (i < MAX_SAMPLES)
        samples[i] = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
}

__attribute__((constructor)) static void pcsample_start(void)
{
    if (getenv("PCSAMPLE_OUT") == NULL)
        return;
    samples = mmap(NULL, MAX_SAMPLES * sizeof *samples, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (samples == MAP_FAILED)
        return;
    struct sigaction sa = {.sa_sigaction = on_prof, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigaction(SIGPROF, &sa, NULL);
    const char *us = getenv("PCSAMPLE_US");
    long period = us != NULL ? atol(us) : 500;
    struct itimerval it = {{0, period}, {0, period}};
    setitimer(ITIMER_PROF, &it, NULL);
}

static void write_all(int fd, const void *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p = (const char *)p + w;
        n -= (size_t)w;
    }
}

__attribute__((destructor)) static void pcsample_stop(void)
{
    const char *out = getenv("PCSAMPLE_OUT");
    if (out == NULL || samples == NULL || samples == MAP_FAILED)
        return;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", out, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    /* The maps first, up to a line of "--", then one address a line. */
    char buf[65536];
    int maps = open("/proc/self/maps", O_RDONLY);
    ssize_t n;
    while (maps >= 0 && (n = read(maps, buf, sizeof buf)) > 0)
        write_all(fd, buf, (size_t)n);
    if (maps >= 0)
        close(maps);
    write_all(fd, "--\n", 3);
    unsigned total = atomic_load(&taken);
    if (total > MAX_SAMPLES)
        total = MAX_SAMPLES;
    size_t len = 0;
    for (unsigned i = 0; i < total; i++) {
        if (len > sizeof buf - 32) {
            write_all(fd, buf, len);
            len = 0;
        }
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%lx\n", (unsigned long)samples[i]);
    }
    write_all(fd, buf, len);
    close(fd);
}
