/*
 * The program the heap profiler's tests run (tests/heap/heap.sh), one mode
 * per argument:
 *   sites    three sites of known sizes, the last leaking (1 GiB of 16 KiB
 *            blocks, 1 GiB of 256 KiB blocks, 128 MiB of 2 MiB blocks: the
 *            blocks are not touched, so they cost address space, not memory)
 *   small    one site of 64-byte blocks (64 MiB), live at exit
 *   interleaved  64 MiB of 64-byte blocks, live at exit, between 16 KiB
 *            blocks allocated and freed (64 times the bytes)
 *   handoff  main allocates 64 MiB of 64-byte blocks; a thread frees each
 *            and allocates one of its own at its site (reusing main's
 *            blocks where it freed them), live at exit; main's all freed
 *   exchange two threads take turns over two sets of 64-byte blocks, each
 *            replacing two thirds of a set's blocks (its own and the other's) a
 *            round, so that each frees both threads' blocks, as a server's
 *            do; in the last round each replaces a whole set: 32 MiB live
 *            at exit at each thread's site
 *   exchange-bulk  the same, but a thread frees all it replaces in a round
 *            before it allocates any, so that its lists overflow
 *   busy     allocations before main, in 8 threads (freed by others too),
 *            in a forked child, a dump on SIGUSR2 and one on a call
 *   signal   prints whether SIGUSR2 has a handler
 *   slots    (every allocation a sample) blocks of every class: usable
 *            sizes, realloc keeps the bytes, aligned_alloc's alignment, frees
 *            by another thread; "slots double" and "slots inside" then
 *            free a block twice, or 16 bytes into it (must abort)
 *   span     (every allocation a sample) blocks of 64-512 KiB, a few at a
 *            time: the span blocks that are their own samples keep to the
 *            span pages' memory and behave as unprofiled (bytes, usable
 *            sizes, realloc, frees by another thread); six kept to exit at
 *            site_span_kept; "span double" and "span inside" must abort
 *   killed   as small, then SIGKILL: no exit dump, only those made on the way
 *   grow     a buffer grown by realloc from 1 MiB to 128 MiB, 1 MiB a step,
 *            each new MiB written, live at exit: the kernel moves its pages
 *            (mremap), so the process takes about one page fault per page
 *            written, not one per page copied at every step (8 GiB); it
 *            checks that itself, from its own page faults, with transparent
 *            huge pages off (a copy into huge pages faults 512 times less)
 *   waves    four waves of 3 threads, each thread allocating 64 blocks of
 *            128 KiB, writing every page and freeing them as it ends; with
 *            "waves faults" (run with every allocation a sample, so that
 *            each block is a sample slot), the last three waves must take
 *            at most a quarter of the first one's page faults: a freed
 *            slot's memory serves the next wave's
 *   trim     large blocks written whole, allocated and freed (about every
 *            other one a sample, so free sample slots gather); after
 *            malloc_trim the process holds at most 2 MiB more than before
 * Each prints what it did on stdout, the same with the profiler on or off.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void **kept;
static size_t nkept;

/* Not inlined, and not a tail call: each is a frame of its own. */
__attribute__((noinline)) static void site_medium(void)
{
    kept[nkept++] = malloc(16384);
}

__attribute__((noinline)) static void site_large(void)
{
    kept[nkept++] = malloc(262144);
}

__attribute__((noinline)) static void leak_huge(void)
{
    void *p = malloc((size_t)2 << 20);
    __asm__ volatile("" : : "r"(p) : "memory"); /* leaked, on purpose */
}

__attribute__((noinline)) static void site_small(void)
{
    kept[nkept++] = malloc(64);
}

static void sites(void)
{
    kept = malloc(80000 * sizeof *kept);
    for (int i = 0; i < 65536; i++)
        site_medium();
    for (int i = 0; i < 4096; i++)
        site_large();
    for (int i = 0; i < 64; i++)
        leak_huge();
    for (size_t i = 0; i < nkept; i++)
        free(kept[i]);
    free(kept);
    printf("sites: 1 GiB of 16 KiB, 1 GiB of 256 KiB, 128 MiB leaked in 2 MiB blocks\n");
}

static void small(void)
{
    kept = malloc((1 << 20) * sizeof *kept);
    for (int i = 0; i < 1 << 20; i++)
        site_small();
    printf("small: 64 MiB in 64-byte blocks\n");
}

/* The process's page faults so far, its threads' included. */
static long minor_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

