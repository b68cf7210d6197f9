/*
 * The cache of huge mappings: address ranges freed by huge blocks, their
 * memory still resident, kept for a while so that the next huge allocation
 * costs neither a system call nor page faults.  A range larger than asked
 * for is split (the rest stays cached), neighbouring ranges are merged, and
 * the whole is bounded in bytes (oldest out first) and in time (the purger
 * or the next huge call unmaps what waited longer than huge_cache_ms).  The
 * byte bound may grow with the bytes in live huge blocks (the profile's
 * huge_cache_live_pct: a program that works with 100 MiB buffers gains from
 * keeping one more than one that uses 1 MiB; 0 in the balanced profile,
 * ARCHITECTURE says why).
 */
#include <pthread.h>

#include "internal.h"
#include "stats.h"

struct range {
    uintptr_t addr; /* 0: slot unused */
    size_t size;
    uint64_t freed_at;
};

#define SLOTS 32
#define MIN_SPLIT ((size_t)64 << 10) /* smaller rests go with the block */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct range cache[SLOTS];
static size_t cache_bytes;

/* Without a purger nothing empties the cache while the program idles
 * (purge.c), so its fixed part is smaller: it starts at idle_keep and
 * doubles, up to huge_cache_bytes, when a huge allocation misses soon after
 * the cache gave up a range for room (the program's huge demand breathes);
 * ten calm seconds halve it back.  Guarded by cache_lock. */
static size_t owner_keep;
static uint64_t last_eviction, last_growth;

/* Ranges to unmap once the lock is released. */
struct victims {
    size_t n;
    struct range r[SLOTS + 1];
};

static void drop(struct range *c, struct victims *v)
{
    v->r[v->n++] = *c;
    cache_bytes -= c->size;
    c->addr = 0;
}

/* Returns the bytes unmapped.  `emptied`: they were the last cached: the
 * program's huge demand fell, and the huge page a chunk's rest shares with
 * its last block goes back too. */
static size_t unmap_victims(const struct victims *v, bool emptied)
{
    size_t bytes = 0;
    for (size_t i = 0; i < v->n; i++) {
        hk_os_unmap((void *)v->r[i].addr, v->r[i].size);
        bytes += v->r[i].size;
    }
    if (emptied && v->n != 0)
        hk_huge_chunk_trim();
    return bytes;
}

static void expire(uint64_t now, bool all, struct victims *v)
{
    for (int i = 0; i < SLOTS; i++)
        if (cache[i].addr != 0 && (all || cache[i].freed_at + hk_config.huge_cache_ms <= now))
            drop(&cache[i], v);
}

static size_t fixed_part(void)
{
    if (hk_purger_running())
        return hk_config.huge_cache_bytes;
    size_t keep = owner_keep > hk_config.idle_keep ? owner_keep : hk_config.idle_keep;
    return keep < hk_config.huge_cache_bytes ? keep : hk_config.huge_cache_bytes;
}

static size_t bound(void)
{
    uint64_t live = atomic_load_explicit(&hk_os_stats.huge_live_bytes, memory_order_relaxed);
    return fixed_part() + live / 100 * hk_config.huge_cache_live_pct;
}

/* A huge allocation found nothing that fits: if the cache had to give up a
 * range shortly before, the owner's fixed part was too small. */
static void note_miss(uint64_t now)
{
    if (now - last_eviction < HK_REFAULT_WINDOW_MS) {
        size_t keep = owner_keep > hk_config.idle_keep ? owner_keep : hk_config.idle_keep;
        owner_keep = keep <= hk_config.huge_cache_bytes / 2 ? keep * 2 : hk_config.huge_cache_bytes;
        last_growth = now;
        last_eviction = 0;
    } else if (now - last_growth > HK_CALM_MS && owner_keep > hk_config.idle_keep) {
        owner_keep /= 2;
        last_growth = now;
    }
}

/* The cached range starting at a multiple of align that ends where the
 * chunk's uncarved rest begins, or NULL.  Asked on a renew's miss only, so
 * that a hit takes no chunk lock.  Lock held. */
