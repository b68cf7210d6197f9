/*
 * Arenas: 4 GiB of address space each, aligned to 4 GiB, owned by one heap.
 * An arena hands out pages of its three regions and takes them back; free
 * pages keep their memory for a while (the dirty list, newest first) and are
 * then purged (the clean map): how, here; when and how many, purge.c.  The
 * region state is guarded by the heap's
 * pool lock, which only the owner's slow paths and the purger take; other
 * threads read only what hk_block_home needs (hwm, atomically, and the
 * class map).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "block_home.h"
#include "internal.h"
#include "stats.h"

_Atomic(struct hk_arena *) hk_arena_table[HK_ARENA_TABLE_SIZE];

#define COMMIT_CHUNK ((uintptr_t)4 << 20)

static const uint32_t region_pages[HK_NKINDS] = {
    HK_SMALL_REGION_PAGES, HK_MEDIUM_REGION_PAGES, HK_LARGE_REGION_PAGES,
};

/* A compact arena (below) has smaller regions, 256 MiB each, so that its
 * header with the heap and the region maps fits in one OS page: under an
 * address-space limit every thread's heap costs that page. */
static const uint32_t compact_region_pages[HK_NKINDS] = {
    (256u << 20) >> HK_SMALL_PAGE_SHIFT,
    (256u << 20) >> HK_MEDIUM_PAGE_SHIFT,
    (256u << 20) >> HK_LARGE_PAGE_SHIFT,
};

static uintptr_t page_addr(const struct hk_arena *a, unsigned kind, uint32_t index)
{
    return a->base + hk_region_offset(kind) + ((uintptr_t)index << hk_page_shift(kind));
}

static uint32_t map_words(uint32_t npages)
{
    return (npages + 63) / 64;
}

/* When the address space is limited (RLIMIT_AS, ulimit -v) so that a whole
 * arena cannot be reserved, the arena is compact: the same layout in a
 * free 4 GiB slot, with only what is in use mapped (reserved address space
 * counts against the limit even untouched): the header, and each region's
 * pages below its high-water mark, mapped one page at a time as the mark
 * rises and unmapped as it falls back (region_shrink).  Slots are taken
 * 1 TiB below where the kernel places mappings now, so that the kernel,
 * which places them downwards from there, does not fill the rest of the
 * slot before the arena grows into it; a region that meets a mapping of
 * someone else's stops growing there. */
#define COMPACT_GAP_SLOTS 256 /* 1 TiB */

static char *compact_slot(size_t header_bytes)
{
    char *probe = hk_os_map(HK_OS_PAGE);
    if (probe == NULL)
        return NULL;
    hk_os_unmap(probe, HK_OS_PAGE);
    uintptr_t slot = (uintptr_t)probe >> HK_ARENA_SHIFT;
    slot = slot > 2 * COMPACT_GAP_SLOTS ? slot - COMPACT_GAP_SLOTS : slot - 1;
    /* Slots of hakmem's own arenas are skipped without a system call. */
    for (unsigned tries = 0; tries < 64 && slot > 1; slot--) {
        if (atomic_load_explicit(&hk_arena_table[slot], memory_order_relaxed) != NULL)
            continue;
        char *base = (char *)(slot << HK_ARENA_SHIFT);
        if (hk_os_map_at(base, header_bytes))
            return base;
        tries++;
    }
    return NULL;
}

/* Bytes of page 0 that hold the arena header, `extra` bytes for the caller
 * and the region maps. */
/* The class map (block_home.h) has a byte per page of each region,
 * the small region's first: a free from another thread finds the block's
 * class there, in bytes that sit side by side, where its page header would
 * cost a cache miss (the headers are 64 KiB apart, so they all compete for
 * the same few sets of every cache).  Compact arenas have none: their
 * header must stay one OS page. */
static uint32_t class_map_bytes(void)
{
    return region_pages[HK_SMALL] + region_pages[HK_MEDIUM] + region_pages[HK_LARGE];
}

/* A full-size arena's class map begins at HK_CLASS_MAP_OFFSET (block_home.h),
 * past room for the header, a heap and the maps in any arena. */
_Static_assert(HK_CLASS_MAP_OFFSET + HK_SMALL_REGION_PAGES + HK_MEDIUM_REGION_PAGES +
                       HK_LARGE_REGION_PAGES <= ((size_t)1 << HK_SMALL_PAGE_SHIFT),
               "the class map ends in page 0");