__attribute__((noinline)) static char *site_grow(char *p, size_t size)
{
    char *q = realloc(p, size);
    __asm__ volatile("" : : "r"(q) : "memory"); /* not a tail call: a frame */
    return q;
}

static int grow(void)
{
    const size_t step = (size_t)1 << 20, total = (size_t)128 << 20;
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    long before = minor_faults();
    char *p = NULL;
    for (size_t size = step; size <= total; size += step) {
        p = site_grow(p, size);
        if (p == NULL) {
            printf("grow: realloc to %zu bytes failed\n", size);
            return 1;
        }
        memset(p + size - step, (int)(size / step), step);
    }
    long faults = minor_faults() - before, most = 2 * (long)(total >> 12);
    for (size_t size = step; size <= total; size += step)
        if (p[size - 1] != (char)(size / step)) {
            printf("grow: byte %zu lost\n", size - 1);
            return 1;
        }
    /* Copied at every step, the faults would be about Sum(k) MiB / 4 KiB, 2.1 M. */
    if (faults > most) {
        printf("grow: %ld page faults for 128 MiB written, more than %ld\n", faults, most);
        return 1;
    }
    kept = (void **)p; /* live at exit */
    printf("grow: 128 MiB grown by realloc 1 MiB at a time\n");
    return 0;
}

__attribute__((noinline)) static void site_passing(void)
{
    void *p = malloc(16384);
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
}

static void interleaved(void)
{
    kept = malloc((1 << 20) * sizeof *kept);
    for (int i = 0; i < 1 << 20; i++) {
        site_small();
        if (i % 4 == 0)
            site_passing();
    }
    printf("interleaved: 64 MiB in 64-byte blocks, 4 GiB in 16 KiB blocks freed\n");
}

__attribute__((noinline)) static void site_handed(size_t i)
{
    kept[i] = malloc(64);
}

__attribute__((noinline)) static void site_reused(size_t i)
{
    free(kept[i]);
    kept[i] = malloc(64);
}

static void *reuse_all(void *arg)
{
    (void)arg;
    for (size_t i = 0; i < nkept; i++)
        site_reused(i);
    return NULL;
}

static void handoff(void)
{
    nkept = 1 << 20;
    kept = malloc(nkept * sizeof *kept);
    for (size_t i = 0; i < nkept; i++)
        site_handed(i);
    pthread_t t;
    pthread_create(&t, NULL, reuse_all, NULL);
    pthread_join(t, NULL);
    printf("handoff: 64 MiB in 64-byte blocks, each replaced by another thread\n");
}

#define EXCHANGE_SET ((size_t)1 << 19)
#define EXCHANGE_ROUNDS 8
static void **exchange_sets[2];
static pthread_barrier_t exchange_barrier;
static size_t exchanged[2]; /* the sites' bodies differ, so that none is folded into the other */

__attribute__((noinline)) static void site_left(void **slot)
{
    *slot = malloc(64);
    exchanged[0]++;
}

__attribute__((noinline)) static void site_right(void **slot)
{
    *slot = malloc(64);
    exchanged[1]++;
}

static bool exchange_in_bulk;

/* Block i of the set is replaced in round r. */
static bool exchange_replaces(unsigned r, size_t i)
{
    return r == EXCHANGE_ROUNDS - 1 || i % 3 != r % 3;
}

static void exchange_alloc(uintptr_t t, void **slot)
{
    if (t == 0)
        site_left(slot);
    else
        site_right(slot);
}

static void *exchange_worker(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    for (unsigned r = 0; r < EXCHANGE_ROUNDS; r++) {
        void **set = exchange_sets[(t + r) % 2];
        for (size_t i = 0; i < EXCHANGE_SET; i++) {
            if (!exchange_replaces(r, i))
                continue;
            free(set[i]);
            if (!exchange_in_bulk)
                exchange_alloc(t, &set[i]);
        }
        for (size_t i = 0; exchange_in_bulk && i < EXCHANGE_SET; i++)
            if (exchange_replaces(r, i))
                exchange_alloc(t, &set[i]);
        pthread_barrier_wait(&exchange_barrier);
    }
    return NULL;
}

static void exchange(bool in_bulk)
{
    exchange_in_bulk = in_bulk;
    pthread_barrier_init(&exchange_barrier, NULL, 2);
    for (int s = 0; s < 2; s++)
        exchange_sets[s] = calloc(EXCHANGE_SET, sizeof(void *));
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, exchange_worker, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("exchange%s: two sets of 32 MiB in 64-byte blocks, passed between two threads\n",
           in_bulk ? " in bulk" : "");
}