static struct range *range_at_rest(size_t align)
{
    uintptr_t chunk, rest = hk_huge_chunk_rest(&chunk); /* 0: no chunk */
    for (int i = 0; i < SLOTS; i++) {
        struct range *c = &cache[i];
        if (c->addr != 0 && (c->addr & (align - 1)) == 0 && c->addr >= chunk &&
            c->addr + c->size == rest)
            return c;
    }
    return NULL;
}

/* A cached range for a block of *len bytes starting at a multiple of align,
 * or 0.  The best fit is split (a rest too small to keep grows *len).  When
 * no range is large enough: HK_TAKE_GROW returns the largest one with its
 * size in *have < *len, for the caller to grow with mremap (its pages stay
 * resident, only the new part is faulted in); HK_TAKE_RENEW returns the
 * range that ends where the chunk's uncarved rest begins, for the caller to
 * grow into the rest in place, or, if no range ends there, gives the
 * largest back to the OS, for the caller to carve the block anew (RSS then
 * grows as by HK_TAKE_GROW); HK_TAKE_FIT leaves the cache as it is. */
uintptr_t hk_huge_cache_take(size_t *len, size_t align, enum hk_take mode, size_t *have)
{
    struct victims v;
    v.n = 0; /* only n: the ranges are written as they come */
    uintptr_t addr = 0;
    uint64_t now = hk_clock_ms();
    pthread_mutex_lock(&cache_lock);
    expire(now, false, &v);
    struct range *best = NULL, *largest = NULL;
    for (int i = 0; i < SLOTS; i++) {
        struct range *c = &cache[i];
        if (c->addr == 0 || (c->addr & (align - 1)) != 0)
            continue;
        if (c->size >= *len && (best == NULL || c->size < best->size))
            best = c;
        if (largest == NULL || c->size > largest->size)
            largest = c;
    }
    struct range *grown = best != NULL ? NULL
                        : mode == HK_TAKE_GROW ? largest
                        : mode == HK_TAKE_RENEW ? range_at_rest(align) : NULL;
#ifdef HK_SECURE
    if (best != NULL || grown != NULL)
        hk_secure_huge_taken((void *)(best ? best : grown)->addr, (best ? best : grown)->size);
#endif
    if (best != NULL) {
        addr = best->addr;
        if (best->size - *len >= MIN_SPLIT) {
            best->addr += *len;
            best->size -= *len;
            cache_bytes -= *len;
#ifdef HK_SECURE
            hk_secure_huge_freed((void *)best->addr, best->size);
#endif
        } else {
            *len = best->size;
            cache_bytes -= best->size;
            best->addr = 0;
        }
        *have = *len;
    } else if (grown != NULL) {
        addr = grown->addr;
        *have = grown->size;
        cache_bytes -= grown->size;
        grown->addr = 0;
    }
    if (best == NULL)
        note_miss(now);
    /* Not an eviction for note_miss: counted as one, the owner's part
     * grows to huge_cache_bytes (bench large: peak RSS +14%, 0.88 the
     * speed; large-5m 1.21 the speed). */
    if (best == NULL && grown == NULL && largest != NULL && mode == HK_TAKE_RENEW)
        drop(largest, &v);
    pthread_mutex_unlock(&cache_lock);
    hk_stat_add(&hk_os_stats.purged_bytes, unmap_victims(&v, false));
    if (addr != 0)
        hk_stat_add(&hk_os_stats.huge_cache_hits, 1);
    return addr;
}

static struct range *oldest_range(void)
{
    struct range *oldest = NULL;
    for (int i = 0; i < SLOTS; i++)
        if (cache[i].addr != 0 && (oldest == NULL || cache[i].freed_at < oldest->freed_at))
            oldest = &cache[i];
    return oldest;
}

static struct range *unused_slot(void)
{
    for (int i = 0; i < SLOTS; i++)
        if (cache[i].addr == 0)
            return &cache[i];
    return NULL;
}

