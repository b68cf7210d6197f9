/*
 * The hardened build's hooks (`make secure`, -DHK_SECURE; secure.c).
 *
 * The code that moves small blocks through free lists reads and writes a
 * block's link with hk_next and hk_set_next, and calls the HK_SECURE_*
 * hooks where a block is freed, handed out or drained and where a page is
 * set up; a few `#ifdef HK_SECURE` blocks do the rest (free's check of the
 * thread's own blocks, carving, the sized frees, huge blocks, calloc).  In
 * the default build the links are plain pointers and the hooks compile to
 * nothing, so its code is what it was.  In the hardened build a free small
 * block holds:
 *
 *   word 0: its link, XORed with a per-process secret and its own address;
 *   word 1: a "free" tag: word 0 rotated, XORed with another secret and
 *           the block's address (hk_secure_seal);
 *   the rest: zeros.
 *
 * A free finds the tag already there (double free); handing a block out
 * finds the tag gone, the link not in the block's page or a byte not zero
 * where hk_secure_fill_clean looks (a write to a freed block).  Each report
 * is one line, then abort.
 *
 * A medium or large block (a bit in its page's bitmap says whether it is
 * free) is cleared when freed but for its size and a tag in words 0-1, or
 * the link and tag while it waits to go back from another thread: a free
 * that finds its bit set or the tag there is a double free.  A free block
 * of a page in use holds that tag or nothing but zeros (its memory was
 * fresh or given back), so handing it out checks both words and the
 * zeros after them.  A freed huge block holds its size, a tag and zeros in
 * its first and last 64 bytes while its range is cached.
 */
#ifndef HAKMEM_SECURE_H
#define HAKMEM_SECURE_H

#ifdef HK_SECURE

#define HK_SECURE_ON 1

struct hk_secure_keys {
    uintptr_t link; /* XORed into every link */
    uintptr_t tag;  /* XORed into a free block's tag (hk_secure_seal) */
};
extern struct hk_secure_keys hk_secure_keys;

void hk_secure_init(void); /* the secrets, once, before any block exists */
void hk_secure_freeing(struct hk_page *pg, void *p, const char *call);
void hk_secure_free_own(void *p, const char *call);
void hk_secure_sized_free(const void *p, size_t size, size_t align, bool exact, const char *call);
__attribute__((noreturn, cold)) void hk_secure_written(void *block, size_t size);
void hk_secure_live(struct hk_page *pg, const void *p, const char *call);
void hk_secure_drained(void *b);
void *hk_secure_bitmap_taken(void *p);
void hk_secure_page_init(struct hk_page *pg, unsigned cls);
void hk_secure_clear(void *b, size_t size);
bool hk_secure_zeroed(const void *p, size_t n); /* hk_secure_zero, faster for large n */
void hk_secure_huge_freed(void *p, size_t size);
void hk_secure_huge_taken(void *p, size_t range);
void *hk_secure_carve(char *first, size_t size, unsigned n, void *list);
/* From hk_invalid_pointer: reports p (and aborts) if it lies in a block of a
 * page in use, an address inside it or the block itself freed already;
 * returns if p is in no block. */
void hk_secure_bad_pointer(const char *call, const void *p);

static inline void *hk_next(const void *b)
{
    return (void *)(*(const uintptr_t *)b ^ hk_secure_keys.link ^ (uintptr_t)b);
}

/* The tag of a free block whose first word is w0: it changes with every
 * bit of the link, so a write to either word breaks the pair. */
static inline uintptr_t hk_secure_seal(const void *b, uintptr_t w0)
{
    return ((w0 << 23) | (w0 >> 41)) ^ hk_secure_keys.tag ^ (uintptr_t)b;
}

/* n bytes at p (16-byte aligned, n a multiple of 16) are all zero: 64
 * bytes a step, in vector registers. */
typedef uint64_t hk_v2 __attribute__((vector_size(16)));
static inline bool hk_secure_zero(const void *p, size_t n)
{
    const hk_v2 *v = (const hk_v2 *)p;
    hk_v2 a = { 0, 0 }, b = { 0, 0 };
    size_t i = 0, words = n / 16;
    for (; i + 4 <= words; i += 4) {
        a |= v[i] | v[i + 1];
        b |= v[i + 2] | v[i + 3];
    }
    for (; i < words; i++)
        a |= v[i];
    a |= b;
    return (a[0] | a[1]) == 0;
}

