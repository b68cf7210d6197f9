/*
 * Statistics.  Nothing is counted on malloc's or free's fast path: heaps
 * count refills and the blocks that move between pages and thread caches,
 * the OS layer counts its system calls, and everything per class is derived
 * when asked for, by reading the page headers:
 *   mallocs = blocks moved into thread caches - blocks given back unused
 *             - blocks still in the calling thread's cache
 *   live    = blocks of in-use pages that are in no free list
 *   frees   = mallocs - live
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hakmem.h"
#include "internal.h"
#include "stats.h"

struct hk_os_stats hk_os_stats;

/* The public table has room for every class (it is part of the ABI, so it
 * is larger than today's classes). */
_Static_assert(HAK_STATS_CLASSES >= HK_NCLASSES, "hak_stats has a row per size class");

static uint64_t list_length(void *link)
{
    uint64_t n = 0;
    for (void *b = hk_link_block(link); b != NULL; b = hk_list_next(b))
        n++;
    return n;
}

/* Blocks of page pg that are not with the user, apart from the TLS list. */
static uint64_t page_free_blocks(const struct hk_page *pg)
{
    if (pg->state == HK_PAGE_FULL && pg->kind == HK_SMALL)
        return hk_classes[pg->cls].regain - (uint64_t)pg->used; /* used counts down */
    return (uint64_t)(pg->capacity - pg->used);
}

/* A span page's blocks out, by their classes (span_page.c).  Its owner
 * may be changing the run map: each byte is read once, and holds 0 or a
 * run's length (and the sampled bit). */
static void count_span_page(const struct hk_page *pg, struct hak_stats *out,
                            struct hk_census *census)
{
    const volatile uint8_t *runs = hk_span_runs(pg);
    for (unsigned i = 0; i < pg->capacity; i++) {
        unsigned n = hk_span_run_length(runs[i]);
        if (!hk_span_run_fits(n))
            continue;
        unsigned cls = hk_span_run_class(n);
        out->classes[cls].live++;
        if (census != NULL)
            census->class_blocks[cls]++;
    }
}

/* Called with the heap's pool lock held; census may be NULL. */
static void count_arena_pages(const struct hk_arena *a, struct hak_stats *out,
                              struct hk_census *census)
{
    for (unsigned kind = 0; kind < HK_NKINDS; kind++) {
        const struct hk_region *r = &a->region[kind];
        unsigned shift = hk_page_shift(kind);
        uint32_t hwm = atomic_load_explicit(&r->hwm, memory_order_acquire);
        for (uint32_t i = r->first; i < hwm; i++) {
            /* A purged page is free, and its header is not read: a read of
             * memory given back maps it again, which Linux counts as
             * resident (6.18 here: 4 KiB of a test's RSS for every purged
             * page, each time the statistics were read). */
            if (hk_region_page_clean(r, i))
                continue;
            uintptr_t base = a->base + hk_region_offset(kind) + ((uintptr_t)i << shift);
            const struct hk_page *pg = hk_page_header(base, shift);
            if (pg->block_size == 0)
                continue;
            if (pg->cls == HK_SPAN_CLASS) {
                count_span_page(pg, out, census);
                continue;
            }
            struct hak_class_stats *c = &out->classes[pg->cls];
            c->pages++;
            c->live += pg->capacity - page_free_blocks(pg);
            if (census != NULL)
                census->class_blocks[pg->cls] += pg->capacity;
        }
        if (census != NULL) {
            census->dirty_pages += r->ndirty;
            census->dirty_bytes += hk_region_dirty_bytes(a, kind);
        }
    }
}

static uint64_t proc_status_kb(const char *key)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *line = strstr(buf, key);
    if (line == NULL)
        return 0;
    unsigned long long kb = 0;
    sscanf(line + strlen(key), ": %llu", &kb);
    return kb;
}