/* Keep the freed range [addr, addr + len) or, over the bound, unmap it. */
void hk_huge_cache_put(uintptr_t addr, size_t len)
{
    struct victims v;
    v.n = 0;
    uint64_t now = hk_clock_ms();
    pthread_mutex_lock(&cache_lock);
    size_t limit = bound();
    expire(now, false, &v);
    /* Merge with cached neighbours: one range, one later unmap. */
    for (int i = 0; i < SLOTS; i++) {
        struct range *c = &cache[i];
        if (c->addr != 0 && (c->addr + c->size == addr || addr + len == c->addr)) {
            addr = c->addr < addr ? c->addr : addr;
            len += c->size;
            cache_bytes -= c->size;
            c->addr = 0;
        }
    }
    if (len > limit) {
        v.r[v.n++] = (struct range){addr, len, now};
        last_eviction = now;
    } else {
        /* Make room: the oldest ranges go first. */
        while (cache_bytes + len > limit || unused_slot() == NULL) {
            drop(oldest_range(), &v);
            last_eviction = now;
        }
        *unused_slot() = (struct range){addr, len, now};
        cache_bytes += len;
    }
    bool emptied = cache_bytes == 0;
    pthread_mutex_unlock(&cache_lock);
    unmap_victims(&v, emptied);
}

#ifdef HK_SECURE
/* The size of the huge block freed at p if p starts one in a cached range
 * (its tag, hk_secure_huge_freed, is still there), else 0.  The lock
 * keeps the range mapped while it is read. */
size_t hk_huge_cache_freed(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    size_t size = 0;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < SLOTS; i++) {
        const struct range *c = &cache[i];
        if (c->addr != 0 && u >= c->addr && u - c->addr < c->size && (u & (HK_OS_PAGE - 1)) == 0) {
            const uintptr_t *w = p;
            if (w[0] <= c->addr + c->size - u && w[1] == hk_secure_seal(p, w[0]))
                size = w[0];
        }
    }
    pthread_mutex_unlock(&cache_lock);
    return size;
}
#endif

size_t hk_huge_cache_purge(bool all)
{
    struct victims v;
    v.n = 0;
    hk_huge_spares_release(); /* to the cache, where they expire */
    if (all) /* the profiler's free sample slots (8 MiB kept otherwise) */
        hk_heap_sample_slots_release();
    pthread_mutex_lock(&cache_lock);
    expire(hk_clock_ms(), all, &v);
    bool emptied = cache_bytes == 0;
    pthread_mutex_unlock(&cache_lock);
    size_t bytes = unmap_victims(&v, emptied && !all);
    if (all) /* whether or not anything was cached */
        hk_huge_chunk_trim();
    hk_stat_add(&hk_os_stats.purged_bytes, bytes);
    return bytes;
}

/* The bound shrinks when the purger stops (purge.c): the oldest ranges go
 * until the cache is within it again. */
void hk_huge_cache_shrink(void)
{
    struct victims v;
    v.n = 0;
    pthread_mutex_lock(&cache_lock);
    size_t limit = bound();
    while (cache_bytes > limit)
        drop(oldest_range(), &v);
    bool emptied = cache_bytes == 0;
    pthread_mutex_unlock(&cache_lock);
    hk_stat_add(&hk_os_stats.purged_bytes, unmap_victims(&v, emptied));
}

bool hk_huge_cache_pending(void)
{
    pthread_mutex_lock(&cache_lock);
    bool pending = cache_bytes != 0;
    pthread_mutex_unlock(&cache_lock);
    return pending;
}

/* The bytes the cache holds, and in how many ranges: for the statistics. */
size_t hk_huge_cache_held(uint64_t *ranges)
{
    uint64_t n = 0;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < SLOTS; i++)
        n += cache[i].addr != 0;
    size_t bytes = cache_bytes;
    pthread_mutex_unlock(&cache_lock);
    *ranges = n;
    return bytes;
}

void hk_huge_cache_lock(void)
{
    pthread_mutex_lock(&cache_lock);
}

void hk_huge_cache_unlock(void)
{
    pthread_mutex_unlock(&cache_lock);
}

void hk_huge_cache_reset_lock(void)
{
    pthread_mutex_init(&cache_lock, NULL);
}
