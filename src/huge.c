/*
 * Huge blocks (above 512 KiB, or aligned beyond what a size class gives):
 * each has its own range of address space, from mmap or from the cache of
 * freed ranges (huge_cache.c).  A registry (an open-addressing hash table)
 * knows every huge block, so free can tell a huge block from a foreign
 * pointer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "lock.h"
#include "stats.h"

struct huge_entry {
    uintptr_t addr; /* 0: empty slot, TOMBSTONE: deleted */
    size_t size;    /* length of the mapping */
    /* A sampled block (heap_profile.c): its bytes as recorded, its site + 1
     * (0: not sampled), and, standing in for a block of a size class, that
     * block's size (its usable size; else 0: the mapping's). */
    size_t sampled;
    uint32_t site;
    uint32_t usable;
};
#define TOMBSTONE ((uintptr_t)1)

/* Held briefly; while profiling without sample slots (heap_profile.c),
 * every sample takes it twice (a stand-in's range and its free), from
 * every thread (lock.h). */
static struct hk_lock huge_lock = HK_LOCK_INIT;
static struct huge_entry *table;
static size_t table_cap; /* a power of two */
static size_t table_used; /* live entries and tombstones */
static size_t table_live; /* live entries */

/* Spares: the freed mappings of stand-in blocks (a sampled allocation of a
 * size class where the profiler has no sample slot for it: 64 KiB and up,
 * under an address-space limit, or with the slots' range full;
 * heap_profile.c), kept apart, oldest first, and reused as they come, under
 * the lock the registry takes anyway.  One comes every few dozen medium
 * allocations then, too often for the huge cache's clock, merging and
 * splitting.  At most SPARES of them, and SPARE_BYTES or the most bytes of
 * stand-ins live at once in the last huge_cache_ms, whichever is more: the
 * spares' memory follows the sampled blocks' peak, so a program whose
 * threads free their blocks and the next ones allocate as many finds them
 * all (churn-large profiled, 16 B-256 KiB blocks, 4 threads a wave: spares
 * bounded by the stand-ins live, 64 of them, 60 K page faults and 1.1 s;
 * so, 33 K and 0.7 s; 0.63 s unprofiled).  Any purge of the cache sends
 * them there. */
#define SPARES 256
#define SPARE_BYTES ((size_t)4 << 20)
#define SPARES_OUT 8 /* spares a free sends to the cache at most */
struct spare {
    uintptr_t addr;
    size_t len;
};
static struct spare spares[SPARES];
static unsigned nspares;
static size_t spare_bytes;
static size_t standin_bytes; /* of the live stand-ins */
/* Their most since peak_from (hk_clock_ms), and before it: a window ends
 * at the first free past SPARE_BYTES huge_cache_ms after it began. */
static size_t standin_peak, standin_peak_before;
static uint64_t peak_from;

/* The statistics' huge_live_bytes: written only under the lock, so with
 * no locked instruction (a stand-in of the heap profiler may come and go
 * every few dozen medium allocations); read without it. */
static void live_bytes_add(int64_t n)
{
    _Atomic uint64_t *live = &hk_os_stats.huge_live_bytes;
    atomic_store_explicit(live, atomic_load_explicit(live, memory_order_relaxed) + (uint64_t)n,
                          memory_order_relaxed);
}

static size_t slot_of(uintptr_t addr)
{
    return (size_t)(((addr >> 12) * 0x9E3779B97F4A7C15ull) >> 20) & (table_cap - 1);
}

static struct huge_entry *lookup(uintptr_t addr)
{
    if (table_cap == 0)
        return NULL;
    for (size_t i = slot_of(addr);; i = (i + 1) & (table_cap - 1)) {
        if (table[i].addr == addr)
            return &table[i];
        if (table[i].addr == 0)
            return NULL;
    }
}

/* A table without tombstones, twice as large only when the live entries
 * would fill more than a quarter of the present one: a program whose huge
 * blocks come and go at new addresses (the cache splits and merges ranges)
 * leaves a tombstone per free, and doubling for those alone grew the table
 * without end (16384 slots after 200,000 allocations with 8 live). */