static size_t header_size(size_t extra, const uint32_t *npages, bool compact)
{
    size_t bytes = sizeof(struct hk_arena) + ((extra + 63) & ~(size_t)63);
    for (unsigned k = 0; k < HK_NKINDS; k++)
        bytes += map_words(npages[k]) * sizeof(uint64_t);
    if (!compact) {
        HK_ASSERT(bytes <= HK_CLASS_MAP_OFFSET);
        bytes = HK_CLASS_MAP_OFFSET + class_map_bytes();
    }
    return (bytes + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
}

/* Reserve a new arena for heap.  Its page 0 holds the arena header, the
 * region maps, and `extra` bytes for the caller (the heap itself). */
struct hk_arena *hk_arena_create(struct hk_heap *heap, size_t extra)
{
    size_t header_bytes = header_size(extra, compact_region_pages, true);
    /* A heap's compact arena costs one OS page beside what its classes use:
     * a struct hk_heap grown past it (64 size classes did) cost 256 threads
     * under a 64 MiB address-space limit 1 MiB, as api/address_limit saw. */
    HK_ASSERT(header_bytes == HK_OS_PAGE);
    if (header_size(extra, region_pages, false) > ((size_t)1 << HK_SMALL_PAGE_SHIFT))
        hk_fatal("arena header does not fit in page 0");
    bool compact = false;
    uint64_t reserved = HK_ARENA_SIZE, committed = COMMIT_CHUNK;
    /* Under strict overcommit accounting every committed byte is charged:
     * there, too, only what is in use is mapped. */
    char *base = hk_os_strict_overcommit() ? NULL
                                           : hk_os_reserve_aligned(HK_ARENA_SIZE, HK_ARENA_SIZE);
    if (base != NULL && !hk_os_commit(base, COMMIT_CHUNK)) {
        hk_os_unmap(base, HK_ARENA_SIZE);
        base = NULL;
    }
    if (base == NULL) {
        base = compact_slot(header_bytes);
        compact = true;
        reserved = committed = header_bytes;
    }
    if (base == NULL)
        return NULL;
    uintptr_t slot = (uintptr_t)base >> HK_ARENA_SHIFT;
    if (slot >= HK_ARENA_TABLE_SIZE) {
        hk_os_unmap(base, compact ? header_bytes : HK_ARENA_SIZE);
        return NULL;
    }
    hk_stat_add(&hk_os_stats.reserved_bytes, reserved);
    hk_stat_add(&hk_os_stats.committed_bytes, committed);
    struct hk_arena *a = (struct hk_arena *)base;
    a->heap = heap;
    a->base = (uintptr_t)base;
    a->compact = compact;
    a->header_bytes = (uint32_t)header_bytes;
    uint64_t *maps = (uint64_t *)(base + sizeof(*a) + ((extra + 63) & ~(size_t)63));
    for (unsigned k = 0; k < HK_NKINDS; k++) {
        struct hk_region *r = &a->region[k];
        r->npages = compact ? compact_region_pages[k] : region_pages[k];
        r->first = k == HK_SMALL ? 1 : 0; /* small page 0 is this header */
        atomic_init(&r->hwm, r->first);
        r->committed = k == HK_SMALL && !compact ? (uint32_t)(COMMIT_CHUNK >> HK_SMALL_PAGE_SHIFT) : 0;
        r->cleanmap = maps;
        maps += map_words(r->npages);
    }
    /* The class map is zero, as a fresh mapping is: every page free. */
    hk_stat_add(&hk_os_stats.arenas, 1);
    atomic_store_explicit(&hk_arena_table[slot], a, memory_order_release);
    if (!compact)
        hk_lists_register((uintptr_t)base);
    return a;
}

/* Map [addr, addr + size) of a compact arena, where nothing may be yet. */
static bool compact_map(void *addr, size_t size)
{
    if (!hk_os_map_at(addr, size))
        return false;
    hk_stat_add(&hk_os_stats.reserved_bytes, size);
    hk_stat_add(&hk_os_stats.committed_bytes, size);
    return true;
}

/* Unmap [addr, addr + size) of a compact arena, all of it mapped by the
 * arena.  Never more: someone else's mapping may lie in a hole of a page. */
static void compact_unmap(void *addr, size_t size)
{
    hk_os_unmap(addr, size);
    hk_stat_add(&hk_os_stats.reserved_bytes, -(uint64_t)size);
    hk_stat_add(&hk_os_stats.committed_bytes, -(uint64_t)size);
}

static struct hk_arena *arena_of_page(const struct hk_page *pg)
{
    return (struct hk_arena *)((uintptr_t)pg & ~(HK_ARENA_SIZE - 1));
}

/* A page of a compact arena maps its blocks as they are needed, so that a
 * class with few blocks out costs little address space: its header's OS
 * page (the first of a small page, the last of the others) is always
 * mapped, and the page is mapped from its base up to pg->mapped bytes
 * (for a small page, at least its header's OS page). */
static size_t page_bytes(unsigned kind)
{
    return (size_t)1 << hk_page_shift(kind);
}

/* The base of pg, a page of `kind`: unlike hk_page_base, it does not read
 * the header, which a free page may have purged to zero. */
static char *page_base(const struct hk_page *pg, unsigned kind)
{
    return (char *)((uintptr_t)pg & ~(page_bytes(kind) - 1));
}

/* The index of pg, a page of `kind`, in its region of a. */
static uint32_t page_index(const struct hk_arena *a, const struct hk_page *pg, unsigned kind)
{
    uintptr_t offset = (uintptr_t)page_base(pg, kind) - a->base - hk_region_offset(kind);
    return (uint32_t)(offset >> hk_page_shift(kind));
}

/* pg's byte in its arena's class map, if the arena has one. */
static void set_page_class(const struct hk_arena *a, const struct hk_page *pg, uint8_t cls)
{
    if (!a->compact)
        hk_class_map(a->base)[hk_class_map_index(pg->kind, page_index(a, pg, pg->kind))] = cls;
}

static char *header_os_page(char *base, unsigned kind)
{
    return kind == HK_SMALL ? base : base + page_bytes(kind) - HK_OS_PAGE;
}

/* How far from the base pg is mapped, and how far it can be. */
static size_t mapped_end(const struct hk_page *pg, unsigned kind)
{
    return kind == HK_SMALL && pg->mapped < HK_OS_PAGE ? HK_OS_PAGE : pg->mapped;
}

static size_t mappable_end(unsigned kind)
{
    return kind == HK_SMALL ? page_bytes(kind) : page_bytes(kind) - HK_OS_PAGE;
}

/* Map pg, a page of `kind` (its header may not say yet), up to `want` bytes
 * from its base; false if nothing more could be mapped. */
static bool compact_map_blocks(struct hk_page *pg, unsigned kind, size_t want)
{
    size_t have = mapped_end(pg, kind);
    want = (want + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    if (want > mappable_end(kind))
        want = mappable_end(kind);
    if (want <= have)
        return false;
    char *base = page_base(pg, kind);
    if (!compact_map(base + have, want - have))
        return false;
    pg->mapped = (uint32_t)want;
    return true;
}

/* Blocks of pg that can be used: all `capacity` of its class, or in a
 * compact arena those in its mapped bytes (the last blocks of a medium or
 * large page may lie in its header's OS page). */
unsigned hk_arena_page_capacity(const struct hk_page *pg, unsigned capacity)
{
    if (!arena_of_page(pg)->compact)
        return capacity;
    size_t end = mapped_end(pg, pg->kind);
    if (end >= mappable_end(pg->kind))
        return capacity;
    size_t n = end > pg->first_block ? (end - pg->first_block) / pg->block_size : 0;
    return n < capacity ? (unsigned)n : capacity;
}

/* A page of a compact arena in use has no block left: map more of it,
 * twice as much up to 256 KiB at a time, or else one block (called by its
 * owner; what is mapped and not used is lost to the limit).  False if it
 * cannot grow. */
#define EXTEND_MAX ((size_t)256 << 10)

bool hk_arena_page_extend(struct hk_page *pg)
{
    if (!arena_of_page(pg)->compact)
        return false;
    size_t end = mapped_end(pg, pg->kind);
    size_t step = end < EXTEND_MAX ? end : EXTEND_MAX;
    if (step < pg->block_size)
        step = pg->block_size;
    if (!compact_map_blocks(pg, pg->kind, end + step) &&
        !compact_map_blocks(pg, pg->kind, end + pg->block_size))
        return false;
    unsigned capacity = hk_arena_page_capacity(pg, hk_classes[pg->cls].capacity);
    if (capacity <= pg->capacity)
        return false;
    if (pg->kind == HK_SMALL)
        pg->unbumped = (uint16_t)(pg->unbumped + capacity - pg->capacity);
    pg->capacity = (uint16_t)capacity;
    return true;
}

/* Give back a free page of a compact arena: all but its header's OS page is
 * unmapped, and that page is emptied (it reads as zero: a free page). */
static void compact_purge(struct hk_page *pg, unsigned kind)
{
    char *base = page_base(pg, kind);
    char *rest = kind == HK_SMALL ? base + HK_OS_PAGE : base;
    char *end = base + mapped_end(pg, kind);
    if (end > rest)
        compact_unmap(rest, (size_t)(end - rest));
    hk_os_purge(header_os_page(base, kind), HK_OS_PAGE);
}

/* Make page hwm of a region usable: commit it (by 4 MiB chunks), or in a
 * compact arena map it.  False when the region is full, address space
 * or memory ran out, or (compact) someone else's mapping is in the way,
 * where the region then ends. */
/* Where a small region's huge pages begin, from its arena's base: the first
 * chunk region_grow commits once the region holds thp_from bytes, never the
 * first chunk (a small program stays small); UINTPTR_MAX when off.  Past
 * it the heap is dense and large enough that TLB misses cost more than
 * rounding its memory up to huge pages, at most 2 MiB (hk_region_purge
 * keeps them from breaking up twice). */
static uintptr_t thp_offset(void)
{
    uintptr_t from = hk_config.thp_from;
    if (from == 0 || from > HK_ARENA_SIZE)
        return UINTPTR_MAX;
    from = (from + COMMIT_CHUNK - 1) & ~(COMMIT_CHUNK - 1);
    return from > COMMIT_CHUNK ? from : COMMIT_CHUNK;
}

static bool region_grow(struct hk_arena *a, unsigned kind)
{
    struct hk_region *r = &a->region[kind];
    uint32_t hwm = atomic_load_explicit(&r->hwm, memory_order_relaxed);
    if (hwm >= r->npages)
        return false;
    if (a->compact) {
        /* Its header's OS page; the blocks as needed (compact_map_blocks). */
        if (!compact_map(header_os_page((char *)page_addr(a, kind, hwm), kind), HK_OS_PAGE)) {
            if (errno == EEXIST)
                r->npages = hwm;
            return false;
        }
        return true;
    }
    if (hwm == r->committed) {
        uint32_t chunk = (uint32_t)(COMMIT_CHUNK >> hk_page_shift(kind));
        if (chunk == 0)
            chunk = 1;
        uintptr_t start = page_addr(a, kind, r->committed);
        size_t bytes = (uintptr_t)chunk << hk_page_shift(kind);
        if (!hk_os_commit((void *)start, bytes))
            return false;
        if (kind == HK_SMALL && start - a->base >= thp_offset())
            hk_os_huge_pages((void *)start, bytes, true);
        r->committed += chunk;
        hk_stat_add(&hk_os_stats.committed_bytes, bytes);
    }
    return true;
}

/* Pages [from, to) of a region of compact arena a are purged: only their
 * headers' OS pages are mapped; unmap them. */
static void unmap_header_pages(struct hk_arena *a, unsigned kind, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++)
        compact_unmap(header_os_page((char *)page_addr(a, kind, i), kind), HK_OS_PAGE);
}

/* A compact arena gives back the address space of the purged pages at the
 * top of a region: the high-water mark comes down over them first (a
 * thread validating a stale pointer reads it before the page), then they
 * are unmapped.  Called with the pool lock held. */
static void region_shrink(struct hk_arena *a, unsigned kind)
{
    struct hk_region *r = &a->region[kind];
    uint32_t hwm = atomic_load_explicit(&r->hwm, memory_order_relaxed);
    uint32_t top = hwm;
    while (top > r->first && hk_region_page_clean(r, top - 1)) {
        top--;
        r->cleanmap[top / 64] &= ~((uint64_t)1 << (top % 64));
    }
    if (top == hwm)
        return;
    atomic_store_explicit(&r->hwm, top, memory_order_release);
    unmap_header_pages(a, kind, top, hwm);
}

/* A dirty page is best taken back by the class that last used it: each
 * class touches its own OS pages of a page (its blocks' first and last
 * bytes, its carve frontier), so a page passed between classes ends up with
 * the union of what each touched.  How far down the dirty list to look. */
#define DIRTY_SCAN 16

/* `fresh`: the page holds no memory yet (purged, or never used), so taking
 * it grows the heap's resident memory. */
static struct hk_page *take_free_page(struct hk_arena *a, unsigned kind, unsigned cls, bool *fresh)
{
    *fresh = false;
    struct hk_region *r = &a->region[kind];
    unsigned shift = hk_page_shift(kind);
    struct hk_page *pg = r->dirty;
    unsigned looked = 0;
    for (struct hk_page *q = pg; q != NULL && looked < DIRTY_SCAN; q = q->next, looked++) {
        if (q->cls == cls) {
            pg = q;
            break;
        }
    }
    if (pg != NULL) {
        if (pg->prev != NULL)
            pg->prev->next = pg->next;
        else
            r->dirty = pg->next;
        if (pg->next != NULL)
            pg->next->prev = pg->prev;
        else
            r->dirty_tail = pg->prev;
        r->ndirty--;
        return pg;
    }
    for (uint32_t w = r->clean_hint; w < map_words(r->npages); w++) {
        if (r->cleanmap[w] != 0) {
            unsigned bit = (unsigned)__builtin_ctzll(r->cleanmap[w]);
            r->cleanmap[w] &= r->cleanmap[w] - 1;
            r->clean_hint = w;
            hk_purge_note_refault(a->heap);
            *fresh = true;
            return hk_page_header(page_addr(a, kind, w * 64 + bit), shift);
        }
    }
    r->clean_hint = map_words(r->npages);
    if (!region_grow(a, kind))
        return NULL;
    uint32_t index = atomic_load_explicit(&r->hwm, memory_order_relaxed);
    /* Other threads read hwm in hk_block_home, without a lock. */
    atomic_store_explicit(&r->hwm, index + 1, memory_order_release);
    *fresh = true;
    return hk_page_header(page_addr(a, kind, index), shift);
}

/* A free page goes to the head of its region's dirty list.  Called with
 * the pool lock held. */
static void dirty_push(struct hk_region *r, struct hk_page *pg)
{
    pg->prev = NULL;
    pg->next = r->dirty;
    if (r->dirty != NULL)
        r->dirty->prev = pg;
    else
        r->dirty_tail = pg;
    r->dirty = pg;
    r->ndirty++;
}

/* Memory the free pages of a region still hold, for the statistics: what
 * purging them would give back.  In a compact arena, what each maps (its
 * blocks from the base, and a medium or large page's header page); in the
 * others, whole pages.  Called with the pool lock held. */
uint64_t hk_region_dirty_bytes(const struct hk_arena *a, unsigned kind)
{
    const struct hk_region *r = &a->region[kind];
    if (!a->compact)
        return (uint64_t)r->ndirty << hk_page_shift(kind);
    uint64_t bytes = 0;
    for (const struct hk_page *pg = r->dirty; pg != NULL; pg = pg->next)
        bytes += mapped_end(pg, kind) + (kind == HK_SMALL ? 0 : HK_OS_PAGE);
    return bytes;
}

static struct hk_page *region_take(struct hk_arena *a, unsigned kind, unsigned cls, bool *fresh)
{
    struct hk_page *pg = take_free_page(a, kind, cls, fresh);
    if (pg == NULL)
        return NULL;
    /* A compact arena's page needs at least one block of the class mapped
     * (a medium or large one 16 KiB, so that it does not grow at once). */
    const struct hk_class *k = &hk_classes[cls];
    size_t need = (size_t)k->first_block + k->block_size;
    size_t want = kind == HK_SMALL || need > (16u << 10) ? need : 16u << 10;
    if (a->compact && mapped_end(pg, kind) < want && !compact_map_blocks(pg, kind, want) &&
        mapped_end(pg, kind) < need) {
        pg->freed_at = hk_clock_ms();
        dirty_push(&a->region[kind], pg);
        return NULL;
    }
    a->pages_in_use++;
    return pg;
}

/* A page for class cls of heap h: a dirty free page first (its memory is
 * warm; one this class used before if there is one near the head), then a
 * purged one, then new address space; a new arena when every arena of the
 * heap is full. */
struct hk_page *hk_arena_page_alloc(struct hk_heap *h, unsigned cls)
{
    unsigned kind = hk_classes[cls].kind;
    struct hk_page *pg = NULL;
    struct hk_arena *last = NULL;
    bool fresh = false;
    pthread_mutex_lock(&h->pool_lock);
    for (struct hk_arena *a = h->arenas; a != NULL && pg == NULL; a = a->next) {
        pg = region_take(a, kind, cls, &fresh);
        last = a;
    }
    if (pg == NULL) {
        struct hk_arena *a = hk_arena_create(h, 0);
        if (a != NULL) {
            last->next = a;
            pg = region_take(a, kind, cls, &fresh);
        }
    }
    if (pg != NULL && fresh)
        hk_purge_for_growth(h, kind);
    pthread_mutex_unlock(&h->pool_lock);
    return pg;
}

/* Take back a page that holds no block; it keeps its memory for the purge
 * delay, in case the heap needs a page again soon.  True when its region
 * now holds more free pages than an owner keeps. */
bool hk_arena_page_free(struct hk_page *pg, uint64_t now)
{
    struct hk_arena *a = arena_of_page(pg);
    struct hk_region *r = &a->region[pg->kind];
    struct hk_heap *h = a->heap;
    pg->state = HK_PAGE_FREE;
    pg->block_size = 0;
    set_page_class(a, pg, 0);
    pg->freed_at = now;
    pthread_mutex_lock(&h->pool_lock);
    HK_ASSERT(a->pages_in_use > 0);
    a->pages_in_use--;
    dirty_push(r, pg);
    if (atomic_load_explicit(&h->purge_at, memory_order_relaxed) == 0)
        atomic_store_explicit(&h->purge_at, pg->freed_at + h->purge_delay, memory_order_relaxed);
    bool over_keep = r->ndirty > (a == h->arenas ? hk_purge_owner_keep(h, pg->kind) : 0);
    pthread_mutex_unlock(&h->pool_lock);
    return over_keep;
}

static void sort_pages(struct hk_page **pages, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        struct hk_page *x = pages[i];
        size_t j = i;
        for (; j > 0 && pages[j - 1] > x; j--)
            pages[j] = pages[j - 1];
        pages[j] = x;
    }
}

