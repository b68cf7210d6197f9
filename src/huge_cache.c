/*
 * The cache of huge mappings: address ranges freed by huge blocks, their
 * memory still resident, kept for a while so that the next huge allocation
 * costs neither a system call nor page faults.  A range larger than asked
 * for is split (the rest stays cached), neighbouring ranges are merged, and
 * the whole is bounded in bytes (oldest out first) and in time (the purger
 * or the next huge call unmaps what waited longer than huge_cache_ms).  The
 * byte bound grows with the bytes in live huge blocks: a program that works
 * with 100 MiB buffers gains from keeping one more than one that uses 1 MiB.
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

static void unmap_victims(const struct victims *v)
{
    for (size_t i = 0; i < v->n; i++)
        hk_os_unmap((void *)v->r[i].addr, v->r[i].size);
}

static void expire(uint64_t now, bool all, struct victims *v)
{
    for (int i = 0; i < SLOTS; i++)
        if (cache[i].addr != 0 && (all || cache[i].freed_at + hk_config.huge_cache_ms <= now))
            drop(&cache[i], v);
}

/* A cached range for a block of *len bytes starting at a multiple of align,
 * or 0.  The best fit is split (a rest too small to keep grows *len); when
 * no range is large enough, the largest one is returned with its size in
 * *have < *len, for the caller to grow with mremap: its pages stay resident
 * and only the new part is faulted in. */
uintptr_t hk_huge_cache_take(size_t *len, size_t align, size_t *have)
{
    struct victims v = {0};
    uintptr_t addr = 0;
    pthread_mutex_lock(&cache_lock);
    expire(hk_clock_ms(), false, &v);
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
    if (best != NULL) {
        addr = best->addr;
        if (best->size - *len >= MIN_SPLIT) {
            best->addr += *len;
            best->size -= *len;
            cache_bytes -= *len;
        } else {
            *len = best->size;
            cache_bytes -= best->size;
            best->addr = 0;
        }
        *have = *len;
    } else if (largest != NULL && align <= HK_OS_PAGE) {
        addr = largest->addr;
        *have = largest->size;
        cache_bytes -= largest->size;
        largest->addr = 0;
    }
    pthread_mutex_unlock(&cache_lock);
    unmap_victims(&v);
    if (addr != 0)
        hk_stat_add(&hk_os_stats.huge_cache_hits, 1);
    return addr;
}

static size_t bound(void)
{
    uint64_t live = atomic_load_explicit(&hk_os_stats.huge_live_bytes, memory_order_relaxed);
    return hk_config.huge_cache_bytes + live / 100 * hk_config.huge_cache_live_pct;
}

/* Keep the freed range [addr, addr + len) or, over the bound, unmap it. */
void hk_huge_cache_put(uintptr_t addr, size_t len)
{
    struct victims v = {0};
    size_t limit = bound();
    uint64_t now = hk_clock_ms();
    pthread_mutex_lock(&cache_lock);
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
    } else {
        /* Make room: the oldest ranges go first. */
        for (;;) {
            struct range *oldest = NULL, *free_slot = NULL;
            for (int i = 0; i < SLOTS; i++) {
                struct range *c = &cache[i];
                if (c->addr == 0)
                    free_slot = c;
                else if (oldest == NULL || c->freed_at < oldest->freed_at)
                    oldest = c;
            }
            if (free_slot != NULL && cache_bytes + len <= limit) {
                *free_slot = (struct range){addr, len, now};
                cache_bytes += len;
                break;
            }
            drop(oldest, &v);
        }
    }
    pthread_mutex_unlock(&cache_lock);
    unmap_victims(&v);
}

size_t hk_huge_cache_purge(bool all)
{
    struct victims v = {0};
    pthread_mutex_lock(&cache_lock);
    expire(hk_clock_ms(), all, &v);
    pthread_mutex_unlock(&cache_lock);
    unmap_victims(&v);
    size_t bytes = 0;
    for (size_t i = 0; i < v.n; i++)
        bytes += v.r[i].size;
    hk_stat_add(&hk_os_stats.purged_bytes, bytes);
    return bytes;
}

bool hk_huge_cache_pending(void)
{
    pthread_mutex_lock(&cache_lock);
    bool pending = cache_bytes != 0;
    pthread_mutex_unlock(&cache_lock);
    return pending;
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
