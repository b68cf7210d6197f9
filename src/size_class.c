/*
 * Size classes: 16-byte steps up to 128 B, then four classes per doubling up
 * to 512 KiB (160, 192, 224, 256, 320, ...), and from 1 KiB to 8 KiB a fifth
 * at 9/8 of the doubling's base (1152, 2304, 4608, 9216).
 * Few classes matter for memory: each class in use keeps its own partly
 * used pages, and the sum of each class's peak is what a program touches.
 * The rounding waste stays under 25%, and under 12.5% for a power of two
 * and a header: programs allocate those all the time (sqlite's page cache
 * 4096 + 272 bytes, z3's 8192 + 8, a 1024-byte buffer and its length),
 * and with four classes per doubling each one wasted nearly a quarter.
 * malloc's fast path finds a class through a byte table indexed by
 * (size + 15) >> 4, which each thread keeps in its TLS.
 */
#include "internal.h"

#define LIST_KEEP_BYTES ((size_t)10 << 10)
#define LIST_KEEP_MIN 8

struct hk_class hk_classes[HK_PAGE_CLASSES];
uint8_t hk_class_of_index[HK_FAST_INDEXES];
uint8_t hk_class_of_half_kib[(HK_LARGE_MAX - HK_SMALL_MAX) >> 9];
unsigned hk_first_medium_class;

static void aligned_classes_init(void);

/* The block size of class c: 16 B steps to 128 B, then each doubling's
 * classes in turn (hk_size_class_above_128 finds them). */
static size_t class_size(unsigned c)
{
    if (c <= 8)
        return (size_t)c * 16;
    unsigned next = 9;
    for (unsigned bits = 7;; bits++) {
        size_t base = (size_t)1 << bits;
        if (bits >= HK_NINTH_FIRST_BITS && bits <= HK_NINTH_LAST_BITS && next++ == c)
            return base + base / 8;
        for (unsigned quarter = 1; quarter <= 4; quarter++)
            if (next++ == c)
                return base + quarter * (base / 4);
    }
}

static unsigned class_kind(size_t size)
{
    if (size <= HK_SMALL_MAX)
        return HK_SMALL;
    return size <= HK_MEDIUM_MAX ? HK_MEDIUM : HK_LARGE;
}

