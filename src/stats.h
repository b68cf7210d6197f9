/*
 * Process-wide counters of operating-system work.  They change only next to
 * a system call, so a relaxed atomic add costs nothing that matters; nothing
 * on malloc's or free's fast path touches them.
 */
#ifndef HAKMEM_STATS_H
#define HAKMEM_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "hakmem.h"
#include "internal.h"

struct hk_os_stats {
    _Atomic uint64_t heaps;
    _Atomic uint64_t arenas;
    _Atomic uint64_t reserved_bytes;
    _Atomic uint64_t committed_bytes;
    _Atomic uint64_t purged_bytes;
    _Atomic uint64_t huge_allocs;
    _Atomic uint64_t huge_cache_hits;
    _Atomic uint64_t huge_live_bytes;
};
extern struct hk_os_stats hk_os_stats;

static inline void hk_stat_add(_Atomic uint64_t *counter, uint64_t n)
{
    atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

/* What glibc's mallinfo and malloc_info tell that struct hak_stats does
 * not (introspect.c), derived the same way when asked for: from the page
 * headers, the regions' free page lists, the huge registry and the cache. */
struct hk_census {
    uint64_t class_blocks[HK_NCLASSES]; /* blocks of the pages in use, out or not */
    uint64_t dirty_pages;       /* free pages whose memory is not purged yet */
    uint64_t dirty_bytes;       /* the memory they hold */
    uint64_t huge_blocks;       /* live huge blocks, a mapping each */
    uint64_t huge_bytes;        /* the bytes of those mappings */
    uint64_t huge_cache_ranges; /* freed huge ranges kept for reuse */
    uint64_t huge_cache_bytes;
};
/* Both at once: hak_stats_get without the resident figures (no /proc). */
void hk_stats_census(struct hak_stats *out, struct hk_census *census);

void hk_stats_prepare(void); /* at start-up, once the options are known */
void hk_stats_at_exit(void);

#endif /* HAKMEM_STATS_H */