/* Small pages [start, start + bytes) of a were purged.  Those past
 * thp_offset were on huge pages, which the purge broke up: the huge pages
 * around them are not made again, so that a heap that breathes pays for the
 * split once, and khugepaged does not fill the purged pages back in. */
static void thp_off(const struct hk_arena *a, uintptr_t start, size_t bytes)
{
    uintptr_t offset = thp_offset();
    if (offset == UINTPTR_MAX)
        return;
    uintptr_t huge_start = a->base + offset;
    uintptr_t end = start + bytes;
    if (end <= huge_start)
        return;
    start = start & ~(HK_OS_HUGE_PAGE - 1);
    if (start < huge_start)
        start = huge_start;
    end = (end + HK_OS_HUGE_PAGE - 1) & ~(HK_OS_HUGE_PAGE - 1);
    hk_os_huge_pages((void *)start, end - start, false);
}

#define PURGE_BATCH 256

/* Give back the memory of region r's free pages retired at or before
 * `cutoff`, and of the oldest ones beyond the newest `keep`, in address
 * order so that neighbours go back in one call.  Called with the pool lock held; drops it around the system calls
 * (the pages being purged are on no list meanwhile).  Returns bytes purged. */
size_t hk_region_purge(struct hk_heap *h, struct hk_arena *a, unsigned kind,
                       uint64_t cutoff, uint32_t keep)
{
    struct hk_region *r = &a->region[kind];
    unsigned shift = hk_page_shift(kind);
    size_t page_size = (size_t)1 << shift;
    size_t purged = 0;
    struct hk_page *batch[PURGE_BATCH];
    for (;;) {
        size_t n = 0;
        while (n < PURGE_BATCH && r->dirty_tail != NULL &&
               (r->dirty_tail->freed_at <= cutoff || r->ndirty > keep)) {
            struct hk_page *pg = r->dirty_tail;
            r->dirty_tail = pg->prev;
            if (r->dirty_tail != NULL)
                r->dirty_tail->next = NULL;
            else
                r->dirty = NULL;
            r->ndirty--;
            batch[n++] = pg;
        }
        if (n == 0)
            return purged;
        h->purges_in_flight++;
        pthread_mutex_unlock(&h->pool_lock);
        sort_pages(batch, n);
        for (size_t i = 0; a->compact && i < n; i++)
            compact_purge(batch[i], kind);
        for (size_t i = 0; !a->compact && i < n;) {
            size_t j = i + 1;
            while (j < n && (char *)batch[j] - (char *)batch[j - 1] == (ptrdiff_t)page_size)
                j++;
            hk_os_purge(page_base(batch[i], kind), (j - i) * page_size);
            if (kind == HK_SMALL)
                thp_off(a, (uintptr_t)page_base(batch[i], kind), (j - i) * page_size);
            i = j;
        }
        pthread_mutex_lock(&h->pool_lock);
        h->purges_in_flight--;
        for (size_t i = 0; i < n; i++) {
            uint32_t index = page_index(a, batch[i], kind);
            r->cleanmap[index / 64] |= (uint64_t)1 << (index % 64);
            if (index / 64 < r->clean_hint)
                r->clean_hint = index / 64;
        }
        if (a->compact)
            region_shrink(a, kind);
        purged += n * page_size;
    }
}

