/*
 * Where a pointer's block lives: its page, the page's owner and its class,
 * or that it is no block an arena handed out (foreign, interior,
 * misaligned, in a free page).  Outside compact arenas it reads no page
 * header: the arena's class map says the class, and the class where its
 * blocks start.  Inline, so that a free of another thread's block
 * (hk_free_slow) makes no call and keeps no frame for it; elsewhere
 * hk_block_home (arena.c) is the same, out of line.
 */
#ifndef HAKMEM_BLOCK_HOME_H
#define HAKMEM_BLOCK_HOME_H

#include "internal.h"

/* Pages in each region of a full-size arena (arena.c lays them out). */
#define HK_SMALL_REGION_PAGES ((2u << 30) >> HK_SMALL_PAGE_SHIFT)
#define HK_MEDIUM_REGION_PAGES ((1u << 30) >> HK_MEDIUM_PAGE_SHIFT)
#define HK_LARGE_REGION_PAGES ((1u << 30) >> HK_LARGE_PAGE_SHIFT)

/* Where a full-size arena's class map lies from its base: past the arena
 * header, room for a heap and the region maps, whether the arena holds a
 * heap or not, so that a free finds it from the block's address alone and
 * its load need not wait for the arena header's (server, where most frees
 * are of other threads' blocks: 1.003 to 1.12 as fast in four paired runs). */
#define HK_REGION_MAPS_BYTES                                                              \
    ((((HK_SMALL_REGION_PAGES + 63) / 64) + ((HK_MEDIUM_REGION_PAGES + 63) / 64) +         \
      ((HK_LARGE_REGION_PAGES + 63) / 64)) * sizeof(uint64_t))
#define HK_CLASS_MAP_OFFSET                                                               \
    ((sizeof(struct hk_arena) + ((sizeof(struct hk_heap) + 63) & ~(size_t)63) +          \
      HK_REGION_MAPS_BYTES + 63) & ~(size_t)63)

/* The class map of the full-size arena at arena_base: the class of each
 * page's blocks, a byte per page of each region (0: free), so that a free
 * from another thread validates the block without reading its page header
 * (arena.c writes it).  Compact arenas have none. */
static inline uint8_t *hk_class_map(uintptr_t arena_base)
{
    return (uint8_t *)arena_base + HK_CLASS_MAP_OFFSET;
}

/* A page's byte in its arena's class map: the regions' maps side by side. */
static inline uint32_t hk_class_map_index(unsigned kind, uint32_t index)
{
    return (kind > HK_SMALL ? HK_SMALL_REGION_PAGES : 0) +
           (kind > HK_MEDIUM ? HK_MEDIUM_REGION_PAGES : 0) + index;
}

/* Is p, at `in_page` bytes from the base of a page of class cls (or of the
 * class its header names), the start of one of its `capacity` blocks?  A p
 * below the first block (a small page's header) wraps around to a huge
 * offset, which no block has. */
static inline bool hk_block_start(uint64_t in_page, uint32_t first_block, uint32_t size,
                                  uint32_t div_magic, uint32_t capacity)
{
    uint64_t offset = in_page - first_block;
    uint64_t block = (offset * div_magic) >> 32;
    return block * size == offset && block < capacity;
}

/* p's home, if p is a block: `shift` and the region are those of the arena
 * offset `off` of p. */
static inline bool hk_region_block_home(struct hk_arena *a, uintptr_t p, uintptr_t off,
                                        unsigned kind, unsigned shift,
                                        struct hk_block_home *home)
{
    const struct hk_region *r = &a->region[kind];
    uint32_t index = (uint32_t)((off - hk_region_offset(kind)) >> shift);
    uintptr_t base = p & ~(((uintptr_t)1 << shift) - 1);
    struct hk_page *pg = hk_page_header(base, shift);
    unsigned cls;
    if (HK_LIKELY(!a->compact)) {
        /* Page 0 and pages never handed out have 0 there, as free ones.
         * The map's address comes from p's, not from the arena's. */
        cls = hk_class_map(p & ~(uintptr_t)(HK_ARENA_SIZE - 1))[hk_class_map_index(kind, index)];
        const struct hk_class *k = &hk_classes[cls];
        if (cls == 0 || /* a free page */
            !hk_block_start(p - base, k->first_block, k->block_size, k->div_magic, k->capacity))
            return false;
    } else {
        /* A compact arena: the page's capacity is what it maps, and only
         * pages handed out have their header mapped. */
        uint32_t hwm = atomic_load_explicit(&r->hwm, memory_order_acquire);
        if (index - r->first >= hwm - r->first || /* page 0, or never handed out */
            pg->block_size == 0 ||
            !hk_block_start(p - base, pg->first_block, pg->block_size, pg->div_magic,
                            pg->capacity))
            return false;
        cls = pg->cls;
    }
    home->page = pg;
    home->heap = a->heap; /* an arena's pages are its heap's */
    home->cls = cls;
    return true;
}

static inline bool hk_find_block_home(const void *ptr, struct hk_block_home *home)
{
    uintptr_t p = (uintptr_t)ptr;
    struct hk_arena *a = hk_arena_of(p);
    if (a == NULL || (p & 15) != 0)
        return false;
    uintptr_t off = p & (HK_ARENA_SIZE - 1);
    /* Written out per region, so that each case works with constants. */
    if (HK_LIKELY(off < hk_region_offset(HK_MEDIUM)))
        return hk_region_block_home(a, p, off, HK_SMALL, HK_SMALL_PAGE_SHIFT, home);
    if (off < hk_region_offset(HK_LARGE))
        return hk_region_block_home(a, p, off, HK_MEDIUM, HK_MEDIUM_PAGE_SHIFT, home);
    return hk_region_block_home(a, p, off, HK_LARGE, HK_LARGE_PAGE_SHIFT, home);
}

#endif
