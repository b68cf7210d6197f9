/*
 * Sampled guarded allocations (HAKMEM_GUARD_SAMPLE=N): about one block in N,
 * chosen at heap_profile.c's sample points, gets a mapping of its own: the
 * block ends where its pages end (a class's block size, as a refill knows
 * only the class; a huge block's size rounded up to 16), and an
 * inaccessible page follows, so an overflow faults on its first byte past
 * the end.  Freed, its pages are made inaccessible and stay mapped in a
 * bounded quarantine (the last QUARANTINE blocks, at most QUARANTINE_BYTES
 * of data pages; the oldest is unmapped), so a use after free faults at the
 * instruction that makes it.  A fault handler (installed only with guard
 * sampling on) reports such faults with the block's allocation and free
 * stacks, and passes every other fault to the handler it replaced.
 *
 * Guarded blocks lie outside every arena: free, realloc and usable size
 * reach them on their slow paths, after huge blocks (guard_free,
 * hk_guard_usable_size).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "internal.h"

#define STACK 24 /* frames kept per stack */
#define QUARANTINE 256
#define QUARANTINE_BYTES ((size_t)64 << 20)
/* Mappings that left the quarantine, kept for blocks of their length: one
 * mprotect makes one usable again, where a new one takes mmap, mprotect, a
 * page fault and, in the end, munmap. */
#define SPARES 32
#define SPARE_MAX_LEN ((size_t)64 << 10)

struct guarded {
    uintptr_t base;  /* the data pages, then the guard page; 0: empty slot */
    size_t len;      /* the data pages' bytes */
    uintptr_t block;
    size_t size;     /* its usable size: to the end of the data pages */
    size_t sampled;  /* the profiler's record: bytes and site + 1 (0: none) */
    uint32_t site;
    uint8_t nalloc, nfree;
    uintptr_t alloc_pc[STACK], free_pc[STACK];
};

bool hk_guard_on;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The live guarded blocks, by block address: linear probing, deletion by
 * moving later entries back (no tombstones). */
static struct guarded *live;
static size_t live_cap, live_used;
/* The freed ones, oldest first from q_first. */
static struct guarded quarantine[QUARANTINE];
static unsigned q_first, q_count;
static size_t q_bytes;
static struct {
    uintptr_t base;
    size_t len;
} spares[SPARES];
static unsigned nspares;
static struct sigaction replaced[2]; /* SIGSEGV's, SIGBUS's */
/* dladdr, looked up when guard sampling starts rather than imported: an
 * import changes the library's dynamic symbol table, and with it what the
 * loader's lazy lookup of malloc costs every program. */
static int (*symbol_of)(const void *, Dl_info *);