static bool table_rebuild(void)
{
    size_t cap = table_cap ? table_cap : 1024;
    while ((table_live + 1) * 4 > cap)
        cap *= 2;
    struct huge_entry *old = table;
    size_t old_cap = table_cap;
    struct huge_entry *fresh = hk_os_map(cap * sizeof *fresh);
    if (fresh == NULL)
        return false;
    table = fresh;
    table_cap = cap;
    table_used = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].addr > TOMBSTONE) {
            size_t j = slot_of(old[i].addr);
            while (table[j].addr != 0)
                j = (j + 1) & (cap - 1);
            table[j] = old[i];
            table_used++;
        }
    }
    if (old != NULL)
        hk_os_unmap(old, old_cap * sizeof *old);
    return true;
}

static bool insert(uintptr_t addr, size_t size, const struct huge_entry *sample)
{
    if ((table_used + 1) * 2 > table_cap && !table_rebuild())
        return false;
    size_t i = slot_of(addr);
    while (table[i].addr > TOMBSTONE)
        i = (i + 1) & (table_cap - 1);
    if (table[i].addr == 0)
        table_used++;
    table[i] = *sample;
    table[i].addr = addr;
    table[i].size = size;
    table_live++;
    live_bytes_add((int64_t)size);
    if (sample->usable != 0) {
        standin_bytes += size;
        if (standin_bytes > standin_peak)
            standin_peak = standin_bytes;
    }
    return true;
}

/* A new mapping of len bytes is backed by transparent huge pages, where
 * the kernel allows them: from 2 MiB on, unless they are off (HAKMEM_THP=0,
 * the lean profile).  Such a mapping starts at a multiple of 2 MiB, and a
 * cached one that grows keeps it (hk_os_remap_aligned): moved elsewhere,
 * its huge pages would be split.  A program that writes its large buffers
 * takes a fault per 2 MiB instead of per 4 KiB (bench large, 64 KiB-32 MiB
 * blocks, every page written, AMD EPYC: 116,000 faults -> 17,000, 90 -> 370
 * ops/s, peak RSS 180 -> 160 MiB); one that touches a few bytes of a huge
 * block holds up to 2 MiB of it. */
static bool huge_pages(size_t len)
{
    return len >= HK_OS_HUGE_PAGE && hk_config.thp_from != 0;
}

/* [p, p + have) resized to len bytes, its pages moved if need be; NULL if
 * the kernel refused.  A range carved last from a chunk grows into the
 * chunk's rest. */
static void *resize(void *p, size_t have, size_t len)
{
    if (len > have && hk_huge_chunk_extend((uintptr_t)p, have, len))
        return p;
    if (len > have && huge_pages(len) && ((uintptr_t)p & (HK_OS_HUGE_PAGE - 1)) == 0)
        return hk_os_remap_aligned(p, have, len, HK_OS_HUGE_PAGE);
    return hk_os_remap(p, have, len);
}

