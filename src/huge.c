/*
 * Huge blocks (above 512 KiB, or aligned beyond what a size class gives):
 * each has its own mapping.  A registry (an open-addressing hash table)
 * knows every huge block, so free can tell a huge block from a foreign
 * pointer; a small cache of freed mappings, bounded in bytes and in time,
 * spares repeated allocations of similar sizes a system call pair each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "stats.h"

struct huge_entry {
    uintptr_t addr; /* 0: empty slot, TOMBSTONE: deleted */
    size_t size;    /* length of the mapping */
};
#define TOMBSTONE ((uintptr_t)1)

static pthread_mutex_t huge_lock = PTHREAD_MUTEX_INITIALIZER;
static struct huge_entry *table;
static size_t table_cap; /* a power of two */
static size_t table_used; /* live entries and tombstones */

struct cached_map {
    uintptr_t addr;
    size_t size;
    uint64_t freed_at;
};
#define CACHE_SLOTS 16
static struct cached_map cache[CACHE_SLOTS];
static size_t cache_bytes;

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

static bool table_grow(void)
{
    size_t cap = table_cap ? table_cap * 2 : 1024;
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

static bool insert(uintptr_t addr, size_t size)
{
    if ((table_used + 1) * 2 > table_cap && !table_grow())
        return false;
    size_t i = slot_of(addr);
    while (table[i].addr > TOMBSTONE)
        i = (i + 1) & (table_cap - 1);
    if (table[i].addr == 0)
        table_used++;
    table[i].addr = addr;
    table[i].size = size;
    hk_stat_add(&hk_os_stats.huge_live_bytes, size);
    return true;
}

/* Unmap cached mappings older than the cache delay (all when `all`); the
 * caller holds huge_lock and unmaps the returned list afterwards. */
static size_t cache_expire(bool all, struct cached_map *out)
{
    uint64_t now = hk_clock_ms();
    size_t n = 0;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        struct cached_map *c = &cache[i];
        if (c->addr != 0 && (all || c->freed_at + hk_config.huge_cache_ms <= now)) {
            out[n++] = *c;
            cache_bytes -= c->size;
            c->addr = 0;
        }
    }
    return n;
}

static void unmap_all(const struct cached_map *maps, size_t n)
{
    for (size_t i = 0; i < n; i++)
        hk_os_unmap((void *)maps[i].addr, maps[i].size);
}

/* The best cached mapping for `size` bytes: not more than a quarter larger. */
static struct cached_map *cache_find(size_t size, size_t align)
{
    struct cached_map *best = NULL;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        struct cached_map *c = &cache[i];
        if (c->addr == 0 || c->size < size || c->size - size > size / 4)
            continue;
        if ((c->addr & (align - 1)) != 0)
            continue;
        if (best == NULL || c->size < best->size)
            best = c;
    }
    return best;
}

void *hk_huge_alloc(size_t size, size_t align, bool zero)
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
    struct cached_map expired[CACHE_SLOTS];
    pthread_mutex_lock(&huge_lock);
    size_t nexpired = cache_expire(false, expired);
    struct cached_map *c = cache_find(len, align);
    uintptr_t addr = 0;
    if (c != NULL) {
        addr = c->addr;
        len = c->size;
        cache_bytes -= c->size;
        c->addr = 0;
        if (!insert(addr, len)) {
            pthread_mutex_unlock(&huge_lock);
            hk_os_unmap((void *)addr, len);
            errno = ENOMEM;
            return NULL;
        }
        hk_stat_add(&hk_os_stats.huge_cache_hits, 1);
    }
    pthread_mutex_unlock(&huge_lock);
    unmap_all(expired, nexpired);
    if (addr != 0) {
        if (zero)
            memset((void *)addr, 0, size);
        return (void *)addr;
    }

    void *p = hk_os_map_aligned(len, align, &len);
    if (p == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&huge_lock);
    bool ok = insert((uintptr_t)p, len);
    pthread_mutex_unlock(&huge_lock);
    if (!ok) {
        hk_os_unmap(p, len);
        errno = ENOMEM;
        return NULL;
    }
    hk_stat_add(&hk_os_stats.huge_allocs, 1);
    return p; /* fresh anonymous memory is already zero */
}

static bool take_entry(uintptr_t addr, size_t *size)
{
    struct huge_entry *e = lookup(addr);
    if (e == NULL)
        return false;
    *size = e->size;
    e->addr = TOMBSTONE;
    atomic_fetch_sub_explicit(&hk_os_stats.huge_live_bytes, e->size, memory_order_relaxed);
    return true;
}

bool hk_huge_free(void *p)
{
    uintptr_t addr = (uintptr_t)p;
    if (addr & (HK_OS_PAGE - 1))
        return false;
    struct cached_map expired[CACHE_SLOTS];
    size_t size;
    pthread_mutex_lock(&huge_lock);
    if (!take_entry(addr, &size)) {
        pthread_mutex_unlock(&huge_lock);
        return false;
    }
    size_t nexpired = cache_expire(false, expired);
    bool cached = false;
    if (cache_bytes + size <= hk_config.huge_cache_bytes) {
        for (int i = 0; i < CACHE_SLOTS && !cached; i++) {
            if (cache[i].addr == 0) {
                cache[i] = (struct cached_map){addr, size, hk_clock_ms()};
                cache_bytes += size;
                cached = true;
            }
        }
    }
    pthread_mutex_unlock(&huge_lock);
    unmap_all(expired, nexpired);
    if (!cached)
        hk_os_unmap(p, size);
    else
        hk_purge_schedule(NULL, 0);
    return true;
}

size_t hk_huge_usable_size(const void *p)
{
    uintptr_t addr = (uintptr_t)p;
    if (addr & (HK_OS_PAGE - 1))
        return 0;
    pthread_mutex_lock(&huge_lock);
    struct huge_entry *e = lookup(addr);
    size_t size = e ? e->size : 0;
    pthread_mutex_unlock(&huge_lock);
    return size;
}

/* Resize a huge block to another huge size; the kernel moves the pages. */
void *hk_huge_realloc(void *p, size_t size)
{
    if (size > PTRDIFF_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = (size + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    size_t old;
    pthread_mutex_lock(&huge_lock);
    bool found = take_entry((uintptr_t)p, &old);
    pthread_mutex_unlock(&huge_lock);
    if (!found)
        hk_invalid_pointer("realloc", p);
    hk_stat_syscall();
    void *q = mremap(p, old, len, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
        q = NULL;
        len = old;
    }
    pthread_mutex_lock(&huge_lock);
    bool ok = insert((uintptr_t)(q ? q : p), len);
    pthread_mutex_unlock(&huge_lock);
    if (!ok)
        hk_fatal("cannot grow the huge block registry");
    if (q == NULL)
        errno = ENOMEM;
    return q;
}

size_t hk_huge_cache_purge(bool all)
{
    struct cached_map expired[CACHE_SLOTS];
    pthread_mutex_lock(&huge_lock);
    size_t n = cache_expire(all, expired);
    pthread_mutex_unlock(&huge_lock);
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += expired[i].size;
    unmap_all(expired, n);
    return bytes;
}

bool hk_huge_cache_pending(void)
{
    pthread_mutex_lock(&huge_lock);
    bool pending = cache_bytes != 0;
    pthread_mutex_unlock(&huge_lock);
    return pending;
}

void hk_huge_lock_all(void)
{
    pthread_mutex_lock(&huge_lock);
}

void hk_huge_unlock_all(void)
{
    pthread_mutex_unlock(&huge_lock);
}

void hk_huge_reset_locks(void)
{
    pthread_mutex_init(&huge_lock, NULL);
}