static size_t home(uintptr_t block, size_t cap)
{
    return (size_t)((block * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static struct guarded *find_live(uintptr_t block)
{
    for (size_t i = live_cap ? home(block, live_cap) : 0; live_cap != 0; i = (i + 1) & (live_cap - 1)) {
        if (live[i].base == 0)
            return NULL;
        if (live[i].block == block)
            return &live[i];
    }
    return NULL;
}

static void place(struct guarded *table, size_t cap, const struct guarded *g)
{
    size_t i = home(g->block, cap);
    while (table[i].base != 0)
        i = (i + 1) & (cap - 1);
    table[i] = *g;
}

static bool add_live(const struct guarded *g)
{
    if ((live_used + 1) * 4 > live_cap * 3) {
        size_t cap = live_cap ? live_cap * 2 : 256;
        struct guarded *fresh = hk_os_map(cap * sizeof *fresh);
        if (fresh == NULL)
            return false;
        for (size_t i = 0; i < live_cap; i++)
            if (live[i].base != 0)
                place(fresh, cap, &live[i]);
        struct guarded *old = live;
        size_t old_cap = live_cap;
        live = fresh;
        live_cap = cap;
        if (old != NULL)
            hk_os_unmap(old, old_cap * sizeof *old);
    }
    place(live, live_cap, g);
    live_used++;
    return true;
}

/* Remove the entry at e: the entries after it that probed past it move back. */
static void remove_live(struct guarded *e)
{
    size_t i = (size_t)(e - live), mask = live_cap - 1;
    live[i].base = 0;
    for (size_t j = (i + 1) & mask; live[j].base != 0; j = (j + 1) & mask) {
        size_t h = home(live[j].block, live_cap);
        /* j may fill the hole at i unless its home lies in (i, j]. */
        if (((j - h) & mask) >= ((j - i) & mask)) {
            live[i] = live[j];
            live[j].base = 0;
            i = j;
        }
    }
    live_used--;
}

/* A spare mapping of len data bytes, made accessible again; NULL if none. */
static char *take_spare(size_t len)
{
    uintptr_t base = 0;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < nspares; i++) {
        if (spares[i].len == len) {
            base = spares[i].base;
            spares[i] = spares[--nspares];
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (base != 0 && !hk_os_commit((void *)base, len)) {
        hk_os_unmap((void *)base, len + HK_OS_PAGE);
        base = 0;
    }
    return (char *)base;
}

void *hk_guard_alloc(size_t size, size_t align, bool zero, uint32_t site, size_t sampled)
{
    size_t a = align < 16 ? 16 : align;
    if (size > PTRDIFF_MAX - a - 2 * HK_OS_PAGE)
        return NULL;
    size_t rounded = (size + 15) & ~(size_t)15;
    size_t len = (rounded + HK_OS_PAGE - 1) & ~(size_t)(HK_OS_PAGE - 1);
    if (len == 0)
        len = HK_OS_PAGE;
    size_t mapped = len + HK_OS_PAGE;
    char *base = a <= HK_OS_PAGE && len <= SPARE_MAX_LEN ? take_spare(len) : NULL;
    bool fresh = base == NULL; /* fresh pages are zero */
    if (fresh) {
        base = hk_os_map_aligned(len + HK_OS_PAGE, a, &mapped);
        if (base == NULL)
            return NULL;
        if (!hk_os_protect(base + len, HK_OS_PAGE)) {
            hk_os_unmap(base, mapped);
            return NULL;
        }
    }
    struct guarded g = {.base = (uintptr_t)base, .len = len, .sampled = sampled, .site = site};
    g.block = ((uintptr_t)base + len - rounded) & ~(uintptr_t)(a - 1);
    g.size = (uintptr_t)base + len - g.block;
    /* A spare held a freed block: cleared for calloc, and always in the
     * hardened build, which never shows a freed block's bytes (its calloc
     * checks the zeros instead of writing them). */
    if ((zero || HK_SECURE_ON) && !fresh)
        memset((void *)g.block, 0, g.size);
    g.nalloc = (uint8_t)hk_stack_capture(g.alloc_pc, STACK);
    pthread_mutex_lock(&lock);
    bool ok = add_live(&g);
    pthread_mutex_unlock(&lock);
    if (!ok) {
        hk_os_unmap(base, mapped);
        return NULL;
    }
    return (void *)g.block;
}

/* Let the oldest quarantined blocks go (spares, or unmapped) until g's pages
 * fit.  Lock held. */
static void make_room(const struct guarded *g)
{
    while (q_count == QUARANTINE || (q_count > 0 && q_bytes + g->len > QUARANTINE_BYTES)) {
        struct guarded *old = &quarantine[q_first];
        if (nspares < SPARES && old->len <= SPARE_MAX_LEN) {
            spares[nspares].base = old->base;
            spares[nspares++].len = old->len;
        } else {
            hk_os_unmap((void *)old->base, old->len + HK_OS_PAGE);
        }
        q_bytes -= old->len;
        old->base = 0;
        q_first = (q_first + 1) % QUARANTINE;
        q_count--;
    }
}

bool hk_guard_free(void *p, const char *call)
{
    if (!hk_guard_on)
        return false;
    uintptr_t free_pc[STACK];
    unsigned nfree = hk_stack_capture(free_pc, STACK);
    pthread_mutex_lock(&lock);
    struct guarded *e = find_live((uintptr_t)p);
    if (e == NULL) {
        for (unsigned i = 0; i < q_count; i++) {
            const struct guarded *q = &quarantine[(q_first + i) % QUARANTINE];
            if (q->block == (uintptr_t)p) {
                size_t size = q->size;
                pthread_mutex_unlock(&lock);
                hk_report("double free", call, p, size);
            }
        }
        pthread_mutex_unlock(&lock);
        return false;
    }
    struct guarded g = *e;
    remove_live(e);
    pthread_mutex_unlock(&lock);
    memcpy(g.free_pc, free_pc, nfree * sizeof *free_pc);
    g.nfree = (uint8_t)nfree;
    /* Inaccessible before it is seen in the quarantine, where a fault in
     * it is looked up; the system call without the lock, which the other
     * threads' guarded blocks want. */
    hk_os_protect((void *)g.base, g.len);
    pthread_mutex_lock(&lock);
    make_room(&g);
    quarantine[(q_first + q_count) % QUARANTINE] = g;
    q_count++;
    q_bytes += g.len;
    pthread_mutex_unlock(&lock);
    if (g.site != 0)
        hk_heap_sample_freed(g.site, g.sampled);
    return true;
}

size_t hk_guard_usable_size(const void *p)
{
    if (!hk_guard_on)
        return 0;
    pthread_mutex_lock(&lock);
    struct guarded *e = find_live((uintptr_t)p);
    size_t size = e != NULL ? e->size : 0;
    pthread_mutex_unlock(&lock);
    return size;
}

/* ---- faults -------------------------------------------------------------- */

static bool covers(const struct guarded *g, uintptr_t addr)
{
    return g->base != 0 && addr >= g->base && addr < g->base + g->len + HK_OS_PAGE;
}

/* The guarded block whose pages hold addr, live or quarantined; read without
 * the lock (a fault may come while it is held): a report, then death. */
static const struct guarded *fault_block(uintptr_t addr, bool *freed)
{
    for (unsigned i = 0; i < q_count; i++) {
        const struct guarded *q = &quarantine[(q_first + i) % QUARANTINE];
        if (covers(q, addr)) {
            *freed = true;
            return q;
        }
    }
    *freed = false;
    for (size_t i = 0; i < live_cap; i++)
        if (covers(&live[i], addr) && addr >= live[i].base + live[i].len)
            return &live[i];
    return NULL;
}

/* "    #i 0x... symbol+0x... (module+0x...)": addr2line reads the module's
 * offset. */
static void put_stack(const char *title, const uintptr_t *pc, unsigned n)
{
    struct hk_line l = {0};
    hk_line_str(&l, title);
    hk_line_write(&l);
    for (unsigned i = 0; i < n; i++) {
        hk_line_str(&l, "    #");
        hk_line_dec(&l, i);
        hk_line_str(&l, " ");
        hk_line_hex(&l, pc[i]);
        Dl_info info;
        /* pc - 1: a return address may be past the end of a noreturn call's
         * function. */
        if (symbol_of != NULL && symbol_of((void *)(pc[i] - 1), &info) != 0) {
            if (info.dli_sname != NULL) {
                hk_line_str(&l, " ");
                hk_line_str(&l, info.dli_sname);
                hk_line_str(&l, "+");
                hk_line_hex(&l, pc[i] - (uintptr_t)info.dli_saddr);
            }
            if (info.dli_fname != NULL) {
                hk_line_str(&l, " (");
                hk_line_str(&l, info.dli_fname);
                hk_line_str(&l, "+");
                hk_line_hex(&l, pc[i] - (uintptr_t)info.dli_fbase);
                hk_line_str(&l, ")");
            }
        }
        hk_line_str(&l, "\n");
        hk_line_write(&l);
    }
}

static const char *access_of(void *ctx)
{
#if defined(__x86_64__)
    /* The page fault's error code: bit 1 set for a write. */
    const ucontext_t *uc = ctx;
    return uc->uc_mcontext.gregs[REG_ERR] & 2 ? "write" : "read";
#else
    (void)ctx;
    return "access";
#endif
}

static void report(const struct guarded *g, bool freed, uintptr_t addr, void *ctx)
{
    uintptr_t end = g->block + g->size;
    struct hk_line l = {0};
    hk_line_str(&l, "hakmem: ");
    hk_line_str(&l, addr >= end ? "heap-buffer-overflow" : "use-after-free");
    hk_line_str(&l, " at ");
    hk_line_hex(&l, addr);
    hk_line_str(&l, " : ");
    hk_line_str(&l, access_of(ctx));
    hk_line_str(&l, " ");
    if (addr >= end) {
        hk_line_dec(&l, addr - end);
        hk_line_str(&l, " bytes past the end of");
    } else if (addr >= g->block) {
        hk_line_dec(&l, addr - g->block);
        hk_line_str(&l, " bytes into");
    } else {
        hk_line_dec(&l, g->block - addr);
        hk_line_str(&l, " bytes before the start of");
    }
    hk_line_str(&l, " a ");
    hk_line_dec(&l, g->size);
    hk_line_str(&l, "-byte block at ");
    hk_line_hex(&l, g->block);
    hk_line_str(&l, "\n");
    hk_line_write(&l);
    put_stack("  allocated at:\n", g->alloc_pc, g->nalloc);
    if (freed)
        put_stack("  freed at:\n", g->free_pc, g->nfree);
}

static void on_fault(int sig, siginfo_t *info, void *ctx)
{
    struct sigaction *old = &replaced[sig == SIGBUS];
    /* Only a fault (si_code > 0) has an address: a signal sent by kill,
     * raise or sigqueue is the program's, whatever si_addr's bytes hold. */
    bool fault = info->si_code > 0;
    bool freed;
    const struct guarded *g = fault ? fault_block((uintptr_t)info->si_addr, &freed) : NULL;
    if (g != NULL) {
        report(g, freed, (uintptr_t)info->si_addr, ctx);
        /* The default action; the access, made again on return, kills the
         * process with this signal, as without hakmem. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        return;
    }
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, info, ctx);
    } else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else if (fault) {
        sigaction(sig, old, NULL); /* the fault comes again, handled as before */
    } else if (old->sa_handler == SIG_DFL) {
        /* A sent signal comes only once: restored to the default, it is
         * sent again, and kills as it would have once this handler returns
         * (the signal is blocked until then). */
        sigaction(sig, old, NULL);
        raise(sig);
    } /* else ignored, as it was */
}

void hk_guard_start(void)
{
    symbol_of = (int (*)(const void *, Dl_info *))dlsym(RTLD_DEFAULT, "dladdr");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &replaced[0]);
    sigaction(SIGBUS, &sa, &replaced[1]);
    hk_guard_on = true;
}

void hk_guard_fork_lock(void)
{
    pthread_mutex_lock(&lock);
}

void hk_guard_fork_unlock(bool child)
{
    if (child)
        pthread_mutex_init(&lock, NULL);
    else
        pthread_mutex_unlock(&lock);
}