static void collect(struct hak_stats *out, struct hk_census *census)
{
    memset(out, 0, sizeof *out);
    hk_init();
    struct hk_heap *mine = hk_tls.heap;
    for (struct hk_heap *h = hk_heaps_first(); h != NULL; h = h->next) {
        for (unsigned c = 1; c < HK_NCLASSES; c++) {
            struct hak_class_stats *cs = &out->classes[c];
            cs->mallocs += __atomic_load_n(&h->supplied[c], __ATOMIC_RELAXED)
                         - __atomic_load_n(&h->returned[c], __ATOMIC_RELAXED);
            cs->refills += __atomic_load_n(&h->refills[c], __ATOMIC_RELAXED);
        }
        pthread_mutex_lock(&h->pool_lock); /* arenas may be unmapped */
        for (struct hk_arena *a = h->arenas; a != NULL; a = a->next)
            count_arena_pages(a, out, census);
        pthread_mutex_unlock(&h->pool_lock);
        /* Blocks of full pages that wait in the delayed list are free.  The
         * list is taken while it is counted, then sent back: read in place,
         * its blocks could meanwhile be drained by their owner and handed
         * out again, and their first words (a message's link and count)
         * become the program's data. */
        struct hk_remote_msg *first = atomic_exchange_explicit(&h->delayed, NULL,
                                                               memory_order_acquire);
        struct hk_remote_msg *last = NULL;
        for (struct hk_remote_msg *m = first; m != NULL; m = m->next) {
            if (m->count == 0) /* the block itself (remote.c) */
                out->classes[hk_block_class(hk_page_of_block(m), m)].live--;
            for (uint32_t i = 0; i < m->count; i++)
                out->classes[hk_block_class(hk_page_of_block(m->blocks[i]), m->blocks[i])].live--;
            last = m;
        }
        if (first != NULL)
            hk_remote_send(h, first, last);
    }
    if (mine != NULL) {
        for (unsigned c = 1; c < HK_NCLASSES; c++) {
            uint64_t cached = list_length(hk_tls.free[c]);
            if (hk_list_stashed(mine, c))
                cached += list_length(mine->stashed);
            out->classes[c].mallocs -= cached;
            out->classes[c].live -= cached;
        }
    }
    for (unsigned c = 0; c < HK_NCLASSES; c++) {
        struct hak_class_stats *cs = &out->classes[c];
        cs->block_size = hk_classes[c].block_size;
        cs->frees = cs->mallocs >= cs->live ? cs->mallocs - cs->live : 0;
        out->small_live_bytes += cs->live * cs->block_size;
    }
    out->classes[0].block_size = 0;
    out->heaps = atomic_load(&hk_os_stats.heaps);
    out->arenas = atomic_load(&hk_os_stats.arenas);
    out->reserved_bytes = atomic_load(&hk_os_stats.reserved_bytes);
    out->committed_bytes = atomic_load(&hk_os_stats.committed_bytes);
    out->purged_bytes = atomic_load(&hk_os_stats.purged_bytes);
    out->syscalls = hk_os_syscalls();
    out->huge_allocs = atomic_load(&hk_os_stats.huge_allocs);
    out->huge_cache_hits = atomic_load(&hk_os_stats.huge_cache_hits);
    out->huge_live_bytes = atomic_load(&hk_os_stats.huge_live_bytes);
}

HK_API void hak_stats_get(struct hak_stats *out)
{
    collect(out, NULL);
    out->resident_bytes = proc_status_kb("VmRSS") * 1024;
    out->peak_resident_bytes = proc_status_kb("VmHWM") * 1024;
}

void hk_stats_census(struct hak_stats *out, struct hk_census *census)
{
    memset(census, 0, sizeof *census);
    collect(out, census);
    census->huge_blocks = hk_huge_count(&census->huge_bytes);
    uint64_t spares;
    census->huge_cache_bytes = hk_huge_cache_held(&census->huge_cache_ranges) +
                               hk_huge_spares_held(&spares);
    census->huge_cache_ranges += spares;
}

/* Output through a stack buffer and write(2): no stdio stream, no malloc. */
struct out {
    int fd;
    size_t len;
    char buf[4096];
};

