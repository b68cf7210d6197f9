/*
 * The hardened build's hooks (`make secure`, -DHK_SECURE; secure.c).
 *
 * The code that moves small blocks through free lists reads and writes a
 * block's link with hk_next and hk_set_next, and calls the HK_SECURE_*
 * hooks where a block is carved, freed or handed out.  In the default build
 * the links are plain pointers and the hooks compile to nothing, so its
 * code is what it was.  In the hardened build a free small block holds:
 *
 *   word 0: its link, XORed with a per-process secret and its own address;
 *   word 1: a "free" tag: word 0 rotated, XORed with another secret and
 *           the block's address (hk_secure_seal);
 *   the rest: zeros.
 *
 * A free finds the tag already there (double free); handing a block out
 * finds the tag gone, the link not in the block's page or a byte not zero
 * (a write to a freed block).  Each report is one line, then abort.
 *
 * A medium or large block (a bit in its page's bitmap says whether it is
 * free) is cleared when freed but for its size and a tag in words 0-1, or
 * the link and tag while it waits to go back from another thread: a free
 * that finds its bit set or the tag there is a double free, and handing
 * it out checks the zeros after the tag.
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
void hk_secure_taken(void *block, void *next, unsigned cls);
void hk_secure_live(struct hk_page *pg, const void *p, const char *call);
void hk_secure_drained(void *b);
void *hk_secure_bitmap_taken(void *p);
void hk_secure_fresh(void *block, size_t size);
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

/* Every free block gets its link and tag here. */
static inline void hk_set_next(void *b, void *next)
{
    uintptr_t w0 = (uintptr_t)next ^ hk_secure_keys.link ^ (uintptr_t)b;
    ((uintptr_t *)b)[0] = w0;
    ((uintptr_t *)b)[1] = hk_secure_seal(b, w0);
}

#define HK_SECURE_INIT() hk_secure_init()
/* A block of pg is being freed (by any thread): not free already. */
#define HK_SECURE_FREEING(pg, p, call) hk_secure_freeing((pg), (p), (call))
/* block, whose link said next, leaves a free list for the user. */
#define HK_SECURE_TAKEN(block, next, cls) hk_secure_taken((block), (next), (cls))
/* block, of `size` bytes, is carved: it becomes a free block. */
#define HK_SECURE_FRESH(block, size) hk_secure_fresh((block), (size))
/* A block of pg is named by realloc or malloc_usable_size: not free. */
#define HK_SECURE_LIVE(pg, p, call) hk_secure_live((pg), (p), (call))
/* A medium or large block p (or NULL) leaves its page for the user: its
 * value. */
#define HK_SECURE_BITMAP_TAKEN(p) hk_secure_bitmap_taken(p)
/* b, freed by another thread, leaves the heap's delayed list. */
#define HK_SECURE_DRAINED(b) hk_secure_drained(b)

#else /* the default build */

#define HK_SECURE_ON 0

/* Macros, not functions: the very expressions the code had before. */
#define hk_next(b) (*(void **)(b))
#define hk_set_next(b, next) (*(void **)(b) = (next))

#define HK_SECURE_INIT() ((void)0)
#define HK_SECURE_FREEING(pg, p, call) ((void)sizeof(pg), (void)sizeof(p), (void)sizeof(call))
#define HK_SECURE_TAKEN(block, next, cls) ((void)sizeof(block), (void)sizeof(next), (void)sizeof(cls))
#define HK_SECURE_FRESH(block, size) ((void)sizeof(block), (void)sizeof(size))
#define HK_SECURE_LIVE(pg, p, call) ((void)sizeof(pg), (void)sizeof(p), (void)sizeof(call))
#define HK_SECURE_DRAINED(b) ((void)sizeof(b))
#define HK_SECURE_BITMAP_TAKEN(p) (p)

#endif /* HK_SECURE */

#endif /* HAKMEM_SECURE_H */