/* ---- busy ---- */

static void *early[256];

__attribute__((constructor)) static void before_main(void)
{
    for (int i = 0; i < 256; i++)
        early[i] = malloc(4096);
}

#define THREADS 8
#define SLOTS 1024
static void *_Atomic shared[THREADS][SLOTS];

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg, x = id * 2654435761u + 1;
    for (int round = 0; round < 100000; round++) {
        x = x * 1103515245 + 12345;
        unsigned slot = (x >> 8) % SLOTS, owner = (x >> 20) % THREADS;
        size_t size = (x >> 4) % 5 == 0 ? 16 + (x >> 12) % 40000 : 16 + (x >> 12) % 512;
        if ((x >> 24) % 97 == 0)
            size = (size_t)1 << 20;
        /* Take a block from any thread's slots (a free by another thread),
         * and leave a new one in this thread's. */
        free(atomic_exchange(&shared[owner][slot], NULL));
        void *p = (x >> 28) % 3 == 0 ? calloc(1, size) : malloc(size);
        memset(p, (int)id, size < 64 ? size : 64);
        if ((x >> 16) % 7 == 0)
            p = realloc(p, size * 2);
        free(atomic_exchange(&shared[id][slot], p));
    }
    return NULL;
}

static void busy(void)
{
    pthread_t t[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    pid_t child = fork(); /* while the threads allocate */
    if (child == 0) {
        void *p[1000];
        for (int i = 0; i < 1000; i++)
            p[i] = malloc(1000 + i * 100);
        for (int i = 0; i < 1000; i++)
            free(p[i]);
        exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    raise(SIGUSR2);
    int (*dump)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "hak_heap_profile_dump");
    int dumped = dump != NULL ? dump() : -1;
    for (unsigned i = 0; i < THREADS; i++)
        for (unsigned j = 0; j < SLOTS; j++)
            free(shared[i][j]);
    for (int i = 0; i < 256; i++)
        free(early[i]);
    printf("busy: child exit %d, dump %s\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           dumped == 0 ? "written" : getenv("HAKMEM_HEAP_PROFILE") ? "FAILED" : "off");
}

/* ---- trim ---- */

static long resident_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

#define WAVE_THREADS 3
#define WAVE_BLOCKS 64
#define WAVE_BLOCK ((size_t)128 << 10)

__attribute__((noinline)) static void *site_wave(void)
{
    return malloc(WAVE_BLOCK);
}

static char wave_failed; /* a worker's result when malloc failed */

static void *wave_worker(void *arg)
{
    (void)arg;
    void *b[WAVE_BLOCKS];
    for (int i = 0; i < WAVE_BLOCKS; i++) {
        b[i] = site_wave();
        if (b[i] == NULL)
            return &wave_failed;
        for (size_t off = 0; off < WAVE_BLOCK; off += 4096)
            ((char *)b[i])[off] = (char)i;
    }
    for (int i = 0; i < WAVE_BLOCKS; i++)
        free(b[i]);
    return NULL;
}

/* Page faults of one wave of threads (their stacks are glibc's, reused). */
static long wave(void)
{
    long before = minor_faults();
    pthread_t t[WAVE_THREADS];
    for (int i = 0; i < WAVE_THREADS; i++)
        pthread_create(&t[i], NULL, wave_worker, NULL);
    bool failed = false;
    for (int i = 0; i < WAVE_THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        failed |= r != NULL;
    }
    return failed ? -1 : minor_faults() - before;
}

static int waves(bool check_faults)
{
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); /* faults by 4 KiB: the count shows reuse */
    long faults[4];
    for (int i = 0; i < 4; i++)
        if ((faults[i] = wave()) < 0) {
            printf("waves: malloc failed\n");
            return 1;
        }
    long first = faults[0], later = faults[1] + faults[2] + faults[3];
    if (check_faults && later > first / 4) {
        printf("waves: the first wave took %ld page faults, the next three %ld: more than a quarter\n",
               first, later);
        return 1;
    }
    printf("waves: 4 waves of %d threads, %d blocks of 128 KiB each\n", WAVE_THREADS, WAVE_BLOCKS);
    return 0;
}

static int trim(void)
{
    void *live[8] = {0};
    long before = resident_kib();
    for (unsigned i = 0; i < 4000; i++) {
        size_t size = (256 + (i * 37) % 240) << 10;
        free(live[i % 8]);
        live[i % 8] = malloc(size);
        memset(live[i % 8], (int)i, size);
    }
    for (unsigned i = 0; i < 8; i++)
        free(live[i]);
    malloc_trim(0);
    long after = resident_kib();
    bool ok = before > 0 && after - before <= 2048;
    printf("trim: resident after malloc_trim %s\n", ok ? "as before" : "grew");
    if (!ok)
        fprintf(stderr, "trim: %ld KiB before, %ld KiB after\n", before, after);
    return ok ? 0 : 1;
}

/* ---- slots ---- */

/* A block of `size` bytes freed twice ("double") or `inside` bytes into
 * it: hakmem must abort; 1 if it did not. */
static int misused(const char *mode, const char *misuse, size_t size, size_t inside)
{
    char *volatile p = malloc(size); /* volatile: the compiler sees no misuse */
    if (strcmp(misuse, "double") == 0)
        free(p);
    else
        p += inside;
    free(p);
    printf("%s: %s not caught\n", mode, misuse);
    return 1;
}

static void *free_all(void *arg)
{
    void **blocks = arg;
    for (unsigned i = 0; blocks[i] != NULL; i++)
        free(blocks[i]);
    return NULL;
}

static int slots(const char *misuse)
{
    static void *blocks[81];
    unsigned n = 0;
    for (size_t size = 16; size <= (size_t)600 << 10; size = size * 5 / 4 + 16) {
        unsigned char *p = malloc(size);
        if (p == NULL || malloc_usable_size(p) < size) {
            printf("slots: malloc(%zu) usable %zu\n", size, p ? malloc_usable_size(p) : 0);
            return 1;
        }
        memset(p, (int)(size & 255), size);
        p = realloc(p, size * 3 / 2);
        for (size_t i = 0; p != NULL && i < size; i++)
            if (p[i] != (unsigned char)(size & 255)) {
                printf("slots: realloc of %zu bytes lost byte %zu\n", size, i);
                return 1;
            }
        blocks[n++] = p;
    }
    for (size_t align = 32; align <= ((size_t)256 << 10); align *= 2) {
        void *p = aligned_alloc(align, align);
        if (p == NULL || (uintptr_t)p % align != 0) {
            printf("slots: aligned_alloc(%zu) gave %p\n", align, p);
            return 1;
        }
        free(p);
    }
    pthread_t t; /* half of them freed by another thread */
    pthread_create(&t, NULL, free_all, blocks + n / 2);
    pthread_join(t, NULL);
    blocks[n / 2] = NULL;
    free_all(blocks);
    printf("slots: %u sizes, aligned, freed here and there\n", n);
    return misuse != NULL ? misused("slots", misuse, 20000, 16) : 0;
}

/* ---- span ---- */

#define SPAN_ROUNDS 5000
#define SPAN_KEPT 6
#define SPAN_KEPT_SIZE 300000 /* a run of 19 slices of 16 KiB: 311,296 bytes */
#define SPAN_HANDED_SIZE 200000

/* Not tail calls: each is a frame of its own. */
__attribute__((noinline)) static void site_span_kept(void **slot)
{
    *slot = malloc(SPAN_KEPT_SIZE);
}

__attribute__((noinline)) static void site_span_handed(void **slot)
{
    *slot = malloc(SPAN_HANDED_SIZE);
}

__attribute__((noinline)) static void site_span_churn(void **slot, size_t size)
{
    *slot = malloc(size);
}

static bool filled(const unsigned char *p, size_t n, unsigned char c)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != c)
            return false;
    return true;
}