static void flush(struct out *o)
{
    size_t done = 0;
    while (done < o->len) {
        ssize_t n = write(o->fd, o->buf + done, o->len - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    o->len = 0;
}

__attribute__((format(printf, 2, 3))) static void say(struct out *o, const char *fmt, ...)
{
    if (o->len > sizeof o->buf - 256)
        flush(o);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, sizeof o->buf - o->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n < sizeof o->buf - o->len ? (size_t)n : sizeof o->buf - o->len - 1;
}

#define MIB(x) ((double)(x) / (1024.0 * 1024.0))

static void print_table(struct out *o, const struct hak_stats *s)
{
    say(o, "hakmem %s statistics (profile %s)\n", HAKMEM_VERSION_STRING, hk_config.profile);
    say(o, "%10s %12s %12s %10s %8s %10s %12s\n", "class", "mallocs", "frees", "live",
        "pages", "refills", "live bytes");
    for (unsigned c = 1; c < HK_NCLASSES; c++) {
        const struct hak_class_stats *cs = &s->classes[c];
        if (cs->mallocs == 0 && cs->pages == 0)
            continue;
        say(o, "%10zu %12llu %12llu %10llu %8llu %10llu %12llu\n", cs->block_size,
            (unsigned long long)cs->mallocs, (unsigned long long)cs->frees,
            (unsigned long long)cs->live, (unsigned long long)cs->pages,
            (unsigned long long)cs->refills, (unsigned long long)(cs->live * cs->block_size));
    }
    say(o, "heaps %llu, arenas %llu (%.0f MiB reserved, %.1f MiB committed)\n",
        (unsigned long long)s->heaps, (unsigned long long)s->arenas, MIB(s->reserved_bytes),
        MIB(s->committed_bytes));
    say(o, "live: %.2f MiB in size classes, %.2f MiB in huge blocks (%llu mapped, %llu from cache)\n",
        MIB(s->small_live_bytes), MIB(s->huge_live_bytes), (unsigned long long)s->huge_allocs,
        (unsigned long long)s->huge_cache_hits);
    say(o, "resident %.2f MiB, peak %.2f MiB; purged %.2f MiB; %llu system calls\n",
        MIB(s->resident_bytes), MIB(s->peak_resident_bytes), MIB(s->purged_bytes),
        (unsigned long long)s->syscalls);
    unsigned made, out;
    hk_remote_msg_counts(&made, &out);
    say(o, "remote-free messages: %u made, %u out of the pool\n", made, out);
}

static void print_json(struct out *o, const struct hak_stats *s)
{
    say(o, "{\"version\":\"%s\",\"profile\":\"%s\",\"heaps\":%llu,\"arenas\":%llu,"
        "\"reserved_bytes\":%llu,\"committed_bytes\":%llu,\"resident_bytes\":%llu,"
        "\"peak_resident_bytes\":%llu,\"purged_bytes\":%llu,\"syscalls\":%llu,"
        "\"huge_allocs\":%llu,\"huge_cache_hits\":%llu,\"huge_live_bytes\":%llu,"
        "\"small_live_bytes\":%llu,\"classes\":[",
        HAKMEM_VERSION_STRING, hk_config.profile, (unsigned long long)s->heaps,
        (unsigned long long)s->arenas, (unsigned long long)s->reserved_bytes,
        (unsigned long long)s->committed_bytes, (unsigned long long)s->resident_bytes,
        (unsigned long long)s->peak_resident_bytes, (unsigned long long)s->purged_bytes,
        (unsigned long long)s->syscalls, (unsigned long long)s->huge_allocs,
        (unsigned long long)s->huge_cache_hits, (unsigned long long)s->huge_live_bytes,
        (unsigned long long)s->small_live_bytes);
    const char *sep = "";
    for (unsigned c = 1; c < HK_NCLASSES; c++) {
        const struct hak_class_stats *cs = &s->classes[c];
        say(o, "%s{\"block_size\":%zu,\"mallocs\":%llu,\"frees\":%llu,\"live\":%llu,"
            "\"pages\":%llu,\"refills\":%llu}",
            sep, cs->block_size, (unsigned long long)cs->mallocs,
            (unsigned long long)cs->frees, (unsigned long long)cs->live,
            (unsigned long long)cs->pages, (unsigned long long)cs->refills);
        sep = ",";
    }
    unsigned made, out;
    hk_remote_msg_counts(&made, &out);
    say(o, "],\"remote_messages\":{\"made\":%u,\"out\":%u}}\n", made, out);
}

HK_API void hak_stats_print(int fd, bool json)
{
    struct hak_stats s;
    hak_stats_get(&s);
    struct out o = {.fd = fd};
    if (json)
        print_json(&o, &s);
    else
        print_table(&o, &s);
    flush(&o);
}

/* HAKMEM_STATS: the report at exit goes to a copy of stderr taken at start,
 * because some programs close stderr before they exit (coreutils do). */
static int report_fd = STDERR_FILENO;

void hk_stats_prepare(void)
{
    if (hk_config.stats == 0)
        return;
    int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0)
        report_fd = fd;
}

__attribute__((destructor)) void hk_stats_at_exit(void)
{
    if (hk_config.stats != 0)
        hak_stats_print(report_fd, hk_config.stats == 2);
}
