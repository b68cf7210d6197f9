/*
 * The rest of glibc's malloc interface, from hakmem's own figures:
 * mallinfo2 and mallinfo, malloc_stats, malloc_info (in glibc's XML shape,
 * so that what parses glibc's keeps working) and mallopt.  Left to glibc,
 * they would describe glibc's allocator, which holds next to nothing.
 * All cold: the figures are derived when asked for (stats.c), nothing is
 * counted for them.
 *
 * mallinfo2 in hakmem's terms (README.md, "glibc's interface"):
 *   arena    memory of the arenas made usable (committed), plus freed huge
 *            ranges kept for reuse
 *   ordblks  free pages still holding memory, plus those cached ranges
 *   smblks   free blocks of the pages in use (thread caches included)
 *   hblks    live huge blocks, each its own mapping
 *   hblkhd   the bytes of those mappings
 *   usmblks  0, as in glibc
 *   fsmblks  the bytes of the smblks blocks
 *   uordblks the bytes of the live blocks of the size classes
 *   fordblks arena - uordblks: all that is held and not in use
 *   keepcost what malloc_trim would give back now: the memory of the
 *            ordblks pages and ranges
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "hakmem.h"
#include "internal.h"
#include "stats.h"

#ifndef HAKMEM_NO_OVERRIDE

struct figures {
    struct mallinfo2 info;
    uint64_t reserved, committed;
    uint64_t free_blocks[HK_NCLASSES];
    size_t block_size[HK_NCLASSES];
};

static void gather(struct figures *f)
{
    struct hak_stats s;
    struct hk_census c;
    hk_stats_census(&s, &c);
    memset(f, 0, sizeof *f);
    struct mallinfo2 *m = &f->info;
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++) {
        /* Blocks that move between threads during the walk can push the
         * count of those out a little past either end. */
        uint64_t out = s.classes[cls].live;
        if ((int64_t)out < 0)
            out = 0;
        if (out > c.class_blocks[cls])
            out = c.class_blocks[cls];
        size_t size = s.classes[cls].block_size;
        f->free_blocks[cls] = c.class_blocks[cls] - out;
        f->block_size[cls] = size;
        m->smblks += f->free_blocks[cls];
        m->fsmblks += f->free_blocks[cls] * size;
        m->uordblks += out * size;
    }
    m->arena = s.committed_bytes + c.huge_cache_bytes;
    m->ordblks = c.dirty_pages + c.huge_cache_ranges;
    m->hblks = c.huge_blocks;
    m->hblkhd = c.huge_bytes;
    m->fordblks = m->arena > m->uordblks ? m->arena - m->uordblks : 0;
    m->keepcost = c.dirty_bytes + c.huge_cache_bytes;
    f->reserved = s.reserved_bytes;
    f->committed = s.committed_bytes;
}

HK_API struct mallinfo2 mallinfo2(void)
{
    struct figures f;
    gather(&f);
    return f.info;
}

static int saturated(size_t x)
{
    return x > INT_MAX ? INT_MAX : (int)x;
}

/* The same with int fields; a figure above INT_MAX reads as INT_MAX, where
 * glibc's would wrap. */
HK_API struct mallinfo mallinfo(void)
{
    struct figures f;
    gather(&f);
    const struct mallinfo2 *m = &f.info;
    return (struct mallinfo){
        .arena = saturated(m->arena),       .ordblks = saturated(m->ordblks),
        .smblks = saturated(m->smblks),     .hblks = saturated(m->hblks),
        .hblkhd = saturated(m->hblkhd),     .usmblks = saturated(m->usmblks),
        .fsmblks = saturated(m->fsmblks),   .uordblks = saturated(m->uordblks),
        .fordblks = saturated(m->fordblks), .keepcost = saturated(m->keepcost),
    };
}

/* hakmem's statistics table (as HAKMEM_STATS=1 prints it), on stderr. */
HK_API void malloc_stats(void)
{
    fflush(stderr); /* what the program wrote there before comes first */
    int fd = fileno(stderr);
    if (fd >= 0)
        hak_stats_print(fd, false);
}

/* The totals closing a <heap> and the whole document; the latter has the
 * huge blocks (glibc's mmapped chunks) too. */
static void write_totals(FILE *fp, const struct figures *f, bool whole)
{
    const struct mallinfo2 *m = &f->info;
    fprintf(fp, "<total type=\"fast\" count=\"%zu\" size=\"%zu\"/>\n", m->smblks, m->fsmblks);
    fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", m->ordblks, m->keepcost);
    if (whole)
        fprintf(fp, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n", m->hblks, m->hblkhd);
    /* No high-water mark is kept: max is current. */
    fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n", m->arena);
    fprintf(fp, "<system type=\"max\" size=\"%zu\"/>\n", m->arena);
    fprintf(fp, "<aspace type=\"total\" size=\"%llu\"/>\n", (unsigned long long)f->reserved);
    fprintf(fp, "<aspace type=\"mprotect\" size=\"%llu\"/>\n", (unsigned long long)f->committed);
}

/* glibc's document with one <heap> for all of hakmem's: its free blocks by
 * size class, then the figures of mallinfo2.  The figures are gathered
 * first, so that no lock of hakmem's is held while stdio writes, which
 * may call malloc (a stream's buffer, an open_memstream growing). */
HK_API int malloc_info(int options, FILE *fp)
{
    if (options != 0)
        return EINVAL; /* as glibc does, errno untouched */
    struct figures f;
    gather(&f);
    fputs("<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n", fp);
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++) {
        uint64_t n = f.free_blocks[cls];
        size_t size = f.block_size[cls];
        if (n != 0)
            fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%llu\" count=\"%llu\"/>\n",
                    size, size, (unsigned long long)(n * size), (unsigned long long)n);
    }
    fputs("</sizes>\n", fp);
    write_totals(fp, &f, false);
    fputs("</heap>\n", fp);
    write_totals(fp, &f, true);
    fputs("</malloc>\n", fp);
    return 0;
}

/* glibc's tunables.  M_TRIM_THRESHOLD, the free memory kept before it goes
 * back, is hakmem's idle_keep (HAKMEM_IDLE_KEEP); a negative value keeps
 * everything, as in glibc.  It is a word that slow paths read, stored
 * whole.  Those with no counterpart here are accepted and change nothing;
 * M_MXFAST is checked against glibc's bound.  Unknown ones return 1 and
 * change nothing, as in glibc. */
HK_API int mallopt(int param, int value)
{
    hk_init(); /* the options are loaded first: they would overwrite this */
    switch (param) {
    case M_TRIM_THRESHOLD:
        __atomic_store_n(&hk_config.idle_keep, value < 0 ? SIZE_MAX : (size_t)value,
                         __ATOMIC_RELAXED);
        return 1;
    case M_MXFAST:
        return value >= 0 && (size_t)value <= 80 * sizeof(size_t) / 4;
    case M_TOP_PAD:
    case M_MMAP_THRESHOLD:
    case M_MMAP_MAX:
    case M_CHECK_ACTION:
    case M_PERTURB:
    case M_ARENA_TEST:
    case M_ARENA_MAX:
        return 1;
    default:
        return 1;
    }
}

#endif