static bool arena_is_empty(const struct hk_arena *a)
{
    if (a->pages_in_use != 0)
        return false;
    for (unsigned kind = 0; kind < HK_NKINDS; kind++)
        if (a->region[kind].ndirty != 0)
            return false;
    return true;
}

/* Give an arena's address space back.  A thread validating a stale pointer
 * into it (a double or invalid free) reads the table and then the region's
 * hwm: the hwm goes first, so that such a check finds no page, and only a
 * check already past it can still touch the memory as it goes. */
static void arena_unmap(struct hk_arena *a)
{
    uintptr_t base = a->base;
    bool compact = a->compact;
    uint32_t hwm[HK_NKINDS];
    uint64_t committed = 0;
    for (unsigned k = 0; k < HK_NKINDS; k++) {
        struct hk_region *r = &a->region[k];
        hwm[k] = atomic_load_explicit(&r->hwm, memory_order_relaxed);
        atomic_store_explicit(&r->hwm, r->first, memory_order_release);
        committed += (uint64_t)r->committed << hk_page_shift(k);
    }
    atomic_store_explicit(&hk_arena_table[base >> HK_ARENA_SHIFT], NULL, memory_order_release);
    if (!compact)
        hk_lists_unregister(base);
    uint64_t reserved = HK_ARENA_SIZE;
    if (compact) {
        /* An empty arena's pages are all purged (and usually gone already,
         * region_shrink), then page 0. */
        for (unsigned k = 0; k < HK_NKINDS; k++)
            unmap_header_pages(a, k, a->region[k].first, hwm[k]);
        reserved = committed = a->header_bytes;
        hk_os_unmap((void *)base, a->header_bytes);
    } else {
        hk_os_unmap((void *)base, HK_ARENA_SIZE);
    }
    hk_stat_add(&hk_os_stats.arenas, (uint64_t)-1);
    hk_stat_add(&hk_os_stats.reserved_bytes, -reserved);
    hk_stat_add(&hk_os_stats.committed_bytes, -committed);
}

/* Unmap heap h's arenas that hold no page in use and no page with memory,
 * all but its first, which holds the heap.  Called with the pool lock held
 * and no purge in flight (a purge in flight writes into its arena). */
void hk_arena_release_empty(struct hk_heap *h)
{
    struct hk_arena **link = &h->arenas->next;
    while (*link != NULL) {
        struct hk_arena *a = *link;
        if (arena_is_empty(a)) {
            *link = a->next;
            arena_unmap(a);
        } else {
            link = &a->next;
        }
    }
}

/* Set up pg, a page of its arena taken for class cls: its class map byte
 * (written after the header, which the owner has set up). */
void hk_arena_page_in_use(struct hk_page *pg, unsigned cls)
{
    set_page_class(arena_of_page(pg), pg, (uint8_t)cls);
}

bool hk_block_home(const void *p, struct hk_block_home *home)
{
    return hk_find_block_home(p, home);
}