/* The zeros of a free block of `size` bytes after its link and tag, as far
 * as they are checked: all of a block up to 64 bytes, the rest of the
 * first 64 and the last 64 bytes of a larger one, where a use after free
 * writes most often (the fields at the start of a structure, the end of a
 * string or an array).  Checking all of it cost as much as clearing it
 * (random-mixed 16..1024 B: a third of the hardened build's
 * instructions). */
static inline bool hk_secure_fill_clean(const char *b, size_t size)
{
    if (size <= 64)
        return hk_secure_zero(b + 16, size - 16);
    const hk_v2 *head = (const hk_v2 *)b, *tail = (const hk_v2 *)(b + size - 64);
    hk_v2 a = head[1] | head[2] | head[3] | tail[0] | tail[1] | tail[2] | tail[3];
    return (a[0] | a[1]) == 0;
}

/* Every free block gets its link and tag here. */
static inline void hk_set_next(void *b, void *next)
{
    uintptr_t w0 = (uintptr_t)next ^ hk_secure_keys.link ^ (uintptr_t)b;
    ((uintptr_t *)b)[0] = w0;
    ((uintptr_t *)b)[1] = hk_secure_seal(b, w0);
}

/* block, of `size` bytes, whose link said next, leaves a free list for the
 * user: its tag, a link into its own page and its zeros must be intact. */
static inline void hk_secure_taken(void *block, void *next, size_t size)
{
    uintptr_t *w = block;
    uintptr_t page_mask = ~(((uintptr_t)1 << HK_SMALL_PAGE_SHIFT) - 1);
    if (HK_UNLIKELY(w[1] != hk_secure_seal(block, w[0]) ||
                    (next != NULL && (((uintptr_t)next ^ (uintptr_t)block) & page_mask) != 0) ||
                    !hk_secure_fill_clean(block, size)))
        hk_secure_written(block, size);
    w[0] = 0;
    w[1] = 0;
}

#define HK_SECURE_INIT() hk_secure_init()
/* A block of pg is being freed (by any thread): not free already; the
 * owner clears it. */
#define HK_SECURE_FREEING(pg, p, call) hk_secure_freeing((pg), (p), (call))
/* block, whose link said next, leaves a free list for the user. */
#define HK_SECURE_TAKEN(block, next, cls) \
    hk_secure_taken((block), (next), hk_classes[cls].block_size)
/* A block of pg is named by realloc or malloc_usable_size: not free. */
#define HK_SECURE_LIVE(pg, p, call) hk_secure_live((pg), (p), (call))
/* A medium or large block p (or NULL) leaves its page for the user: its
 * value. */
#define HK_SECURE_BITMAP_TAKEN(p) hk_secure_bitmap_taken(p)
/* b, freed by another thread, leaves the heap's delayed list. */
#define HK_SECURE_DRAINED(b) hk_secure_drained(b)
/* b, another heap's, goes home in a message: tagged as free, so that a
 * second free finds it so. */
#define HK_SECURE_SENT(b) hk_set_next((b), NULL)
/* pg, free, is about to serve class cls. */
#define HK_SECURE_PAGE_INIT(pg, cls) hk_secure_page_init((pg), (cls))

#else /* the default build */

#define HK_SECURE_ON 0

/* Macros, not functions: the very expressions the code had before. */
#define hk_next(b) (*(void **)(b))
#define hk_set_next(b, next) (*(void **)(b) = (next))

#define HK_SECURE_INIT() ((void)0)
#define HK_SECURE_FREEING(pg, p, call) ((void)sizeof(pg), (void)sizeof(p), (void)sizeof(call))
#define HK_SECURE_TAKEN(block, next, cls) ((void)sizeof(block), (void)sizeof(next), (void)sizeof(cls))
#define HK_SECURE_LIVE(pg, p, call) ((void)sizeof(pg), (void)sizeof(p), (void)sizeof(call))
#define HK_SECURE_DRAINED(b) ((void)sizeof(b))
#define HK_SECURE_SENT(b) ((void)sizeof(b))
#define HK_SECURE_BITMAP_TAKEN(p) (p)
#define HK_SECURE_PAGE_INIT(pg, cls) ((void)sizeof(pg), (void)sizeof(cls))

#endif /* HK_SECURE */

#endif /* HAKMEM_SECURE_H */
