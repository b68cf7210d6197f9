/*
 * hakmem internals: the data structures every part of the allocator shares.
 *
 * Memory comes in arenas: 4 GiB regions of address space, aligned to 4 GiB,
 * each owned by one heap.  An arena is cut into three regions of pages:
 *
 *   [0, 2G)   small pages,  64 KiB each, blocks of 16 B .. 4 KiB
 *   [2G, 3G)  medium pages, 256 KiB each, blocks of 5 KiB .. 16 KiB
 *   [3G, 4G)  large pages,  4 MiB each, blocks of 20 KiB .. 512 KiB
 *
 * Page 0 of the small region holds the arena header (and, in a heap's first
 * arena, the heap itself).  A page's 128-byte header is found by masking a
 * block's address: a small page keeps it in its first bytes, its blocks
 * after it from the block size's natural alignment (up to 4 KiB); a medium
 * or large page keeps it in its last bytes, its blocks from its base.  Either
 * way a block of a size that is a multiple of A is aligned to A.  Blocks
 * above 512 KiB get their own mapping (huge.c).  See docs/ARCHITECTURE.md
 * for the whole picture.
 */
#ifndef HAKMEM_INTERNAL_H
#define HAKMEM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Everything declared here is internal to the library. */
#pragma GCC visibility push(hidden)

#define HK_LIKELY(x) __builtin_expect(!!(x), 1)
#define HK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HK_COLD __attribute__((noinline, cold))
#define HK_NOINLINE __attribute__((noinline))
/* malloc and free start a cache line: where they fall otherwise moves with
 * every change elsewhere in the library, and their timing with it. */
#define HK_HOT __attribute__((aligned(64)))
#define HK_API __attribute__((visibility("default")))

/* Exported alias of an internal function, unless built as the hak_*-only API
 * library (used by the sanitizer and fuzz builds, which must not replace the
 * C library's malloc). */