void hk_classes_init(void)
{
    for (unsigned c = 1; c < HK_NCLASSES; c++) {
        size_t size = class_size(c);
        struct hk_class *k = &hk_classes[c];
        k->block_size = (uint32_t)size;
        k->kind = (uint8_t)class_kind(size);
        if (k->kind != HK_SMALL && hk_first_medium_class == 0)
            hk_first_medium_class = c;
        size_t page = (size_t)1 << hk_page_shift(k->kind);
        if (k->kind == HK_SMALL) {
            size_t natural = size & -size; /* largest power of two dividing size */
            k->first_block = (uint16_t)(natural < HK_PAGE_HEADER_SIZE ? HK_PAGE_HEADER_SIZE
                                        : natural > HK_OS_PAGE ? HK_OS_PAGE : natural);
            k->capacity = (uint16_t)((page - k->first_block) / size);
        } else {
            k->first_block = 0;
            k->capacity = (uint16_t)((page - HK_PAGE_HEADER_SIZE) / size);
            /* A bit past the last block ends malloc's search of a full page. */
            if (k->capacity >= HK_BITMAP_WORDS * 64)
                hk_fatal("a medium or large page's bitmap has no bit past its blocks");
        }
        k->div_magic = (uint32_t)((((uint64_t)1 << 32) + size - 1) / size);
        /* A small class's refill serves at least a batch, about 4 KiB of
         * blocks (at least 8), so that memory is touched only as it is
         * needed but refills stay rare.  Medium and large classes take one
         * block at a time from their page's bitmap (bitmap_page.c). */
        size_t batch = 1;
        if (k->kind == HK_SMALL) {
            batch = 4096 / size < 8 ? 8 : 4096 / size;
            if (batch > k->capacity)
                batch = k->capacity;
        }
        k->batch = (uint16_t)batch;
        /* A full small page comes back to its queue only when half a batch
         * of its blocks are free, so that a refill from it serves that many
         * mallocs: when frees land one by one in many full pages (a large
         * heap replaced at random), a page regained for each free would
         * cost a refill, a page switch and two queue links per malloc.
         * Those free blocks are unusable until then: at most 1/16 of a
         * page, which bounds the memory this costs. */
        size_t regain = batch / 2;
        if (regain > k->capacity / 16u)
            regain = k->capacity / 16u;
        k->regain = (uint16_t)(regain < 1 ? 1 : regain);
        /* The blocks a thread's list of a small class may hold
         * (thread_lists.c): 10 KiB of them, at least 8.  With 32 KiB server
         * ran 1.46x as fast as before the lists and server-retire 1.37x,
         * with 16 KiB 1.38x and 1.21x, with 8 KiB 1.16x and 1.04x (9 paired
         * rounds); peak RSS on xthread-90 (4.2 MiB before): 5.0, 3.8 and
         * 3.5 MiB, xthread-50 (3.4): 4.0, 3.5, 3.3, churn (7.5): 8.0, 7.2,
         * 6.6.  Measured again as the lists came to main, 16 KiB against
         * 12 (9 paired rounds): server 0.97 and server-retire 0.98 as fast
         * with 12; xthread-90's peak RSS (11 interleaved runs) 4.24 MiB
         * with 16, 4.10 with 12, Debian's mimalloc 4.23, xthread-50's 3.63,
         * 3.64 and 3.75.  With the count in the links, 12 KiB against 10
         * (two sets of 11 interleaved runs): xthread-90 4.24 and 4.24 MiB
         * with 12, 4.06 and 4.11 with 10, mimalloc 4.22 and 4.27;
         * xthread-50 3.97 and 3.76 (mimalloc 4.23); server 0.99,
         * server-retire 0.96 and xstress 1.00 as fast with 10 (9 paired
         * rounds, IQRs 0.93-1.05).  None in the hardened build, whose
         * free lists hold only blocks of one page (secure.c checks each
         * link against it). */
        size_t keep = LIST_KEEP_BYTES / size < LIST_KEEP_MIN ? LIST_KEEP_MIN : LIST_KEEP_BYTES / size;
        k->keep_cap = (uint16_t)(k->kind == HK_SMALL && !HK_SECURE_ON ? keep : 0);
        hk_list_cap[c] = k->keep_cap;
    }
    if (hk_size_class_above_128(HK_SPAN_MIN) < HK_NCLASSES - HK_SPAN_CLASSES)
        hk_fatal("a heap's span_blocks has no room for every class from HK_SPAN_MIN up");
    /* The span class: large pages of 16 KiB slices (span_page.c).  Its
     * capacity leaves the last slice to the header and the run map. */
    struct hk_class *span = &hk_classes[HK_SPAN_CLASS];
    span->block_size = (uint32_t)HK_SPAN_SLICE;
    span->kind = HK_LARGE;
    span->first_block = 0;
    span->capacity = (uint16_t)((((size_t)1 << HK_LARGE_PAGE_SHIFT) / HK_SPAN_SLICE) - 1);
    span->div_magic = (uint32_t)((((uint64_t)1 << 32) + HK_SPAN_SLICE - 1) / HK_SPAN_SLICE);
    span->batch = 1;
    span->regain = 1;
    hk_class_of_index[0] = 1;
    for (unsigned i = 1; i < HK_FAST_INDEXES; i++) {
        size_t size = (size_t)i * 16;
        hk_class_of_index[i] = (uint8_t)(size <= 128 ? i : hk_size_class_above_128(size));
    }
    for (unsigned i = 0; i < sizeof hk_class_of_half_kib; i++)
        hk_class_of_half_kib[i] =
            (uint8_t)hk_size_class_above_128(HK_SMALL_MAX + 1 + ((size_t)i << 9));
    aligned_classes_init();
    if (hk_classes[HK_LINE_CLASS].block_size != HK_CACHE_LINE ||
        hk_classes[HK_LINE_CLASS - 1].block_size >= HK_CACHE_LINE)
        hk_fatal("HK_LINE_CLASS is not the first class of a cache line");
    /* The formula finds every class from its first size to its last. */
    for (unsigned c = 9; c < HK_NCLASSES; c++)
        HK_ASSERT(hk_size_class_above_128(hk_classes[c].block_size) == c &&
                  hk_size_class_above_128(hk_classes[c - 1].block_size + 1) == c);
}

/* The smallest class, from class c up, whose blocks are all aligned to
 * align (a power of two above 16): blocks of a multiple of align, in pages
 * whose blocks begin at a multiple of align (see hk_page_header). */
static unsigned aligned_from(unsigned c, size_t align)
{
    for (; c < HK_NCLASSES; c++) {
        const struct hk_class *k = &hk_classes[c];
        if (k->kind == HK_SMALL && align > HK_OS_PAGE)
            continue;
        if ((k->block_size & (align - 1)) == 0)
            return c;
    }
    return 0;
}

/* aligned_from for every class and alignment, built with the classes: the
 * search took about 30 instructions an aligned allocation (aligned: 16 B to
 * 4 KiB blocks aligned to 16 B to 4 KiB). */
_Static_assert(((size_t)1 << HK_ALIGN_MAX_LOG) == HK_LARGE_MAX, "alignments up to the largest class");
_Static_assert(HK_NCLASSES <= 64, "a row of hk_aligned_classes holds every class");
uint8_t hk_aligned_classes[HK_ALIGN_MAX_LOG - HK_ALIGN_MIN_LOG + 1][64];

static void aligned_classes_init(void)
{
    for (unsigned a = HK_ALIGN_MIN_LOG; a <= HK_ALIGN_MAX_LOG; a++)
        for (unsigned c = 1; c < HK_NCLASSES; c++)
            hk_aligned_classes[a - HK_ALIGN_MIN_LOG][c] = (uint8_t)aligned_from(c, (size_t)1 << a);
}

#ifdef HK_DEBUG
/* hk_aligned_class's table against the search it stands for. */
bool hk_aligned_class_checks(unsigned c, size_t align, unsigned found)
{
    return found == aligned_from(c, align);
}
#endif