static void *huge_alloc(size_t size, size_t align, bool zero, const struct huge_entry *sample)
{
    if (size > PTRDIFF_MAX - align) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = (size + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    if (len == 0)
        len = HK_OS_PAGE; /* malloc(0) with a large alignment still owns memory */
    if (align < HK_OS_PAGE)
        align = HK_OS_PAGE;
    hk_init();
    hk_purge_poll();
    /* A range from a chunk faults in by 2 MiB where a cached range grown
     * with mremap would fault its new part by 4 KiB (from its last huge
     * page's edge): when nothing cached fits, the cached range that ends
     * where the chunk's rest begins grows into it in place (only the
     * growth is new memory), or, if none ends there, the largest cached
     * range is given back for a carved one, which the program's RSS sees
     * as growth. */
    bool carve = align == HK_OS_PAGE && hk_huge_chunk_serves(len);
    enum hk_take mode = align != HK_OS_PAGE ? HK_TAKE_FIT : carve ? HK_TAKE_RENEW : HK_TAKE_GROW;
    size_t have;
    uintptr_t addr = hk_huge_cache_take(&len, align, mode, &have);
    if (addr != 0 && have < len) {
        /* A renew's range grows into the chunk's rest, unless another
         * thread carved there first: then the block is carved. */
        void *grown = !carve ? resize((void *)addr, have, len)
                      : hk_huge_chunk_extend(addr, have, len) ? (void *)addr : NULL;
        /* mremap refuses a range that spans mappings (the cache merged
         * neighbours that the kernel keeps apart): its pages stay cached,
         * where a smaller block can use them, and this one is mapped anew. */
        if (grown == NULL)
            hk_huge_cache_put(addr, have);
        addr = (uintptr_t)grown;
    }
    if (addr != 0) {
        hk_lock(&huge_lock);
        bool ok = insert(addr, len, sample);
        hk_unlock(&huge_lock);
        if (!ok) {
            hk_huge_cache_put(addr, len);
            errno = ENOMEM;
            return NULL;
        }
#ifdef HK_SECURE
        /* What the range's freed blocks held (hk_secure_huge_freed), zero
         * or not. */
        (void)zero;
        hk_secure_clear((void *)addr, have < len ? have : len);
#else
        if (zero)
            memset((void *)addr, 0, size);
#endif
        return (void *)addr;
    }

    void *p = carve ? (void *)hk_huge_chunk_carve(len) : NULL;
    bool thp = p == NULL && huge_pages(len); /* a chunk is advised already */
    if (thp && align < HK_OS_HUGE_PAGE)
        align = HK_OS_HUGE_PAGE;
    if (p == NULL)
        p = hk_os_map_aligned(len, align, &len);
    if (p == NULL) {
        hk_release_all_memory();
        p = hk_os_map_aligned(len, align, &len);
    }
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (thp)
        hk_os_huge_pages(p, len, true);
    hk_lock(&huge_lock);
    bool ok = insert((uintptr_t)p, len, sample);
    hk_unlock(&huge_lock);
    if (!ok) {
        hk_os_unmap(p, len);
        errno = ENOMEM;
        return NULL;
    }
    hk_stat_add(&hk_os_stats.huge_allocs, 1);
    return p; /* fresh anonymous memory is already zero */
}

void *hk_huge_alloc(size_t size, size_t align, bool zero)
{
    struct huge_entry sample = {0};
    void *p = NULL;
    if (HK_UNLIKELY(hk_heap_sampling) && size <= PTRDIFF_MAX - align) {
        unsigned what = hk_heap_sample_huge(size, &sample.site);
        sample.sampled = size;
        if (what & HK_SAMPLE_GUARD)
            p = hk_guard_alloc(size, align, zero, sample.site, size);
        if (p != NULL)
            return p;
    }
    p = huge_alloc(size, align, zero, &sample);
    if (p == NULL && sample.site != 0)
        hk_heap_sample_freed(sample.site, size);
    return p;
}

/* The newest spare of len bytes or more, but not twice as many, starting
 * at a multiple of align, taken out (the newest is the likeliest to fit, a
 * stand-in of the same class, and to be in the cache); its addr is 0 if
 * there is none.  Lock held. */
static struct spare take_spare(size_t len, size_t align)
{
    for (unsigned i = nspares; i-- > 0;) {
        struct spare s = spares[i];
        if (s.len >= len && s.len / 2 < len && (s.addr & (align - 1)) == 0) {
            spare_bytes -= s.len;
            nspares--;
            memmove(&spares[i], &spares[i + 1], (nspares - i) * sizeof spares[i]);
            return s;
        }
    }
    return (struct spare){0, 0};
}

/* Keep a freed stand-in's range, the oldest spares making room, or not:
 * those that go, into out (for the cache, once the lock is released);
 * their number.  Lock held. */
static unsigned keep_spare(uintptr_t addr, size_t len, struct spare out[SPARES_OUT])
{
    if (spare_bytes + len > SPARE_BYTES) {
        uint64_t now = hk_clock_ms();
        if (now - peak_from > hk_config.huge_cache_ms) {
            standin_peak_before = standin_peak;
            standin_peak = standin_bytes;
            peak_from = now;
        }
    }
    size_t most = standin_peak > standin_peak_before ? standin_peak : standin_peak_before;
    if (most < SPARE_BYTES)
        most = SPARE_BYTES;
    unsigned n = 0;
    while (nspares > 0 && n < SPARES_OUT - 1 && (nspares == SPARES || spare_bytes + len > most)) {
        out[n++] = spares[0];
        spare_bytes -= spares[0].len;
        memmove(&spares[0], &spares[1], --nspares * sizeof spares[0]);
    }
    if (nspares == SPARES || spare_bytes + len > most) {
        out[n++] = (struct spare){addr, len};
        return n;
    }
    spares[nspares++] = (struct spare){addr, len};
    spare_bytes += len;
    return n;
}

void hk_huge_spares_release(void)
{
    for (;;) {
        struct spare out[SPARES_OUT];
        hk_lock(&huge_lock);
        unsigned n = nspares < SPARES_OUT ? nspares : SPARES_OUT;
        nspares -= n;
        memcpy(out, &spares[nspares], n * sizeof *out);
        for (unsigned i = 0; i < n; i++)
            spare_bytes -= out[i].len;
        hk_unlock(&huge_lock);
        if (n == 0)
            return;
        for (unsigned i = 0; i < n; i++)
            hk_huge_cache_put(out[i].addr, out[i].len);
    }
}

size_t hk_huge_spares_held(uint64_t *ranges)
{
    hk_lock(&huge_lock);
    *ranges = nspares;
    size_t bytes = spare_bytes;
    hk_unlock(&huge_lock);
    return bytes;
}

void *hk_huge_alloc_sampled(size_t usable, size_t align, uint32_t site)
{
    struct huge_entry sample = {.sampled = usable, .site = site, .usable = (uint32_t)usable};
    size_t len = (usable + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    hk_lock(&huge_lock);
    struct spare sp = take_spare(len, align);
    bool ok = sp.addr != 0 && insert(sp.addr, sp.len, &sample);
    hk_unlock(&huge_lock);
    if (ok)
        return (void *)sp.addr;
    if (sp.addr != 0) {
        hk_huge_cache_put(sp.addr, sp.len);
        return NULL;
    }
    return huge_alloc(usable, align, false, &sample);
}

static bool take_entry(uintptr_t addr, struct huge_entry *taken)
{
    struct huge_entry *e = lookup(addr);
    if (e == NULL)
        return false;
    *taken = *e;
    e->addr = TOMBSTONE;
    table_live--;
    live_bytes_add(-(int64_t)e->size);
    if (e->usable != 0)
        standin_bytes -= e->size;
    return true;
}

bool hk_huge_free(void *p)
{
    uintptr_t addr = (uintptr_t)p;
    if (addr & (HK_OS_PAGE - 1))
        return false;
    struct huge_entry e;
    struct spare out[SPARES_OUT];
    unsigned nout = 0;
    hk_lock(&huge_lock);
    bool found = take_entry(addr, &e);
    bool spare = found && e.usable != 0; /* a stand-in (not in the hardened build) */
    if (spare)
        nout = keep_spare(addr, e.size, out);
    hk_unlock(&huge_lock);
    if (!found)
        return false;
    if (e.site != 0)
        hk_heap_sample_freed(e.site, e.sampled);
    for (unsigned i = 0; i < nout; i++)
        hk_huge_cache_put(out[i].addr, out[i].len);
    if (spare)
        return true;
#ifdef HK_SECURE
    hk_secure_huge_freed(p, e.size);
#endif
    hk_huge_cache_put(addr, e.size);
    hk_purge_schedule(NULL, 0, false);
    return true;
}

size_t hk_huge_usable_size(const void *p)
{
    uintptr_t addr = (uintptr_t)p;
    if (addr & (HK_OS_PAGE - 1))
        return 0;
    hk_lock(&huge_lock);
    struct huge_entry *e = lookup(addr);
    size_t size = e == NULL ? 0 : e->usable != 0 ? e->usable : e->size;
    hk_unlock(&huge_lock);
    return size;
}

/* While the heap profiler samples, a resize is a free and a malloc to it:
 * the old block's sample is let go and the new size counted (and recorded
 * if it holds a point), and the kernel still moves the pages: a buffer
 * grown by realloc is not copied at every step (perl's 60,000 lines joined
 * copied 143 MB, 1.26x its unprofiled time).  NULL, and realloc copies,
 * for a stand-in of a size class or a block this registry does not hold
 * (a guarded one). */
static HK_NOINLINE void *huge_realloc_sampled(void *p, size_t size, size_t len)
{
    struct huge_entry e;
    hk_lock(&huge_lock);
    const struct huge_entry *found = lookup((uintptr_t)p);
    bool movable = found != NULL && found->usable == 0 && take_entry((uintptr_t)p, &e);
    hk_unlock(&huge_lock);
    if (!movable)
        return NULL;
    struct huge_entry grown = {.sampled = size};
    unsigned what = hk_heap_sample_huge(size, &grown.site);
    bool guarded = what & HK_SAMPLE_GUARD;
    void *q = guarded ? hk_guard_alloc(size, HK_OS_PAGE, false, grown.site, size)
                      : resize(p, e.size, len);
    bool remapped = q != NULL && !guarded;
    if (q == NULL) {
        if (grown.site != 0)
            hk_heap_sample_freed(grown.site, size);
        errno = ENOMEM;
    }
    /* The entry back: the remapped block's, or p's as it was (a guarded
     * copy then frees p as any huge block, letting its sample go). */
    hk_lock(&huge_lock);
    bool ok = remapped ? insert((uintptr_t)q, len, &grown) : insert((uintptr_t)p, e.size, &e);
    hk_unlock(&huge_lock);
    if (!ok)
        hk_fatal("cannot grow the huge block registry");
    if (remapped && e.site != 0)
        hk_heap_sample_freed(e.site, e.sampled);
    if (guarded && q != NULL) {
        memcpy(q, p, size < e.size ? size : e.size);
        hak_free(p);
    }
    return q;
}

/* Resize a huge block to another huge size; the kernel moves the pages. */
void *hk_huge_realloc(void *p, size_t size)
{
    if (size > PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = (size + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    if (HK_UNLIKELY(hk_heap_sampling))
        return huge_realloc_sampled(p, size, len);
    struct huge_entry e;
    hk_lock(&huge_lock);
    bool found = take_entry((uintptr_t)p, &e);
    hk_unlock(&huge_lock);
    if (!found)
        hk_invalid_pointer("realloc", p);
    void *q = resize(p, e.size, len);
    if (q == NULL)
        len = e.size;
    hk_lock(&huge_lock);
    bool ok = insert((uintptr_t)(q ? q : p), len, &e); /* not sampled */
    hk_unlock(&huge_lock);
    if (!ok)
        hk_fatal("cannot grow the huge block registry");
    if (q == NULL)
        errno = ENOMEM;
    return q;
}

#ifdef HK_SECURE
/* The size of the live huge block that p lies inside (not at its start),
 * or 0: a walk of the registry, for a pointer free could not find. */
size_t hk_huge_inside(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    size_t size = 0;
    hk_lock(&huge_lock);
    for (size_t i = 0; i < table_cap; i++)
        if (table[i].addr > TOMBSTONE && u > table[i].addr && u - table[i].addr < table[i].size)
            size = table[i].size;
    hk_unlock(&huge_lock);
    return size;
}
#endif

/* The live huge blocks and the bytes of their mappings, read together
 * for the statistics (a walk of the registry: cold). */
uint64_t hk_huge_count(uint64_t *bytes)
{
    uint64_t n = 0, sum = 0;
    hk_lock(&huge_lock);
    for (size_t i = 0; i < table_cap; i++) {
        if (table[i].addr > TOMBSTONE) {
            n++;
            sum += table[i].size;
        }
    }
    hk_unlock(&huge_lock);
    *bytes = sum;
    return n;
}

void hk_huge_lock_all(void)
{
    hk_lock(&huge_lock);
    hk_huge_cache_lock();
    hk_huge_chunk_lock();
}

void hk_huge_unlock_all(void)
{
    hk_huge_chunk_unlock();
    hk_huge_cache_unlock();
    hk_unlock(&huge_lock);
}

void hk_huge_reset_locks(void)
{
    hk_lock_reset(&huge_lock);
    hk_huge_cache_reset_lock();
    hk_huge_chunk_reset_lock();
}