#ifdef HAKMEM_NO_OVERRIDE
#define HK_ALIAS(name, target)
#else
#define HK_ALIAS(name, target) \
    extern __typeof__(target) name __attribute__((alias(#target), visibility("default")));
#endif

/* ---- geometry ---------------------------------------------------------- */

#define HK_ARENA_SHIFT 32
#define HK_ARENA_SIZE ((uintptr_t)1 << HK_ARENA_SHIFT)
#define HK_ARENA_TABLE_SIZE ((size_t)1 << (47 - HK_ARENA_SHIFT))

enum hk_kind { HK_SMALL = 0, HK_MEDIUM = 1, HK_LARGE = 2, HK_NKINDS = 3 };

#define HK_SMALL_PAGE_SHIFT 16
#define HK_MEDIUM_PAGE_SHIFT 18
#define HK_LARGE_PAGE_SHIFT 22
#define HK_SMALL_REGION_SHIFT 31 /* the small region is the arena's lower half */
#define HK_MEDIUM_REGION_OFFSET ((uintptr_t)2 << 30)
#define HK_LARGE_REGION_OFFSET ((uintptr_t)3 << 30)

#define HK_PAGE_HEADER_SIZE 128
#define HK_SMALL_MAX 4096
#define HK_MEDIUM_MAX (16 * 1024)
#define HK_LARGE_MAX (512 * 1024)
#define HK_FAST_MAX 4096 /* malloc's inline path covers sizes up to this */
#define HK_FAST_INDEXES (HK_FAST_MAX / 16 + 1) /* (size + 15) >> 4, for these */

/* Size classes: 1..8 in 16-byte steps up to 128 B, then four per doubling up
 * to 512 KiB (5/4, 3/2, 7/4 and 2 times the doubling's base), and in the
 * doublings from 1 KiB to 8 KiB a fifth first, 9/8 of the base (size_class.c
 * says why); 0 is never used (size 0 is served by class 1). */
#define HK_NINTH_FIRST_BITS 10 /* the doublings above 2^10 .. 2^13 have a 9/8 class */
#define HK_NINTH_LAST_BITS 13
#define HK_NCLASSES (57 + HK_NINTH_LAST_BITS - HK_NINTH_FIRST_BITS + 1)

#define HK_OS_PAGE 4096
#define HK_CACHE_LINE 64
#define HK_BITMAP_WORDS 4 /* a medium or large page has at most 255 blocks */

/* Span pages (span_page.c): blocks of the classes of HK_SPAN_MIN and up
 * share large pages of a class of their own, the span class (after the
 * size classes), whose blocks are HK_SPAN_SLICE-byte slices: a block is a
 * run of them. */
#define HK_SPAN_CLASS HK_NCLASSES
#define HK_PAGE_CLASSES (HK_NCLASSES + 1) /* the classes a page can have */
#define HK_SPAN_SLICE_SHIFT 14
#define HK_SPAN_SLICE ((size_t)1 << HK_SPAN_SLICE_SHIFT)
#define HK_SPAN_MIN ((size_t)64 << 10)
#define HK_SPAN_CLASSES 16 /* at least the classes from HK_SPAN_MIN up */

/* ---- start-up and errors (init.c, error.c) ------------------------------- */

void hk_init(void);
__attribute__((noreturn)) void hk_invalid_pointer(const char *call, const void *p);
__attribute__((noreturn)) void hk_fatal(const char *msg);
void hk_warn(const char *msg);
/* A line for stderr, built without malloc or stdio (which may be what just
 * failed, or not be allowed: in a signal handler); cut if too long. */
struct hk_line {
    size_t len;
    char buf[512];
};
void hk_line_str(struct hk_line *l, const char *s);
void hk_line_hex(struct hk_line *l, uintptr_t x); /* 0x... */
void hk_line_dec(struct hk_line *l, uint64_t x);
void hk_line_write(struct hk_line *l); /* and empty it */
/* "hakmem: <what>: <call>(0x...) <size>", then abort. */
__attribute__((noreturn)) void hk_report(const char *what, const char *call, const void *p,
                                         size_t size);

/* ---- invariant checks (check.c): the debug build only ------------------- */

/* `make debug` (and the sanitizer and fuzz builds) define HK_DEBUG: then
 * HK_ASSERT checks its condition and HK_CHECK_PAGE checks a page's state
 * against its counters and lists, and either reports and aborts.  In the
 * release build both compile to nothing. */
struct hk_page;
#ifdef HK_DEBUG
__attribute__((noreturn)) void hk_assert_failed(const char *what, const char *file, int line);
void hk_page_check(const struct hk_page *pg, const char *file, int line);
void hk_list_check_push(unsigned cls, const void *p, const char *file, int line);
#define HK_CHECK_PUSH(cls, p) hk_list_check_push((cls), (p), __FILE__, __LINE__)
#define HK_ASSERT(cond) (HK_LIKELY(cond) ? (void)0 : hk_assert_failed(#cond, __FILE__, __LINE__))
#define HK_CHECK_PAGE(pg) hk_page_check((pg), __FILE__, __LINE__)
#else
#define HK_ASSERT(cond) ((void)sizeof(cond))
#define HK_CHECK_PAGE(pg) ((void)sizeof(pg))
#define HK_CHECK_PUSH(cls, p) ((void)sizeof(cls), (void)sizeof(p))
#endif

/* ---- pages --------------------------------------------------------------- */

enum hk_page_state {
    HK_PAGE_FREE = 0,  /* not in use (a purged page reads as zero: free) */
    HK_PAGE_CURRENT,   /* the heap allocates from it; its list is in TLS */
    HK_PAGE_AVAILABLE, /* in the class queue: has free blocks */
    HK_PAGE_FULL,      /* fewer free blocks than its class's `regain` (medium
                        * and large: none); a small one's `used` counts down
                        * to regaining them */
};

/* The page header (see hk_page_header for where it is): two cache lines,
 * so that other threads, which may read the first, do not pull back and
 * forth the line the owner's frees write.  (Their frees validate blocks in
 * the arena's class map, not here, but in a compact arena and in the
 * hardened build.) */
struct hk_page {
    /* Read by any thread; written only at page set-up. */
    struct hk_heap *heap;     /* owner; fixed for the page's life */
    uint32_t block_size;      /* 0 while the page is free */
    uint32_t div_magic;       /* the class's ceil(2^32 / block_size) */
    uint16_t capacity;        /* blocks in the page */
    uint8_t cls;
    uint8_t kind;
    uint16_t first_block;     /* offset of block 0 from the page base */
    char *blocks;             /* address of block 0 */
    uint32_t mapped;          /* compact arenas: bytes mapped from the page
                                 base (arena.c) */
    uint8_t shared_pad[28];
    /* The owner's. */
    int32_t used;      /* small pages: blocks not in local_free and not yet
                          carved; medium and large pages: blocks out */
    uint16_t unbumped; /* small pages: blocks at the end never handed out yet */
    uint8_t state;
    bool keep_empty;   /* as the current page, stays when it empties */
    struct hk_page *next; /* class queue, or the arena's dirty list */
    struct hk_page *prev;
    union {
        uint64_t freed_at; /* a free page: when it was retired (for purging) */
        struct {           /* a medium or large page in use (bitmap_page.c) */
            uint16_t touched; /* blocks from here on hold no memory */
            uint16_t reach;   /* highest block out in this trim period, + 1 */
            uint16_t reach_before; /* the same in the period before */
            uint16_t longest; /* span pages: no run of free slices is longer */
        };
    };
    union {
        void *local_free;                      /* small: blocks the owner freed */
        uint64_t free_map[HK_BITMAP_WORDS];    /* medium, large: 1 = block free */
    };
};
_Static_assert(sizeof(struct hk_page) == HK_PAGE_HEADER_SIZE, "page header is two cache lines");
_Static_assert(offsetof(struct hk_page, used) == 64, "owner fields on their own line");

static inline uintptr_t hk_region_offset(unsigned kind)
{
    return kind == HK_SMALL ? 0 : kind == HK_MEDIUM ? HK_MEDIUM_REGION_OFFSET : HK_LARGE_REGION_OFFSET;
}

static inline unsigned hk_page_shift(unsigned kind)
{
    return kind == HK_SMALL ? HK_SMALL_PAGE_SHIFT
         : kind == HK_MEDIUM ? HK_MEDIUM_PAGE_SHIFT : HK_LARGE_PAGE_SHIFT;
}

/* Small pages keep their header at the start, so that a page in use costs
 * no OS page beyond those its blocks touch; their blocks begin after it, at
 * an offset that is a multiple of the largest power of two (up to 4 KiB)
 * dividing the block size.  Medium and large pages keep it in their last
 * bytes and blocks begin at the page base.  Either way a block of a size
 * that is a multiple of A (up to 4 KiB in small pages, up to the page size
 * in the others) is aligned to A. */
static inline struct hk_page *hk_page_header(uintptr_t base, unsigned shift)
{
    if (shift == HK_SMALL_PAGE_SHIFT)
        return (struct hk_page *)base;
    return (struct hk_page *)(base + ((uintptr_t)1 << shift) - HK_PAGE_HEADER_SIZE);
}

static inline char *hk_page_base(const struct hk_page *pg)
{
    uintptr_t size = (uintptr_t)1 << hk_page_shift(pg->kind);
    return (char *)(((uintptr_t)pg & ~(size - 1)));
}

/* Address of the page's first block. */
static inline char *hk_page_blocks(const struct hk_page *pg)
{
    return hk_page_base(pg) + pg->first_block;
}

/* Header of the page holding p, for a p known to be a block of an arena. */
static inline struct hk_page *hk_page_of_block(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    uintptr_t off = u & (((uintptr_t)1 << 32) - 1);
    unsigned shift = off < HK_MEDIUM_REGION_OFFSET ? HK_SMALL_PAGE_SHIFT
                   : off < HK_LARGE_REGION_OFFSET ? HK_MEDIUM_PAGE_SHIFT : HK_LARGE_PAGE_SHIFT;
    return hk_page_header(u & ~(((uintptr_t)1 << shift) - 1), shift);
}

/* The same by the region (the arena offset's top two bits), with no branch:
 * for realloc and malloc_usable_size, whose blocks come small, medium and
 * large at random (realloc-growth 1.078x as fast, 11 paired rounds).  Where
 * nearly every block is small (a remote free's drain, a count of a TLS
 * list), the branch is learnt and costs fewer instructions (xthread-90:
 * 3.4% more in all with this one there). */
static inline struct hk_page *hk_page_of_any_block(const void *p)
{
    static const uint32_t page_mask[4] = {
        ((uint32_t)1 << HK_SMALL_PAGE_SHIFT) - 1, ((uint32_t)1 << HK_SMALL_PAGE_SHIFT) - 1,
        ((uint32_t)1 << HK_MEDIUM_PAGE_SHIFT) - 1, ((uint32_t)1 << HK_LARGE_PAGE_SHIFT) - 1};
    static const uint32_t header_below_end[4] = {
        (uint32_t)1 << HK_SMALL_PAGE_SHIFT, (uint32_t)1 << HK_SMALL_PAGE_SHIFT,
        HK_PAGE_HEADER_SIZE, HK_PAGE_HEADER_SIZE};
    _Static_assert(HK_MEDIUM_REGION_OFFSET == (uintptr_t)2 << 30 &&
                       HK_LARGE_REGION_OFFSET == (uintptr_t)3 << 30,
                   "an arena offset's top two bits name its region");
    uintptr_t u = (uintptr_t)p;
    unsigned region = (uint32_t)u >> 30;
    return (struct hk_page *)((u | page_mask[region]) + 1 - header_below_end[region]);
}

/* Header of the page holding p, a block of an arena's medium or large
 * region: the region's bit 30 selects the page size, with no branch (a
 * mispredicted one cost more than the whole bitmap free). */
static inline struct hk_page *hk_bitmap_page_of(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    uintptr_t last = u | ((uint32_t)u >= HK_LARGE_REGION_OFFSET ? ((uintptr_t)1 << HK_LARGE_PAGE_SHIFT) - 1
                                                                : ((uintptr_t)1 << HK_MEDIUM_PAGE_SHIFT) - 1);
    return (struct hk_page *)(last + 1 - HK_PAGE_HEADER_SIZE);
}

/* ---- size classes (size_class.c) --------------------------------------- */

struct hk_class {
    uint32_t block_size;
    uint32_t div_magic; /* ceil(2^32 / block_size): offset / size by multiply */
    uint16_t first_block; /* offset of block 0 in its page */
    uint16_t capacity;  /* blocks per page */
    uint16_t batch;     /* blocks carved from a fresh page at a time */
    uint16_t regain;    /* small: free blocks that bring a full page back */
    uint16_t keep_cap;  /* small: blocks a thread's list holds beside a refill's (thread_lists.c) */
    uint8_t kind;
};
extern struct hk_class hk_classes[HK_PAGE_CLASSES];

extern uint8_t hk_class_of_index[HK_FAST_INDEXES]; /* by (size + 15) >> 4 */
extern unsigned hk_first_medium_class; /* this class and above: medium or large */
/* The class of a size in (HK_SMALL_MAX, HK_LARGE_MAX], by (size -
 * HK_SMALL_MAX - 1) >> 9: the classes there begin at multiples of 512 B. */
extern uint8_t hk_class_of_half_kib[(HK_LARGE_MAX - HK_SMALL_MAX) >> 9];

/* The class of a size in (128, HK_LARGE_MAX]: the quarter of its doubling,
 * after the classes of the doublings below, and where the doubling has a
 * 9/8 class, the first quarter's lower half is that class. */
static inline unsigned hk_size_class_above_128(size_t size)
{
    size_t s = size - 1;
    unsigned bits = 63 - (unsigned)__builtin_clzl(s); /* size in (2^bits, 2^(bits+1)] */
    unsigned step = (unsigned)(s >> (bits - 2)) & 3;
    unsigned ninths_below = bits < HK_NINTH_FIRST_BITS ? 0
                          : bits > HK_NINTH_LAST_BITS ? HK_NINTH_LAST_BITS - HK_NINTH_FIRST_BITS + 1
                          : bits - HK_NINTH_FIRST_BITS;
    unsigned c = 9 + (bits - 7) * 4 + ninths_below + step;
    if (bits >= HK_NINTH_FIRST_BITS && bits <= HK_NINTH_LAST_BITS)
        c += step != 0 || ((s >> (bits - 3)) & 1);
    return c;
}

/* The class of a size in (HK_SMALL_MAX, HK_LARGE_MAX], from the table: 0
 * before it is built. */
static inline unsigned hk_class_above_small(size_t size)
{
    return hk_class_of_half_kib[(size - HK_SMALL_MAX - 1) >> 9];
}

/* The class of a size up to HK_LARGE_MAX, from the tables: 0 before they
 * are built. */
static inline unsigned hk_size_class(size_t size)
{
    if (size <= HK_FAST_MAX)
        return hk_class_of_index[(size + 15) >> 4];
    return hk_class_above_small(size);
}
/* The smallest class whose blocks all are aligned to 2^a, from class c up
 * (0: none), for a from HK_ALIGN_MIN_LOG (32 B) to HK_ALIGN_MAX_LOG. */
#define HK_ALIGN_MIN_LOG 5
#define HK_ALIGN_MAX_LOG 19 /* HK_LARGE_MAX */
extern uint8_t hk_aligned_classes[HK_ALIGN_MAX_LOG - HK_ALIGN_MIN_LOG + 1][64]; /* rows of 64: a shift */
bool hk_aligned_class_checks(unsigned c, size_t align, unsigned found); /* debug build */

/* The class for `size` bytes aligned to `align` (a power of two above 16);
 * 0: none fits, a huge block. */
static inline unsigned hk_aligned_class(size_t size, size_t align)
{
    HK_ASSERT(align > 16 && (align & (align - 1)) == 0);
    if (size > HK_LARGE_MAX || align > HK_LARGE_MAX)
        return 0;
    size_t rounded = (size + align - 1) & ~(align - 1); /* at most HK_LARGE_MAX */
    unsigned c = hk_size_class(rounded == 0 ? align : rounded);
    unsigned found = hk_aligned_classes[__builtin_ctzll(align) - HK_ALIGN_MIN_LOG][c];
    HK_ASSERT(hk_aligned_class_checks(c, align, found));
    return found;
}
void hk_classes_init(void);

/* ---- arenas (arena.c) ---------------------------------------------------- */

struct hk_region {
    uint32_t first;     /* first page index usable for blocks */
    uint32_t npages;    /* pages in the region */
    _Atomic uint32_t hwm; /* pages below this have been handed out at least once */
    uint32_t committed; /* pages below this are readable and writable */
    struct hk_page *dirty; /* free pages still holding memory, newest first */
    struct hk_page *dirty_tail;
    uint32_t ndirty;
    uint32_t clean_hint;  /* no clean free page below this word of cleanmap */
    uint64_t *cleanmap;   /* free pages whose memory went back to the OS */
};

/* Is page i of r free with its memory back with the OS (pool lock held)? */
static inline bool hk_region_page_clean(const struct hk_region *r, uint32_t i)
{
    return r->cleanmap[i / 64] >> (i % 64) & 1;
}

struct hk_arena {
    struct hk_heap *heap;
    struct hk_arena *next; /* the heap's other arenas */
    uintptr_t base;
    /* Only what is in use is mapped (arena.c), and there is no class map
     * (block_home.h). */
    bool compact;
    uint32_t header_bytes; /* of page 0: this header, the heap, the maps */
    uint32_t pages_in_use; /* pages not free (guarded by the pool lock) */
    struct hk_region region[HK_NKINDS];
};

/* Arena of each 4 GiB slot of the address space, or NULL. */
extern _Atomic(struct hk_arena *) hk_arena_table[HK_ARENA_TABLE_SIZE];

struct hk_arena *hk_arena_create(struct hk_heap *heap, size_t extra);
#define HK_ARENA_EXTRA(a) ((void *)((a) + 1)) /* where hk_arena_create's `extra` bytes are */
struct hk_page *hk_arena_page_alloc(struct hk_heap *heap, unsigned cls);
unsigned hk_arena_page_capacity(const struct hk_page *pg, unsigned capacity);
bool hk_arena_page_extend(struct hk_page *pg); /* more blocks mapped (compact) */
void hk_arena_page_in_use(struct hk_page *pg, unsigned cls); /* set up: its class map byte */
bool hk_arena_page_free(struct hk_page *pg, uint64_t now); /* true: over the owner's keep */
size_t hk_region_purge(struct hk_heap *h, struct hk_arena *a, unsigned kind,
                       uint64_t cutoff, uint32_t keep); /* pool lock held */
void hk_arena_release_empty(struct hk_heap *h); /* pool lock held, no purge in flight */
uint64_t hk_region_dirty_bytes(const struct hk_arena *a, unsigned kind); /* pool lock held */

static inline struct hk_arena *hk_arena_of(uintptr_t p)
{
    uintptr_t slot = p >> HK_ARENA_SHIFT;
    if (slot >= HK_ARENA_TABLE_SIZE)
        return NULL;
    return atomic_load_explicit(&hk_arena_table[slot], memory_order_acquire);
}

/* Where a block lives: its page, the page's owner and class. */
struct hk_block_home {
    struct hk_page *page;
    struct hk_heap *heap;
    unsigned cls;
};
/* True, with p's home, when p is the start of a block hakmem handed out
 * from an arena (not foreign, interior, misaligned, or in a free page).
 * Outside compact arenas it reads no page header. */
bool hk_block_home(const void *p, struct hk_block_home *home);

/* The heap that owns p, a block of an arena (an arena's pages are all its
 * heap's): read from the arena, not the block's page header. */
static inline struct hk_heap *hk_heap_of_block(const void *p)
{
    return hk_arena_of((uintptr_t)p)->heap;
}

/* Page header of an in-use page holding p, or NULL (see hk_block_home). */
static inline struct hk_page *hk_page_of(const void *p)
{
    struct hk_block_home home;
    return hk_block_home(p, &home) ? home.page : NULL;
}

/* ---- heaps (heap.c) ------------------------------------------------------ */

struct hk_heap {
    struct hk_page *current[HK_PAGE_CLASSES]; /* page whose free list is in TLS */
    struct hk_page *queue[HK_PAGE_CLASSES];   /* pages with free blocks (span
                                                 pages: all, lowest first) */
    struct hk_page *retired_current[HK_PAGE_CLASSES]; /* last retired on emptying */
    _Atomic(struct hk_remote_msg *) delayed; /* blocks other threads freed (remote.c) */
    _Atomic(struct hk_remote_msg *) msgs_back; /* drained messages for its senders (remote.c) */
    struct hk_arena *arenas;  /* first arena holds this heap */
    struct hk_heap *next;     /* registry of all heaps */
    struct hk_heap *next_abandoned;
    /* Statistics, counted on slow paths by the owner (stats.h, hk_count). */
    uint64_t supplied[HK_NCLASSES]; /* blocks moved into the TLS list */
    uint64_t returned[HK_NCLASSES]; /* blocks the TLS list gave back unused */
    uint64_t refills[HK_NCLASSES];
    uint32_t refills_since_send; /* slow refills, counted for hk_refill_begin's sends */
    bool abandoned;
    /* Abandoned with free blocks in its medium and large pages in use,
     * since abandoned_at: trimmed a trim period later unless adopted. */
    bool untrimmed;
    uint16_t msgs_parked; /* parked in msgs_back since it was last seen empty (remote.c) */
    pthread_mutex_t pool_lock; /* guards the arenas' free pages and the purge state */
    _Atomic uint64_t purge_at; /* next purge due (0: nothing to purge) */
    uint64_t purge_delay;      /* the heap's current purge delay (arena.c) */
    uint64_t last_purge;       /* when a purge last gave memory back */
    uint64_t last_refault;     /* when purged memory was last taken again */
    uint32_t purges_in_flight; /* purges whose pages are off every list */
    /* Trimming medium and large pages (bitmap_page.c); the owner's. */
    int64_t trim_budget;       /* bytes of blocks until the clock is read again, less 1 */
    int64_t trim_budget_set;   /* what trim_budget was last set to (the profiler's count) */
    uint64_t trim_at;          /* next trim due */
    uint64_t abandoned_at;     /* when its thread exited, while untrimmed */
    /* Blocks of 64 KiB and up served from the huge chunk while their class
     * had no page (bitmap_page.c), per class, in the second that ends at
     * route_period_end. */
    uint8_t routed[HK_NCLASSES];
    uint64_t route_period_end;
    /* Blocks of each class of 64 KiB and up (the last HK_SPAN_CLASSES, by
     * hk_span_index) out in the heap's span pages, at most
     * HK_SPAN_CLASS_BLOCKS (span_page.c).  (A byte each, for these classes
     * only: a heap must fit in a compact arena's header page, arena.c.) */
    uint8_t span_blocks[HK_SPAN_CLASSES];
    /* The heap profiler's memo of its thread's last stack, made at the
     * thread's first sample (heap_profile.c): it goes with the heap, so it
     * costs no TLS, and no memory unless profiling. */
    struct stack_memo *stack_memo;
    /* Frees of other heaps' blocks by the heap's thread, and the blocks
     * its lists had taken when it last looked (thread_lists.c). */
    uint32_t foreign_frees;
    uint32_t list_refills;
    uint64_t supplied_seen;
    uint32_t lists_cool;    /* looks to pass before the next switch */
    uint32_t lists_backoff; /* the last cool set; 0 once a judgement kept the lists */
    /* While sampling, the TLS list of class stashed_cls, set aside when a
     * pushed block held a point, until the class's next malloc serves the
     * point in its place (thread_lists.c).  One at a time: a heap of one
     * page holds no more (arena.c). */
    void *stashed;
    uint32_t stashed_cls;
};

static inline bool hk_in_first_arena(const struct hk_heap *h, const void *p)
{
    return ((uintptr_t)p >> HK_ARENA_SHIFT) == (h->arenas->base >> HK_ARENA_SHIFT);
}

/* Blocks a thread freed for one other heap, not yet sent: messages, the
 * one being filled first (remote.c). */
#define HK_REMOTE_OWNERS 4
struct hk_remote_batch {
    struct hk_heap *heap;
    struct hk_remote_msg *msg;
    struct hk_remote_msg *last;
    uint32_t count;
};

/* A thread's distance to its next sample points (heap_profile.c): left[0]
 * in bytes to the next profiled one, left[1] in blocks to the next guarded
 * one (a kind that is off: INT64_MAX; a new thread's are 0, which sends it
 * to the profiler first); pending[kind], the small classes whose next
 * refill is a point; ticks, the bytes of its medium and large blocks to its
 * next trim tick.  The allocator counts down here, inline, where no point
 * is near. */
struct hk_sample_left {
    int64_t left[2];
    uint64_t pending[2];
    int64_t ticks;
    bool every_block; /* guarding: every medium and large block is counted */
};

/* Per-thread state, reached through initial-exec TLS.  `small_key` is
 * the address bits that identify the thread's own small region (arena base
 * >> 31), rotated so that a misaligned pointer never matches; ~0 when the
 * thread has no heap.  `page_key` is what free compares first: small_key
 * while the thread's own small blocks go back to their pages, ~0 once its
 * frees all go to its lists (thread_lists.c). */
struct hk_tls {
    void *free[HK_NCLASSES]; /* free list of each class (thread_lists.c);
                                first, so that malloc indexes it with no
                                offset */
    uintptr_t page_key;
    uintptr_t small_key;
    struct hk_heap *heap;
    /* hk_class_of_index, copied when the thread gets a heap (all 0 before:
     * class 0's list is always empty, so malloc takes its slow path). */
    uint8_t class_of[HK_FAST_INDEXES];
    /* Blocks of other heaps this thread freed, not yet sent (remote.c). */
    struct hk_remote_batch remote[HK_REMOTE_OWNERS]; /* most recently used first */
    /* Messages this thread drained, or took from the pool ahead, for its
     * own sends (remote.c). */
    struct hk_remote_msg *msg_stash;
    uint32_t msg_stash_n;
    /* A switched thread's small frees through its lists (low 32 bits) and
     * how many of them were its own blocks (high 32 bits): one add a free
     * (two counters side by side were two, which gcc made seven vector
     * instructions); thread_lists.c judges the share. */
    uint64_t lists_count;
    /* While sampling: where the thread's next points are (in hk_tls, so
     * that a push counted inline reaches it from the same base). */
    struct hk_sample_left sample;
};
extern __thread struct hk_tls hk_tls __attribute__((tls_model("initial-exec")));

/* Rotating an address right by 4 moves its low bits to the top, so that a
 * pointer that is not 16-byte aligned can never match a key. */
static inline uintptr_t hk_rotate4(uintptr_t p)
{
    return (p >> 4) | (p << 60);
}

/* p is 16-byte aligned and in the thread's own small region. */
static inline bool hk_own_small(const void *p)
{
    return (hk_rotate4((uintptr_t)p) >> (HK_SMALL_REGION_SHIFT - 4)) == hk_tls.small_key;
}

/* p is 16-byte aligned and in the medium or large region of the thread's
 * own first arena: the arena's upper half (an arena base's bit 31 is 0, so
 * the key's lowest bit is too). */
static inline bool hk_own_bitmap(const void *p)
{
    return ((hk_rotate4((uintptr_t)p) >> (HK_SMALL_REGION_SHIFT - 4)) ^ 1) == hk_tls.small_key;
}

/* p is 16-byte aligned and in the thread's own first arena. */
static inline bool hk_own_arena(const void *p)
{
    return (hk_rotate4((uintptr_t)p) >> (HK_ARENA_SHIFT - 4)) == (hk_tls.small_key >> 1);
}

/* Free-list links and the hardened build's hooks (plain in the default). */
#include "secure.h"

struct hk_heap *hk_heap_attach(void);      /* gives the thread a heap */
void hk_heap_flush_tls(struct hk_heap *h); /* TLS lists back to their pages */
void hk_heap_drain_delayed(struct hk_heap *h);
size_t hk_heaps_collect_all(void); /* bytes given back */
void hk_heap_init_once(void);
void hk_heap_watch_exit(void); /* run the thread-exit hook for this thread */
bool hk_heaps_purge_all(void); /* true while free pages wait */
void hk_heaps_settle(void);    /* no purger runs from now on */
/* When the first abandoned heap that is still untrimmed is due (0: none);
 * the purger and every owner's trim tick look (heap.c). */
extern _Atomic uint64_t hk_abandoned_trim_at;
void hk_heaps_trim_abandoned(uint64_t now);
static inline void hk_heaps_trim_abandoned_due(uint64_t now)
{
    uint64_t at = atomic_load_explicit(&hk_abandoned_trim_at, memory_order_relaxed);
    if (HK_UNLIKELY(at != 0 && now >= at))
        hk_heaps_trim_abandoned(now);
}
uint32_t hk_heap_threads_live(void);
struct hk_heap *hk_heaps_first(void); /* the list of every heap, via ->next */

/* ---- purging (purge.c) --------------------------------------------------- */

/* What is kept for reuse adapts to the program: memory given back and
 * wanted again within HK_REFAULT_WINDOW_MS means too little was kept (the
 * purge delay, the huge cache's bound without a purger double); after
 * HK_CALM_MS without that, it halves back. */
#define HK_REFAULT_WINDOW_MS 1000
#define HK_CALM_MS 10000

enum hk_purge_mode {
    HK_PURGE_DUE,       /* what waited the heap's purge delay */
    HK_PURGE_OWNER,     /* that, and what an owner does not keep (no purger runs) */
    HK_PURGE_ABANDONED, /* that, and what an abandoned heap does not keep */
    HK_PURGE_ALL,
};
size_t hk_heap_purge(struct hk_heap *h, enum hk_purge_mode mode, bool wait);
void hk_release_all_memory(void); /* before a retry when memory ran out */
void hk_purge_for_growth(struct hk_heap *h, unsigned kind); /* pool lock held */
void hk_purge_note_refault(struct hk_heap *h); /* pool lock held */
uint32_t hk_purge_owner_keep(const struct hk_heap *h, unsigned kind); /* pool lock held */
/* How many times the configured delay h's purge delay has grown to: 1 for
 * a heap whose purged memory was not soon wanted again.  Pool lock held. */
uint32_t hk_purge_delay_factor(const struct hk_heap *h);

void hk_purge_schedule(struct hk_heap *h, uint64_t now, bool over_keep);
/* Work that small refills must detour for: one byte, so that hk_refill's
 * common path tests both with one compare. */
#define HK_DETOUR_PURGER 1 /* a free wanted the purger started; malloc starts it */
#define HK_DETOUR_SAMPLE 2 /* sample points on refills (heap_profile.c) */
extern _Atomic uint8_t hk_detour;
extern bool hk_heap_sampling; /* sample points are on (either kind) */
void hk_purge_poll(void);
static inline bool hk_refill_detoured(void)
{
    return atomic_load_explicit(&hk_detour, memory_order_relaxed) != 0;
}
void hk_purge_start(void); /* only where starting a thread is safe */
void hk_purge_stop(void);  /* the program is down to one thread */
bool hk_purger_running(void);
void hk_purge_fork_lock(void);
void hk_purge_fork_parent(void);
void hk_purge_fork_child(void);

/* ---- the thread's free lists (thread_lists.c) ----------------------------
 *
 * Each small class's TLS list holds blocks for the thread's mallocs: a
 * refill's, the small blocks of other heaps (of a cache line or more) that
 * the thread frees, and, once the thread frees many of those, its own as
 * well: free then sends every small block of a full-size arena to the list,
 * with no branch on whose it is.  hk_small_halves says which 2 GiB halves
 * of the address space are such arenas' small regions; the class comes from
 * the arena's class map (block_home.h).
 *
 * A list's links say how many of its blocks frees pushed there, so that
 * the list is bounded with no count in malloc: a link holds a block's
 * address in its low 48 bits (an arena's blocks lie below 2^47:
 * hk_arena_of) and, in its top 16, how many blocks from that one down were
 * pushed.  The head (hk_tls.free) is such a link; a push puts the head in
 * the block and makes a head with one more; a malloc that takes the head
 * puts the block's link in its place, which restores the count the list
 * had before the block came.  A refill's blocks (plain links) count 0. */
#define HK_SMALL_HALVES ((size_t)256)
extern uintptr_t hk_small_halves[HK_SMALL_HALVES];

/* The key of the 2 GiB half of the address space holding p: its address
 * bits from bit 31 up, rotated as hk_own_small's, so that a pointer that is
 * not 16-byte aligned has a key no half has. */
static inline uintptr_t hk_half_key(const void *p)
{
    return hk_rotate4((uintptr_t)p) >> (HK_SMALL_REGION_SHIFT - 4);
}

/* Is the half of key k (hk_half_key) a full-size arena's small region?
 * Halves whose keys share their low 8 bits (bases 512 GiB apart) share an
 * entry: the first registered has it, the others' blocks are freed as
 * those of compact arenas are.  Entry 0 holds a key no half has, so that
 * unused entries (0) match no pointer. */
static inline bool hk_listed_half(uintptr_t k)
{
    return hk_small_halves[k & (HK_SMALL_HALVES - 1)] == k;
}

/* The first class of blocks of a cache line or more (size_class.c checks
 * it): another heap's blocks of a class below are never kept. */
#define HK_LINE_CLASS 4

void hk_lists_register(uintptr_t arena_base);   /* a full-size arena, made */
void hk_lists_unregister(uintptr_t arena_base); /* about to be unmapped */
#define HK_LINK_COUNT_SHIFT 48
/* The block a list link points to (NULL: the list's end). */
static inline void *hk_link_block(const void *link)
{
    return (void *)((uintptr_t)link << (64 - HK_LINK_COUNT_SHIFT) >> (64 - HK_LINK_COUNT_SHIFT));
}
/* How many blocks, from the one link points to down, were pushed. */
static inline unsigned hk_link_pushed(const void *link)
{
    return (unsigned)((uintptr_t)link >> HK_LINK_COUNT_SHIFT);
}
static inline void *hk_link_make(void *block, unsigned pushed)
{
    return (void *)((uintptr_t)block | (uintptr_t)pushed << HK_LINK_COUNT_SHIFT);
}
/* The block after b on a list (NULL: b is the last). */
static inline void *hk_list_next(const void *b)
{
    return hk_link_block(hk_next(b));
}
/* Block p goes on class cls's list, whose head is `head`: the head it
 * makes counts one more pushed block. */
static inline void hk_list_put(unsigned cls, void *p, void *head)
{
    uintptr_t count = (uintptr_t)head & ~(((uintptr_t)1 << HK_LINK_COUNT_SHIFT) - 1);
    hk_set_next(p, head);
    hk_tls.free[cls] = (void *)(count + ((uintptr_t)1 << HK_LINK_COUNT_SHIFT) + (uintptr_t)p);
}
/* The pushed blocks a class's list may hold beside a refill's: keep_cap,
 * or 0 while sampling, which sends every push past the cap's test, where
 * the heap profiler counts it (hk_list_push_counted). */
extern uint16_t hk_list_cap[HK_NCLASSES];
/* While sampling, each class's real cap as a list head compares with it
 * (keep_cap << HK_LINK_COUNT_SHIFT), and its block size: tables of 8-byte
 * entries, which one scaled index reaches. */
extern uintptr_t hk_push_cap_link[HK_NCLASSES];
extern int64_t hk_push_size[HK_NCLASSES];
void hk_lists_sampling_start(void); /* every push past the cap's test */
/* p, a block of class cls, found its list at its cap (or, while sampling,
 * was not counted inline). */
void hk_list_full(unsigned cls, void *p);
static inline bool hk_list_push_counted(struct hk_tls *t, unsigned cls, void *p, void *head);
void hk_list_release(struct hk_heap *h, unsigned cls); /* the whole list goes */
/* While sampling, class cls's TLS list is empty and its list was set
 * aside (h->stashed): the pending point's block, the list back. */
static inline bool hk_list_stashed(const struct hk_heap *h, unsigned cls)
{
    return h->stashed != NULL && h->stashed_cls == cls;
}
void *hk_list_unstash(struct hk_heap *h, unsigned cls);
/* Every HK_LISTS_LOOK frees of other heaps' blocks by h's thread: should
 * all its frees go to its lists now? */
#define HK_LISTS_LOOK 256
void hk_lists_consider(struct hk_heap *h);
/* Every HK_LISTS_RETRY slow refills of a thread whose frees go to its
 * lists: its own blocks' share of its frees is judged (thread_lists.c),
 * and above 90% it goes back to its pages for a while. */
#define HK_LISTS_RETRY 64
void hk_lists_retry(struct hk_heap *h);
void hk_free_other(void *p, const char *call); /* free.c */

/* Push p, a block of class cls, on the thread's list. */
static inline void hk_list_push(size_t cls, void *p)
{
    struct hk_tls *t = &hk_tls;
    HK_CHECK_PUSH((unsigned)cls, p);
    void *head = t->free[cls];
    if (HK_UNLIKELY((uintptr_t)head >= (uintptr_t)hk_list_cap[cls] << HK_LINK_COUNT_SHIFT)) {
        if (!(HK_UNLIKELY(hk_heap_sampling) && hk_list_push_counted(t, (unsigned)cls, p, head)))
            hk_list_full((unsigned)cls, p);
        return;
    }
    hk_list_put((unsigned)cls, p, head);
}

/* ---- pages (page.c) ------------------------------------------------------ */

void *hk_refill(unsigned cls);
/* The first block of class cls's TLS list, taken, as malloc's fast path
 * takes it; NULL when the list is empty. */
static inline void *hk_tls_pop(unsigned cls)
{
    void **list = &hk_tls.free[cls];
    void *block = hk_link_block(*list);
    if (block != NULL) {
        void *next = hk_next(block);
        HK_SECURE_TAKEN(block, next, cls);
        *list = next;
    }
    return block;
}
/* malloc's fast path for a size: the first block of the TLS list of its
 * class; NULL above HK_FAST_MAX, when the list is empty, or before the
 * thread has a heap (its class table is all 0 then, and class 0's list
 * always empty). */
static inline void *hk_small_pop(size_t size)
{
    return size <= HK_FAST_MAX ? hk_tls_pop(hk_tls.class_of[(size + 15) >> 4]) : NULL;
}
void hk_page_event(void *block); /* a local free of block brought used to zero */
void hk_page_init(struct hk_page *pg, struct hk_heap *h, unsigned cls);
/* A fresh page for class cls of h, or NULL when memory ran out even after
 * every free page went back. */
struct hk_page *hk_page_new(struct hk_heap *h, unsigned cls);
struct hk_page *hk_page_queue_take(struct hk_heap *h, unsigned cls);
void hk_page_current_emptied(struct hk_heap *h, struct hk_page *pg);
struct hk_page *hk_page_next_current(struct hk_heap *h, unsigned cls); /* NULL: ENOMEM */
struct hk_heap *hk_refill_begin(struct hk_heap *h, unsigned cls);

/* ---- medium and large pages: a bitmap of free blocks (bitmap_page.c) ---- */

/* Medium and large blocks handed out between trim ticks: bytes, so that
 * while profiling a tick can also stop at the thread's next sample point.
 * A tick reads the clock and polls the purger and remote frees: at 1 MiB
 * (a tick every 50 blocks of random-mixed-medium, against 64 before, when
 * it counted blocks) that row ran 1.4-2.1% slower, at 2 MiB 1.6%, at
 * 4 MiB level (11 runs pinned to one CPU). */
#define HK_TRIM_BYTES ((int64_t)4 << 20)
void hk_bitmap_init(struct hk_page *pg);
size_t hk_bitmap_trim_all(struct hk_heap *h); /* every free block's memory, now */
size_t hk_bitmap_trim_owner_exit(struct hk_heap *h); /* h's thread exits */
uint64_t hk_bitmap_trim_period(void); /* ms */
void *hk_bitmap_alloc_slow(struct hk_heap *h, unsigned cls); /* no room in current */
void *hk_bitmap_take_new(struct hk_heap *h, struct hk_page *pg, unsigned i); /* i >= reach */
void *hk_bitmap_taken(struct hk_heap *h, struct hk_page *pg, unsigned i); /* budget spent */
void hk_bitmap_tick(struct hk_heap *h); /* every HK_TRIM_BYTES handed out */
void hk_bitmap_trim_due(struct hk_heap *h); /* a tick's trim, if due */
void *hk_bitmap_malloc(size_t size); /* a size in (HK_SMALL_MAX, HK_LARGE_MAX] */
/* A free of p emptied pg, or pg is not current (span pages never are). */
void hk_bitmap_page_event(struct hk_page *pg, void *p, const char *call);

/* ---- span pages (span_page.c) -------------------------------------------- */

/* The length in slices of the block that starts at each slice of span
 * page pg, 0 at the others and while the block is free: a byte per slice,
 * below the header, in the header's OS page (no block of any class reaches
 * there). */
static inline uint8_t *hk_span_runs(const struct hk_page *pg)
{
    return (uint8_t *)pg - HK_BITMAP_WORDS * 64;
}
/* A run map byte holds its run's length, and HK_SPAN_SAMPLED while the
 * block is a sample of the heap profiler's: its site + 1 is then in the
 * same slice's place of hk_span_sites, 0 once the profiler let it go. */
#define HK_SPAN_SAMPLED 0x80
static inline unsigned hk_span_run_length(uint8_t run)
{
    return run & (HK_SPAN_SAMPLED - 1);
}
static inline uint32_t *hk_span_sites(const struct hk_page *pg)
{
    return (uint32_t *)hk_span_runs(pg) - HK_BITMAP_WORDS * 64;
}
/* size of class cls, HK_SPAN_MIN and up */
void *hk_span_malloc(struct hk_heap *h, size_t size, size_t cls);

/* A class of 64 KiB and up with no page of its own (no current one) takes
 * its blocks from the heap's span pages while it has no page with room in
 * its queue either and fewer than HK_SPAN_CLASS_BLOCKS blocks out there
 * (class_without_page, bitmap_page.c, says why). */
#define HK_SPAN_CLASS_BLOCKS 8
static inline size_t hk_span_index(size_t cls)
{
    return HK_NCLASSES - 1 - cls; /* 0 for the largest class */
}
static inline bool hk_span_serves(const struct hk_heap *h, size_t cls)
{
    return !HK_SECURE_ON && hk_classes[cls].block_size >= HK_SPAN_MIN && h->queue[cls] == NULL &&
           h->span_blocks[hk_span_index(cls)] < HK_SPAN_CLASS_BLOCKS;
}
void hk_span_free(struct hk_page *pg, void *p, const char *call); /* from page_event */
/* Block p of span page pg, sampled (HK_SPAN_SAMPLED), is freed: the
 * profiler lets it go, from the thread that frees it, owner or not. */
void hk_span_sample_freed(struct hk_page *pg, const void *p);
void hk_span_release_empty(struct hk_heap *h); /* malloc_trim: retire the empty ones */

/* A run map's length n is a span block's: its class's sizes lie above the
 * class below HK_SPAN_MIN, so n is at least HK_SPAN_MIN's slices. */
static inline bool hk_span_run_fits(unsigned n)
{
    return n >= (HK_SPAN_MIN >> HK_SPAN_SLICE_SHIFT) && n <= (HK_LARGE_MAX >> HK_SPAN_SLICE_SHIFT);
}

/* The class of a span block of n slices: that of its malloc's size (the
 * span classes' bounds are whole slices). */
static inline unsigned hk_span_run_class(unsigned n)
{
    return hk_size_class_above_128((size_t)n << HK_SPAN_SLICE_SHIFT);
}

/* The slice of span page pg that p lies in. */
static inline unsigned hk_span_slice(const struct hk_page *pg, const void *p)
{
    return (unsigned)(((uintptr_t)p - (uintptr_t)pg->blocks) >> HK_SPAN_SLICE_SHIFT);
}

/* The bytes of block p of span page pg, 0 when p starts no block out. */
static inline size_t hk_span_block_size(const struct hk_page *pg, const void *p)
{
    return (size_t)hk_span_run_length(hk_span_runs(pg)[hk_span_slice(pg, p)])
           << HK_SPAN_SLICE_SHIFT;
}

/* The class of block p of pg, for the statistics (of a span page's, the
 * class of its length); 0 when p starts no block out there. */
static inline unsigned hk_block_class(const struct hk_page *pg, const void *p)
{
    if (HK_LIKELY(pg->cls != HK_SPAN_CLASS))
        return pg->cls;
    size_t n = hk_span_block_size(pg, p) >> HK_SPAN_SLICE_SHIFT;
    return n != 0 ? hk_span_run_class((unsigned)n) : 0;
}

/* A counter of one heap (stats.h): only its owner writes it, readers in
 * other threads load it.  No locked instruction: on x86-64 one add to
 * memory (an aligned 8-byte store, which a reader loads whole; gcc makes a
 * relaxed load and store of it three instructions), elsewhere a relaxed
 * atomic load and store. */
static inline void hk_count(uint64_t *counter, uint64_t n)
{
#if defined(__x86_64__)
    __asm__("addq %1, %0" : "+m"(*counter) : "er"(n));
#else
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
#endif
}

/* Take the lowest free block of pg, the class's current page.  The search
 * always ends: the bits past the last block stay set.  A block at or above
 * the page's reach (which is at most its capacity, so a full page goes
 * there too) and the end of the trim budget are looked after out of
 * line, so that this path needs no stack frame.  (cls is a size_t here:
 * it indexes the heap's arrays with no zero extension.) */
static inline void *hk_bitmap_take(struct hk_heap *h, struct hk_page *pg, size_t cls)
{
    unsigned w = 0;
    while (pg->free_map[w] == 0)
        w++;
    uint64_t map = pg->free_map[w];
    unsigned i = w * 64 + (unsigned)__builtin_ctzll(map);
    if (HK_UNLIKELY(i >= pg->reach))
        return hk_bitmap_take_new(h, pg, i);
    pg->free_map[w] = map & (map - 1);
    pg->used++;
    hk_count(&h->supplied[cls], 1);
    uint64_t size = pg->block_size;
    /* Spelled for one subtraction from memory, and the block's address
     * computed after it. */
    int64_t budget = h->trim_budget - (int64_t)size;
    h->trim_budget = budget;
    if (HK_UNLIKELY(budget < 0))
        return hk_bitmap_taken(h, pg, i);
    return pg->blocks + (size_t)i * size;
}

static inline void *hk_bitmap_alloc(struct hk_heap *h, size_t cls)
{
    struct hk_page *pg;
    if (HK_UNLIKELY(h == NULL || (pg = h->current[cls]) == NULL))
        return hk_bitmap_alloc_slow(h, cls);
    return hk_bitmap_take(h, pg, cls);
}

/* The block of pg at `bit` of `word` of its bitmap, out, is free again. */
static inline void hk_bitmap_put(struct hk_page *pg, uint64_t *word, uint64_t bit, void *p,
                                 const char *call)
{
    *word |= bit;
    if (HK_UNLIKELY(--pg->used == 0 || pg->state != HK_PAGE_CURRENT))
        hk_bitmap_page_event(pg, p, call);
}

/* Free block p of pg by pg's owner, in `call` (named if p is free already,
 * or not the start of a block).  Of a span page this is the run's first
 * slice, and hk_span_free does the rest. */
static inline void hk_bitmap_free(struct hk_page *pg, void *p, const char *call)
{
    uint64_t offset = (uintptr_t)p - (uintptr_t)pg->blocks;
    unsigned i = (unsigned)((offset * pg->div_magic) >> 32);
    uint64_t *word = &pg->free_map[i / 64];
    uint64_t bit = (uint64_t)1 << (i % 64);
    if (HK_UNLIKELY((*word & bit) || offset != (uint64_t)i * pg->block_size))
        hk_invalid_pointer(call, p);
    hk_bitmap_put(pg, word, bit, p, call);
}

/* ---- frees of other heaps' blocks (remote.c) ----------------------------- */

/* Blocks of one heap on their way home from a thread that freed them, side
 * by side: their owner frees them with loads that do not wait on each
 * other, where a list linked through the blocks made it wait for each
 * block's line in turn (remote.c).  A message of count 0 is itself the one
 * block it carries: when no message could be had (too many out, or no
 * memory), the block was sent so. */
#define HK_REMOTE_MSG_BLOCKS 62
struct hk_remote_msg {
    struct hk_remote_msg *next; /* in a delayed stack, a batch, or the pool */
    uint32_t count;
    void *blocks[HK_REMOTE_MSG_BLOCKS];
};
_Static_assert(sizeof(struct hk_remote_msg) == 512, "a message is 512 bytes");

void hk_remote_free(struct hk_heap *owner, void *p);
void hk_remote_flush(void); /* send this thread's buffered remote frees */
/* Put messages first..last (linked by next) on h's delayed list. */
void hk_remote_send(struct hk_heap *h, struct hk_remote_msg *first, struct hk_remote_msg *last);
/* Messages an owner drained, linked by next from first (the last's NULL):
 * kept for the thread's sends, parked in park (the owner's heap, or NULL)
 * for its senders, the rest to the pool. */
void hk_remote_msgs_release(struct hk_heap *park, struct hk_remote_msg *first);
/* The messages the thread keeps, and those parked in its heap h (or NULL),
 * back to the pool, at its exit. */
void hk_remote_stash_release(struct hk_heap *h);
/* Messages made so far, and those not in the pool now (statistics). */
void hk_remote_msg_counts(unsigned *made, unsigned *out);
void hk_remote_fork_lock(void);
void hk_remote_fork_unlock(bool child);

/* p, a small block of class cls (a cache line or more) of another heap
 * than h, the calling thread's, goes on the TLS list for this thread's
 * mallocs (hk_list_push: a full list goes to hk_list_full, and while
 * sampling the push is counted). */
static inline void hk_foreign_keep(struct hk_heap *h, unsigned cls, void *p)
{
    hk_count(&h->supplied[cls], 1);
    hk_list_push(cls, p);
}
void hk_page_retire(struct hk_page *pg);
void hk_page_queue_push(struct hk_heap *h, struct hk_page *pg);
void hk_page_queue_remove(struct hk_heap *h, struct hk_page *pg);

/* Free a block of pg by the thread that owns pg. */
static inline void hk_page_free_local(struct hk_page *pg, void *p, const char *call)
{
    if (pg->kind != HK_SMALL) {
        hk_bitmap_free(pg, p, call);
        return;
    }
    hk_set_next(p, pg->local_free);
    pg->local_free = p;
    if (HK_UNLIKELY(--pg->used == 0))
        hk_page_event(p); /* the block, not pg: keeps pg out of a register */
}

/* ---- page states: each change of state is written here, and only here -
 *
 *   (new) or AVAILABLE --hk_page_make_current--> CURRENT
 *   CURRENT --hk_page_leave_current--> AVAILABLE, FULL or FREE, as its
 *       blocks say (another page takes over, or the thread lets go)
 *   CURRENT --hk_page_current_emptied--> stays CURRENT (keep_empty) or FREE
 *   FULL --hk_page_regained--> AVAILABLE (blocks came back: a small
 *       page's class's `regain` of them, a medium or large page's one)
 *   AVAILABLE --hk_page_drained--> FREE (its last block came back)
 *   FREE: hk_page_retire (page.c), then arena.c (dirty list, purge, clean map)
 */

/* pg, new or on no list (taken off the queue), becomes its class's current
 * page; the previous one must have left (hk_page_leave_current). */
static inline void hk_page_make_current(struct hk_heap *h, struct hk_page *pg)
{
    pg->state = HK_PAGE_CURRENT;
    h->current[pg->cls] = pg;
    HK_CHECK_PAGE(pg);
}

/* pg, its class's current page, stops being current: it is free if no block
 * is out (no free would retire it later), full if it has too few free
 * blocks to be worth a refill, or else queued.  A small page is full with
 * fewer than its class's `regain` free blocks and nothing uncarved; its
 * `used` then counts the frees still missing (regain - free blocks), so
 * that free's fast path, which decrements it, brings the page back at zero
 * with `regain` blocks to give.  The class's TLS list must hold none of its
 * blocks; the caller sets the next current page. */
static inline void hk_page_leave_current(struct hk_heap *h, struct hk_page *pg)
{
    if (h->current[pg->cls] == pg)
        h->current[pg->cls] = NULL;
    if (pg->used == 0) {
        hk_page_retire(pg); /* pg may be purged and unmapped from here on */
        return;
    }
    bool full = pg->used == pg->capacity; /* medium and large: exact */
    if (pg->kind == HK_SMALL) {
        unsigned free_blocks = (unsigned)(pg->capacity - pg->used);
        unsigned regain = hk_classes[pg->cls].regain;
        full = pg->unbumped == 0 && free_blocks < regain;
        if (full)
            pg->used = (int32_t)(regain - free_blocks);
    }
    if (full) {
        pg->state = HK_PAGE_FULL;
    } else {
        pg->state = HK_PAGE_AVAILABLE;
        hk_page_queue_push(h, pg);
    }
    HK_CHECK_PAGE(pg);
}

/* pg was full and has blocks to give again (a small page: `regain` of
 * them; its caller sets `used`). */
static inline void hk_page_regained(struct hk_heap *h, struct hk_page *pg)
{
    pg->state = HK_PAGE_AVAILABLE;
    hk_page_queue_push(h, pg);
    HK_CHECK_PAGE(pg);
}

/* pg, queued, holds no block any more. */
static inline void hk_page_drained(struct hk_heap *h, struct hk_page *pg)
{
    hk_page_queue_remove(h, pg);
    hk_page_retire(pg);
}

/* ---- huge blocks (huge.c) ------------------------------------------------ */

void *hk_huge_alloc(size_t size, size_t align, bool zero);
/* A block standing in for a sampled one of `usable` bytes (heap_profile.c):
 * its free, realloc and usable size find it as huge, and its site (+ 1). */
void *hk_huge_alloc_sampled(size_t usable, size_t align, uint32_t site);
bool hk_huge_free(void *p);                 /* false: not a huge block */
size_t hk_huge_usable_size(const void *p);  /* 0: not a huge block */
void *hk_huge_realloc(void *p, size_t size); /* p must be huge */
uint64_t hk_huge_count(uint64_t *bytes);    /* live blocks (statistics) */
void hk_huge_spares_release(void);          /* stand-ins' spares, to the cache */
size_t hk_huge_spares_held(uint64_t *ranges); /* their bytes (statistics) */
size_t hk_huge_inside(const void *p);       /* hardened build: secure.c */

/* ---- the cache of freed huge ranges (huge_cache.c) ----------------------- */

enum hk_take { HK_TAKE_FIT, HK_TAKE_GROW, HK_TAKE_RENEW }; /* when nothing fits */
uintptr_t hk_huge_cache_take(size_t *len, size_t align, enum hk_take mode, size_t *have);
bool hk_huge_chunk_serves(size_t len); /* hk_huge_chunk_carve would try */
void hk_huge_cache_put(uintptr_t addr, size_t len);
size_t hk_huge_cache_purge(bool all);
void hk_huge_cache_shrink(void); /* to its bound, which may have shrunk */
bool hk_huge_cache_pending(void);
size_t hk_huge_cache_held(uint64_t *ranges); /* bytes cached (statistics) */
size_t hk_huge_cache_freed(const void *p); /* hardened build: secure.c */
uintptr_t hk_huge_chunk_carve(size_t len); /* 0: map it apart */
bool hk_huge_chunk_extend(uintptr_t addr, size_t have, size_t len);
uintptr_t hk_huge_chunk_rest(uintptr_t *start); /* where carving goes on */
void hk_huge_chunk_trim(void); /* the rest's memory, resident ahead of use, back */
void hk_huge_chunk_lock(void);
void hk_huge_chunk_unlock(void);
void hk_huge_chunk_reset_lock(void);
void hk_huge_cache_lock(void);
void hk_huge_cache_unlock(void);
void hk_huge_cache_reset_lock(void);

void hk_huge_lock_all(void);
void hk_huge_unlock_all(void);
void hk_huge_reset_locks(void);

/* ---- operating system (os.c) --------------------------------------------- */

void *hk_os_reserve_aligned(size_t size, size_t align);
bool hk_os_map_at(void *addr, size_t size); /* errno EEXIST: taken */
bool hk_os_commit(void *p, size_t size);
bool hk_os_protect(void *p, size_t size); /* PROT_NONE */
void hk_os_purge(void *p, size_t size);
void hk_os_huge_pages(void *p, size_t size, bool on); /* madvise (NO)HUGEPAGE */
#define HK_OS_HUGE_PAGE ((uintptr_t)2 << 20)
void *hk_os_map(size_t size);
void *hk_os_map_aligned(size_t size, size_t align, size_t *mapped);
void hk_os_unmap(void *p, size_t size);
void *hk_os_remap(void *p, size_t old_size, size_t new_size); /* NULL: failed */
/* The same, the range staying a multiple of align from its start. */
void *hk_os_remap_aligned(void *p, size_t old_size, size_t new_size, size_t align);
uint64_t hk_clock_ms(void);
uint64_t hk_os_syscalls(void); /* made so far, for the statistics */
void hk_os_init(void); /* once, before the first arena */
bool hk_os_strict_overcommit(void);

/* ---- configuration (config.c) -------------------------------------------- */

struct hk_config {
    const char *profile;       /* speed, balanced or lean */
    uint64_t purge_delay_ms;   /* free pages keep their memory this long */
    bool purge_thread;         /* a background thread purges (else the owner) */
    size_t idle_keep;          /* free bytes per region an owner keeps (purge.c) */
    size_t huge_cache_bytes;   /* bound on cached huge mappings, plus: */
    uint64_t huge_cache_live_pct; /* this share of the bytes in live huge blocks */
    uint64_t huge_cache_ms;    /* how long a cached mapping may wait */
    size_t thp_from;           /* a small region's chunks committed past this
                                  many bytes are on transparent huge pages
                                  (arena.c); 0: never */
    bool verbose;
    int stats;                 /* HAKMEM_STATS: 0 off, 1 table, 2 JSON */
    const char *heap_profile;  /* HAKMEM_HEAP_PROFILE: dump path prefix, or NULL */
    uint64_t heap_sample;      /* HAKMEM_HEAP_SAMPLE: mean bytes between samples */
    uint64_t guard_sample;     /* HAKMEM_GUARD_SAMPLE: mean blocks between guarded
                                  ones (0: off) */
};
extern struct hk_config hk_config;
void hk_config_load(void);
void hk_config_print(void); /* the effective options, on stderr */

/* ---- sample points and the heap profiler (heap_profile.c) ---------------
 *
 * Off unless HAKMEM_HEAP_PROFILE or HAKMEM_GUARD_SAMPLE is set: then some
 * allocations are sample points, served apart: a profiled one (about one per
 * heap_sample bytes) by a sample slot or a huge block that carries its call
 * site, or, a span block, where it is with its site beside (span_page.c), a
 * guarded one (about one per guard_sample blocks) by guard.c; a point may
 * be both.
 * The allocator reaches them only from paths that are slow anyway:
 * small refills (every one detours, HK_DETOUR_SAMPLE: page.c), the trim
 * countdown of medium and large pages, huge allocations and frees. */
enum { HK_SAMPLE_PROFILE = 1, HK_SAMPLE_GUARD = 2 };

/* Does class cls's next refill hold a point? */
static inline bool hk_sample_pending(unsigned cls)
{
    return (hk_tls.sample.pending[0] | hk_tls.sample.pending[1]) >> cls & 1;
}

/* While sampling, the trim budget of a thread's heap ends before its next
 * profiled point (or trim tick: hk_heap_sample_bitmap), so the medium and
 * large blocks need not pass the profiler one by one.  What they took from
 * it since it was set is folded into the thread's count before anything
 * else is counted... */
static inline void hk_sample_fold(struct hk_heap *h)
{
    int64_t passed = h->trim_budget_set - h->trim_budget;
    if (passed == 0)
        return;
    hk_tls.sample.left[0] -= passed;
    hk_tls.sample.ticks -= passed;
    h->trim_budget_set = h->trim_budget;
    /* Only a budget its thread did not set (a heap it took over) can have
     * passed the point: the next block counted stands for it. */
    if (HK_UNLIKELY(hk_tls.sample.left[0] < 1))
        hk_tls.sample.left[0] = 1;
}

/* ...and the budget set again once it is: the block that takes it below 0
 * is the one that holds the point or reaches the tick. */
static inline void hk_sample_arm(struct hk_heap *h)
{
    struct hk_sample_left *s = &hk_tls.sample;
    int64_t budget = s->left[0] - 1 < s->ticks ? s->left[0] - 1 : s->ticks;
    h->trim_budget = h->trim_budget_set = s->every_block ? 0 : budget;
}

/* While sampling, `bytes` of small blocks entering h's thread's TLS list
 * (a refill's, or another heap's kept block) are taken from h's trim
 * budget, which ends before the thread's next point, as a medium block's
 * are (the fold counts them): false, and nothing taken, when they reach
 * its end (always while guarding: the budget is 0 then). */
static inline bool hk_sample_budget_take(struct hk_heap *h, int64_t bytes)
{
    int64_t budget = h->trim_budget - bytes;
    if (HK_UNLIKELY(budget < 0))
        return false;
    h->trim_budget = budget;
    return true;
}

/* While sampling, block p of class cls goes on the thread's list, whose
 * head is `head`, counted, where the list is under the class's real cap,
 * the class's next refill holds no point and the heap's budget suffices;
 * else false, for hk_list_full to decide.  Inline past the cap's test, so
 * that a counted push pays no call (server profiled: the call's version,
 * 31 instructions, took 11.6% of the time).  Only a thread with a heap
 * pushes (tls_bind clears the keys that lead here). */
static inline bool hk_list_push_counted(struct hk_tls *t, unsigned cls, void *p, void *head)
{
    struct hk_heap *h = t->heap;
    HK_ASSERT(h != NULL);
    if ((uintptr_t)head >= hk_push_cap_link[cls] || hk_sample_pending(cls) ||
        !hk_sample_budget_take(h, hk_push_size[cls]))
        return false;
    hk_list_put(cls, p, head);
    return true;
}

/* A block of class cls pushed on h's thread's list while sampling
 * (hk_list_full; never while its class has a point pending) is counted
 * like a refill of one block: from the budget, else out of line, where
 * false says it held a point, which is then pending for its class (the
 * block does not go on the list: the class's next malloc stands for it). */
bool hk_sample_pass_pushed_slow(struct hk_heap *h, unsigned cls);
static inline bool hk_sample_pass_pushed(struct hk_heap *h, unsigned cls)
{
    return hk_sample_budget_take(h, (int64_t)hk_classes[cls].block_size) ||
           hk_sample_pass_pushed_slow(h, cls);
}

/* n blocks of `size` bytes, counted as they entered the TLS list, went
 * back unused.  What the budget counted since it was set is folded first:
 * armed over it, a thread whose lists overflow lost every count between
 * two overflows (xthread-50 profiled: 3 samples for 1.1 GB allocated). */
static inline void hk_sample_uncount(struct hk_heap *h, uint64_t n, uint64_t size)
{
    hk_sample_fold(h);
    hk_tls.sample.left[0] += (int64_t)(n * size);
    hk_tls.sample.left[1] += (int64_t)n;
    hk_sample_arm(h);
}

/* The point pending for class cls, whose TLS list was set aside for it:
 * a sampled block, or NULL when none can be served. */
void *hk_heap_sample_stashed(unsigned cls);
void hk_heap_profile_start(void); /* once, from the constructor */
/* A refill's list of n blocks of class cls, taken from pg, holds a point:
 * the TLS list gets those before it; the first block, or the sampled one. */
void *hk_heap_sample_refill(struct hk_heap *h, struct hk_page *pg, unsigned cls, void *list,
                            unsigned n);
/* Block i of pg, medium or large, was taken and the trim budget ran out
 * (see heap_profile.c): the block, or a sampled one that serves instead. */
void *hk_heap_sample_bitmap(struct hk_heap *h, struct hk_page *pg, unsigned i);
/* The same for a span block (span_page.c), which a profiled point keeps as
 * the sample: its site + 1, or 0 and in *sampled a block to serve instead
 * (a guarded point's) or NULL. */
uint32_t hk_heap_sample_span(struct hk_heap *h, uint64_t size, unsigned cls, void **sampled);
/* A huge allocation: its kinds of sample (HK_SAMPLE_*), and its site + 1
 * when profiled (else 0). */
unsigned hk_heap_sample_huge(size_t size, uint32_t *site);
void hk_heap_sample_freed(uint32_t site, size_t size);
void hk_heap_sample_attached(struct hk_heap *h); /* h has a new thread */
/* The sample slots (sample_slot.c, under the profiler's lock; what a
 * sample and its free do inline: sample_slot.h).  A slot's header: */
struct slot_header {
    uintptr_t self; /* the block's address while it is live; free: the next free slot's header */
    uint32_t site;  /* the profiler's site + 1; free: HK_SLOT_PURGED or 0 */
    uint32_t cls;
};
static inline void hk_slot_stamp(void *p, uint32_t site, unsigned cls)
{
    struct slot_header *h = (struct slot_header *)p - 1;
    h->site = site;
    h->cls = cls;
    h->self = (uintptr_t)p;
}
void hk_slot_purge(struct slot_header *h);
void hk_slot_push(struct slot_header *h);
size_t hk_slot_usable_size(const void *p); /* 0: not a live slot's block */
void hk_slot_release_free(void);             /* free slots' memory goes back */
/* The slots' range (0 and 0: none yet), set once; read without the lock,
 * so a pointer in it is one to look at under the lock. */
extern _Atomic uintptr_t hk_slot_lo, hk_slot_hi;
static inline bool hk_slot_range(const void *p)
{
    uintptr_t lo = atomic_load_explicit(&hk_slot_lo, memory_order_relaxed);
    return (uintptr_t)p - lo < atomic_load_explicit(&hk_slot_hi, memory_order_relaxed) - lo;
}
/* free, in `call`, of a pointer in the slots' range (named invalid when it
 * is no live slot's block), and its malloc_usable_size (0: not one):
 * heap_profile.c. */
void hk_heap_sample_slot_free(void *p, const char *call);
size_t hk_heap_sample_slot_usable(const void *p);
void hk_heap_sample_slots_release(void); /* free slots' memory, to the OS */
void hk_heap_profile_fork_lock(void);
void hk_heap_profile_fork_unlock(bool child);
/* The caller's caller's call stack, hakmem's own frames left out when it is
 * a shared library: at most max (<= 64) return addresses into pc. */
unsigned hk_stack_capture(uintptr_t *pc, unsigned max);

/* ---- sampled guarded allocations (guard.c) -------------------------------
 *
 * A guarded block ends where its pages end, before an inaccessible page;
 * freed, its pages are made inaccessible and kept unused for a while, and a
 * fault in them is reported with the block's stacks. */
extern bool hk_guard_on;
void hk_guard_start(void); /* the fault handler, from hk_heap_profile_start */
/* A guarded block of `size` bytes aligned to `align` (a power of two),
 * zeroed if asked, carrying the profiler's record (site + 1, or 0); NULL if
 * it cannot be made. */
void *hk_guard_alloc(size_t size, size_t align, bool zero, uint32_t site, size_t sampled);
bool hk_guard_free(void *p, const char *call); /* false: not a guarded block */
size_t hk_guard_usable_size(const void *p);    /* 0: not a guarded block */
void hk_guard_fork_lock(void);
void hk_guard_fork_unlock(bool child);

/* Internal entry points shared by the API files. */
void *hk_malloc_slow(size_t size);
void hk_free_slow(void *p, const char *call);
void *hk_aligned_slow(size_t align, size_t size);

/* An aligned allocation's common case, the first block of its class's TLS
 * list; NULL where hk_aligned_slow has more to do.  It never sets errno
 * (before the class tables are built, every class is 0: NULL). */
static inline void *hk_aligned_pop(size_t align, size_t size)
{
    if (align <= 16)
        return hk_small_pop(size);
    unsigned cls = hk_aligned_class(size, align);
    return cls != 0 ? hk_tls_pop(cls) : NULL;
}

/* A block of `size` bytes aligned to `align` (a power of two). */
static inline void *hk_aligned(size_t align, size_t size)
{
    void *p = hk_aligned_pop(align, size);
    return HK_LIKELY(p != NULL) ? p : hk_aligned_slow(align, size);
}
size_t hk_usable_size(const void *p, const char *call);

#pragma GCC visibility pop

#endif /* HAKMEM_INTERNAL_H */