static void *span_hand_out(void *arg)
{
    void **handed = arg;
    for (unsigned i = 0; i < SPAN_KEPT; i++) {
        unsigned char *p;
        site_span_handed((void **)&p);
        memset(p, 7, SPAN_HANDED_SIZE);
        /* Down to three quarters and back up: the block stays, sampled. */
        p = realloc(p, SPAN_HANDED_SIZE * 3 / 4);
        p = realloc(p, SPAN_HANDED_SIZE);
        handed[i] = p != NULL && filled(p, SPAN_HANDED_SIZE * 3 / 4, 7) ? p : NULL;
    }
    return NULL;
}

/* Run with every allocation a sample: blocks of 64-512 KiB, a few at a
 * time, are span blocks (span_page.c) that stay in their span page as the
 * sample.  Eight slots replaced at random, written whole, keep to the
 * memory of span pages (a stand-in of its own for each took twice it);
 * the blocks read back, their usable sizes, realloc, frees by another
 * thread; "span double" and "span inside" then free one twice, or a
 * slice into it (must abort).  At exit site_span_kept holds its six
 * blocks, site_span_handed and site_span_churn none. */
static int span(const char *misuse)
{
    prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); /* resident memory by 4 KiB */
    unsigned char *slot[8] = {0};
    size_t slot_size[8] = {0};
    uint64_t rng = 42;
    long before = resident_kib(), peak = before;
    for (unsigned i = 0; i < SPAN_ROUNDS; i++) {
        unsigned k = i % 8;
        if (slot[k] != NULL && !filled(slot[k], slot_size[k], (unsigned char)k)) {
            printf("span: a block lost its bytes\n");
            return 1;
        }
        free(slot[k]);
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        slot_size[k] = ((size_t)64 << 10) + (rng >> 33) % ((size_t)448 << 10);
        site_span_churn((void **)&slot[k], slot_size[k]);
        if (slot[k] == NULL || malloc_usable_size(slot[k]) < slot_size[k]) {
            printf("span: malloc(%zu) failed or short\n", slot_size[k]);
            return 1;
        }
        memset(slot[k], (int)k, slot_size[k]);
        if (i % 1000 == 999) {
            long now = resident_kib();
            peak = now > peak ? now : peak;
        }
    }
    for (unsigned k = 0; k < 8; k++)
        free(slot[k]);
    if (peak - before > 7 * 1024) {
        printf("span: resident memory grew %ld KiB, more than 7 MiB\n", peak - before);
        return 1;
    }
    /* A thread that ends allocates them, this one frees them: its heap,
     * abandoned, takes them back only when another thread adopts it, and
     * the profile must not wait for that. */
    void *kept[SPAN_KEPT], *handed[SPAN_KEPT + 1] = {0};
    pthread_t t;
    pthread_create(&t, NULL, span_hand_out, handed);
    pthread_join(t, NULL);
    for (unsigned i = 0; i < SPAN_KEPT; i++) {
        if (handed[i] == NULL) {
            printf("span: realloc lost the bytes\n");
            return 1;
        }
        free(handed[i]);
        site_span_kept(&kept[i]);
        memset(kept[i], 9, SPAN_KEPT_SIZE);
    }
    for (unsigned i = 0; i < SPAN_KEPT; i++)
        if (!filled(kept[i], SPAN_KEPT_SIZE, 9)) {
            printf("span: a kept block lost its bytes\n");
            return 1;
        }
    printf("span: %d blocks of 64-512 KiB, %d kept, %d freed by another thread\n", SPAN_ROUNDS,
           SPAN_KEPT, SPAN_KEPT);
    return misuse != NULL ? misused("span", misuse, SPAN_KEPT_SIZE, 16384) : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "sites") == 0) {
        sites();
    } else if (strcmp(mode, "small") == 0) {
        small();
    } else if (strcmp(mode, "killed") == 0) {
        small();
        fflush(stdout);
        raise(SIGKILL);
    } else if (strcmp(mode, "interleaved") == 0) {
        interleaved();
    } else if (strcmp(mode, "handoff") == 0) {
        handoff();
    } else if (strcmp(mode, "exchange") == 0) {
        exchange(false);
    } else if (strcmp(mode, "exchange-bulk") == 0) {
        exchange(true);
    } else if (strcmp(mode, "busy") == 0) {
        busy();
    } else if (strcmp(mode, "grow") == 0) {
        return grow();
    } else if (strcmp(mode, "waves") == 0) {
        return waves(argc > 2 && strcmp(argv[2], "faults") == 0);
    } else if (strcmp(mode, "trim") == 0) {
        return trim();
    } else if (strcmp(mode, "slots") == 0) {
        return slots(argc > 2 ? argv[2] : NULL);
    } else if (strcmp(mode, "span") == 0) {
        return span(argc > 2 ? argv[2] : NULL);
    } else if (strcmp(mode, "signal") == 0) {
        struct sigaction sa;
        sigaction(SIGUSR2, NULL, &sa);
        printf("SIGUSR2: %s\n", sa.sa_handler == SIG_DFL ? "default" : "handled");
    } else {
        fprintf(stderr, "usage: profiled sites|small|killed|interleaved|handoff|exchange|exchange-bulk|busy|signal|grow|waves|trim|slots|span\n");
        return 2;
    }
    return 0;
}
