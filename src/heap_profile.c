/*
 * Sample points, and the heap profiler (HAKMEM_HEAP_PROFILE=<path prefix>):
 * which call stacks hold the memory.  About one allocation per
 * HAKMEM_HEAP_SAMPLE bytes (512 KiB by default) is sampled: its stack and
 * size are recorded, and its free removes them.  The points are a Poisson
 * process over the bytes each thread allocates (exponential intervals), so
 * every allocation is sampled with probability 1 - exp(-size / mean),
 * whatever its size or site.
 *
 * Nothing of this runs on malloc's and free's fast paths.  A thread's small
 * blocks come from its TLS lists, so they are counted as they enter them: a
 * refill hands the list only the blocks that end before the next sample
 * point and gives the others back to the page, and another heap's block
 * freed here is kept for reuse only if it ends before the point (else it
 * goes home: remote.c); the malloc that reaches the point refills again,
 * and is sampled.  Its bytes are the class's block size (a refill does
 * not know the requested size).  Medium and large allocations come here at
 * a point only, where the heap's trim budget ends (hk_sample_arm,
 * internal.h); huge ones from hk_huge_alloc.  A sampled allocation of a
 * class is served by a sample slot that carries its site (sample_slot.c;
 * where there is none, by a huge block that does: huge.c), so that its
 * free, realloc and usable size find it there, on their slow paths, in
 * any thread.
 *
 * Guarded allocations (HAKMEM_GUARD_SAMPLE=N, guard.c) use the same points,
 * counted in blocks instead of bytes: about one block in N, at geometric
 * intervals, is a guard point.  A point may be profiled, guarded or both;
 * a guarded block is guard.c's, which keeps the profiler's record with it.
 *
 * Dumps (at exit, on SIGUSR2, on hak_heap_profile_dump(), and as the
 * sampled live bytes pass a new peak) are the legacy heap-profile text that
 * pprof reads, with raw sample counts (heap_v2: pprof scales them) and the
 * process's maps for symbolization (hakmem heap does it, bin/hakmem).  They
 * are written with async-signal-safe calls only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "hakmem.h"
#include "internal.h"
#include "lock.h"
#include "sample_slot.h"
#include "stats.h"

#define DEPTH 64              /* frames kept per stack */
#define MAX_SITES (1u << 16)  /* distinct stacks; more are not recorded */
#define INDEX_SIZE (MAX_SITES * 2)
#define PEAK_STEP_PCT 125     /* a peak dump when live passes 125% of the last */
/* ... and once live has reached this many sample means (16 MiB by
 * default).  Below, the exit dump's peak (exact) is the one that counts: a
 * dump costs 0.1-0.5 ms (a file written and renamed), and large-5m, a
 * 14 ms run whose live bytes reach about 20 MiB, spent 12% of its time on
 * the three it wrote from 2 MiB up. */
#define PEAK_DUMP_MIN_MEANS 32
/* Peak dumps while the program runs, at most one a second unless live
 * bytes have doubled since the last: each writes the whole profile and the
 * maps (large-5m, 14 ms, made 9 of them, 11% of its time).  A program
 * killed (out of memory, say) leaves a dump of at least half its last peak
 * or from its last second.  The sites keep their counts at the last peak
 * (keep_peak), so a dump held back writes the same when it comes: at a
 * sample after its second (PEAK_CLOCK_EVERY), or at exit. */
#define PEAK_DUMP_MS 1000
/* While one is held back, the clock is read at every 8th sample only (or
 * when live bytes have doubled): at every sample its reads were 5% of a
 * profiled random-mixed-medium's extra time. */
#define PEAK_CLOCK_EVERY 8

bool hk_heap_sampling;
static bool profiling;

struct site {
    uint64_t hash;
    uint32_t depth;
    uint32_t gen;  /* peak generation when its counts last changed */
    /* Raw sampled counts and bytes: live, at the last peak, ever allocated.
     * Each count apart from its bytes: side by side, gcc made a sample's
     * and a free's updates of the live ones (and keep_peak's copy) vector
     * operations, 10 instructions more. */
    uint64_t live_n, peak_n, live_bytes, peak_bytes, alloc_n, alloc_bytes;
    uintptr_t pc[DEPTH];
};

/* The lock, held for a few hundred instructions at each sample from every
 * thread (it spins before it sleeps: lock.h), and what each sample writes
 * under it, on cache lines of their own: the settings below, which every
 * thread reads without the lock, stay put in each core's cache while the
 * lock moves between cores. */
static struct __attribute__((aligned(64))) {
    struct hk_lock lock;
    uint32_t nsites;
    uint32_t peak_gen;   /* counts when live_est last rose to a peak */
    uint64_t dropped;    /* samples not recorded: the table was full */
    double live_est;     /* sampled live bytes, scaled to all bytes */
    double peak_est;
    double peak_dumped;  /* live_est of the last peak dump written */
    bool peak_pending;   /* a peak dump is held back until peak_dump_at */
    uint8_t clock_skip;  /* samples before the clock is read again */
    uint64_t peak_dump_at;
} held = {.lock = HK_LOCK_INIT, .nsites = 1};
static struct site *sites;  /* sites[0] is unused: a site id is never 0 */
static uint32_t *site_index; /* hash -> site id, open addressing */
static double mean;          /* bytes between samples */
/* The two kinds of point: index 0 profiled (counted in bytes), 1 guarded
 * (counted in blocks); what a point is, as HK_SAMPLE_* bits: 1 << kind. */
enum { PROFILED, GUARDED, KINDS };
static double scale[KINDS]; /* an interval is -log2(u) * scale, + 1 if guarded */
static bool kind_on[KINDS];
static unsigned dump_seq;
static volatile sig_atomic_t dump_wanted; /* SIGUSR2 came while locked */
static uintptr_t own_lo, own_hi; /* libhakmem's code, when it is a library */

struct prof_tls {
    uint64_t rng;
    bool started;
    uint32_t until_check; /* captures before the next one is checked the slow way */
    uint32_t check_gap;   /* captures between checks (capture) */
    uintptr_t stack_top; /* the CFA of the thread's outermost frame, or above it */
    bool busy;        /* in the profiler: its own allocations are not sampled */
};
static __thread struct prof_tls prof __attribute__((tls_model("initial-exec")));

/* ---- numbers: no libm, so that static programs need not link it -------- */

/* ln x for a normal x > 0, for the tables and constants made at start: x =
 * m 2^k with m in [sqrt(1/2), sqrt(2)) (adding 1.0's bits less sqrt(1/2)'s
 * carries into the exponent just when m passes sqrt(2)); ln m = 2 atanh z,
 * z = (m - 1) / (m + 1), |z| < 0.172, by its series to z^9 (what is left
 * out is below 3e-9 of the result). */
static double ln(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits += 0x3FF0000000000000ull - 0x3FE6A09E667F3BCDull;
    int k = (int)(bits >> 52) - 0x3FF;
    bits = (bits & 0x000FFFFFFFFFFFFFull) + 0x3FE6A09E667F3BCDull;
    double m;
    memcpy(&m, &bits, sizeof m);
    double z = (m - 1) / (m + 1), z2 = z * z, z4 = z2 * z2;
    double sum = (1 + z2 * (1.0 / 3)) + z4 * ((1.0 / 5 + z2 * (1.0 / 7)) + z4 * (1.0 / 9));
    return 2 * z * sum + k * 0.69314718055994530942;
}

/* 1 - exp(-t), t >= 0, without cancellation for small t: below 1/8
 * (every block up to a 64 KiB sample mean) by its series to t^8 / 8! (the
 * rest is below 1e-13 of it); above, 1 less exp(-t/64) by its series,
 * then ^64 (1 - exp(-t) is 0.11 or more there: little cancels). */
static double one_minus_exp_neg(double t)
{
    if (t > 40)
        return 1;
    if (t < 1.0 / 8)
        return t * (1 - t * (1.0 / 2) * (1 - t * (1.0 / 3) * (1 - t * (1.0 / 4) *
               (1 - t * (1.0 / 5) * (1 - t * (1.0 / 6) * (1 - t * (1.0 / 7) *
               (1 - t * (1.0 / 8))))))));
    double x = t / 64, term = 1, e = 1;
    for (int i = 1; i < 12; i++) {
        term *= -x / i;
        e += term;
    }
    for (int i = 0; i < 6; i++)
        e *= e;
    return 1 - e;
}

/* What a sample of `size` bytes stands for: size / P(sampled).  Sizes
 * repeat, so the last ones are kept; the profiler's lock is held. */
static double weight(uint64_t size)
{
    static struct {
        uint64_t size;
        double weight;
    } known[64];
    unsigned i = (unsigned)((size * 0x9E3779B97F4A7C15ull) >> 58);
    if (known[i].size != size) {
        known[i].size = size;
        known[i].weight = (double)size / one_minus_exp_neg((double)size / mean);
    }
    return known[i].weight;
}

/* The weights of the classes' blocks, made as profiling starts. */
static double class_weight[HK_NCLASSES];

/* The weight of a block of class cls (0: of no class, `size` bytes); lock
 * held. */
static double block_weight(unsigned cls, uint64_t size)
{
    return cls != 0 ? class_weight[cls] : weight(size);
}

static uint64_t next_random(struct prof_tls *t)
{
    uint64_t z = (t->rng += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* log2(1 + i / LOG2_STEPS), i = 0 .. LOG2_STEPS (filled by log2_table_fill). */
#define LOG2_STEPS 128
static double log2_table[LOG2_STEPS + 1];

static void log2_table_fill(void)
{
    for (unsigned i = 0; i <= LOG2_STEPS; i++)
        log2_table[i] = ln(1 + (double)i / LOG2_STEPS) * 1.44269504088896340736;
}

/* -log2(u) for u = r / 2^64 (r = 0 is taken for 1), with no division: u is
 * 2^-(e+1) (1 + f), f in [0, 1), so -log2(u) = e + 1 - log2(1 + f), the
 * last by the table and a straight line between its steps.  log2 is
 * concave: the line errs by at most 1.1e-5, low.  A sample's draw took 80
 * instructions with ln's division and series (random-mixed 4-32 KiB,
 * profiled). */
static double neg_log2_uniform(uint64_t r)
{
    r |= 1;
    unsigned e = (unsigned)__builtin_clzll(r);
    uint64_t f = r << e << 1; /* the bits after the leading 1: f 2^64 */
    unsigned i = (unsigned)(f >> 57);
    double within = (double)(f << 7 >> 11) * 0x1p-53; /* where f lies in step i */
    double lg = log2_table[i] + (log2_table[i + 1] - log2_table[i]) * within;
    return (double)(e + 1) - lg;
}

/* Bytes to the next profiled point: exponential with mean `mean`; blocks to
 * the next guarded one: geometric with mean N (1 + the floor of an
 * exponential scaled by 1 / -ln(1 - 1/N); every block when N is 1). */
static int64_t interval(struct prof_tls *t, unsigned kind)
{
    double x = neg_log2_uniform(next_random(t)) * scale[kind] + (kind == GUARDED);
    return x < 1 ? 1 : x > 1e15 ? (int64_t)1e15 : (int64_t)x;
}

/* The thread's first visit: seeded per thread, in the order threads come
 * (the same program gives the same samples), and a first interval. */
static struct prof_tls *prof_state(void)
{
    static _Atomic uint64_t threads;
    struct prof_tls *t = &prof;
    if (!t->started) {
        t->started = true;
        t->rng = 0x6A09E667F3BCC909ull * (atomic_fetch_add(&threads, 1) + 1);
        hk_tls.sample.ticks = HK_TRIM_BYTES;
        hk_tls.sample.every_block = kind_on[GUARDED];
        for (unsigned k = 0; k < KINDS; k++) /* a kind that is off: never */
            hk_tls.sample.left[k] = kind_on[k] ? interval(t, k) : INT64_MAX;
    }
    return t;
}

/* What a block of `size` bytes counts for, in a kind's units. */
static uint64_t units(unsigned kind, uint64_t size)
{
    return kind == PROFILED ? size : 1;
}

/* A block holds a point of the kind (one or more): the interval to the
 * next one starts where it ends, and is a fresh draw, since the intervals
 * are memoryless (exponential in bytes, geometric in blocks): what is left
 * of the ones the block spans is distributed as a new one.  (Drawn
 * interval after interval until past the block's end, a 5 MiB block took
 * ten draws at the default mean: large-5m profiled ran 7.64 M
 * instructions, 7.27 M now, 6.36 M unprofiled.) */
static void passed_point(struct prof_tls *t, unsigned kind)
{
    hk_tls.sample.left[kind] = interval(t, kind);
}

/* Count one block of `size` bytes for the kinds in `mask`: the points it
 * holds (HK_SAMPLE_* bits). */
static inline __attribute__((always_inline)) unsigned count_block(struct prof_tls *t, uint64_t size, unsigned mask)
{
    unsigned what = 0;
    for (unsigned k = 0; k < KINDS; k++) {
        if (!(mask & 1u << k))
            continue;
        if ((uint64_t)hk_tls.sample.left[k] > units(k, size)) {
            hk_tls.sample.left[k] -= (int64_t)units(k, size);
        } else {
            passed_point(t, k);
            what |= 1u << k;
        }
    }
    return what;
}

/* ---- stacks -------------------------------------------------------------- */

/* The stack, from the caller of the malloc family: hakmem's frames are left
 * out when it is a shared library; linked into the program, they stay (the
 * launcher drops them by name).  glibc's backtrace loads libgcc_s and
 * allocates on its first call, which hk_heap_profile_start makes; after it,
 * it only reads the FDEs (through dl_iterate_phdr). */
static unsigned keep_outside(const uintptr_t *frames, unsigned n, uintptr_t *pc)
{
    unsigned first = 0, kept = 0;
    while (first < n && frames[first] >= own_lo && frames[first] < own_hi)
        first++;
    for (unsigned i = first; i < n && kept < DEPTH; i++)
        pc[kept++] = frames[i];
    return kept;
}

#if defined(__x86_64__)
/*
 * The fast way, on x86-64.  backtrace interprets each frame's DWARF call
 * frame information in libgcc: some 2000 instructions a frame, most of a
 * sample's cost.  But a frame's return address lies just below its CFA, and
 * at a given return address the CFA is the stack pointer plus a constant,
 * in every function that does not move its stack pointer by a variable
 * amount (alloca).  So the constants are learnt, per return address, from
 * libgcc's own unwinder (of the libgcc_s glibc loaded) on the slow captures,
 * and known frames are then walked with one load each.  Some captures of a
 * thread (the 256th, then twice as far each time while the rules hold, up
 * to every 16384th; every one in the debug build) are made the slow way too
 * and compared: a return address whose constant is not one is left to the
 * slow way from then on, and the checks come every 256th again.  The walk
 * never reads above the thread's outermost frame, learnt the same way.
 */
#define RULES 8192 /* return addresses known */
enum { RULE_END = 1, RULE_SLOW = 2 }; /* the outermost frame; not a constant */
static _Atomic uint64_t *rules; /* ip << 16 | (CFA - SP) / 8 << 2 | RULE_* */
static _Atomic uint32_t rules_changed; /* rules made slow so far */
static _Unwind_Reason_Code (*uw_backtrace)(_Unwind_Trace_Fn, void *);
static uintptr_t (*uw_get_ip_info)(struct _Unwind_Context *, int *);
static uintptr_t (*uw_get_cfa)(struct _Unwind_Context *);

static _Atomic uint64_t *rule_slot(uintptr_t ip, bool *found)
{
    size_t i = (size_t)((ip * 0x9E3779B97F4A7C15ull) >> 40) & (RULES - 1);
    for (unsigned probe = 0; probe < 8; probe++, i = (i + 1) & (RULES - 1)) {
        uint64_t r = atomic_load_explicit(&rules[i], memory_order_relaxed);
        if (r == 0 || r >> 16 == ip) {
            *found = r != 0;
            return &rules[i];
        }
    }
    return NULL; /* its neighbourhood is full: not cached */
}

/* What a slow capture saw at return address ip: CFA - SP = delta; `end`:
 * its frame was the outermost. */
static void learn(uintptr_t ip, uintptr_t delta, bool end)
{
    bool found;
    _Atomic uint64_t *slot = rule_slot(ip, &found);
    if (slot == NULL || ip >= (uintptr_t)1 << 48)
        return;
    uint64_t r = ip << 16 | (end ? RULE_END : 0);
    if (delta % 8 != 0 || delta / 8 >= 1u << 14)
        r |= RULE_SLOW;
    else
        r |= (uint64_t)(delta / 8) << 2;
    uint64_t old = 0;
    if (!found && atomic_compare_exchange_strong(slot, &old, r))
        return;
    old = atomic_load_explicit(slot, memory_order_relaxed);
    if (old >> 16 == ip && old != r && !(old & RULE_SLOW)) {
        atomic_store_explicit(slot, old | RULE_SLOW, memory_order_relaxed);
        atomic_fetch_add_explicit(&rules_changed, 1, memory_order_relaxed);
    }
}

/* The slow walk's frames: capture_walk's and capture's (unless the call
 * from one to the other was a tail call), then at least as many as the
 * fast walk's. */
#define SLOW_FRAMES (DEPTH + 16 + 2)
struct slow_walk {
    uintptr_t ip[SLOW_FRAMES], cfa[SLOW_FRAMES]; /* cfa: see capture_walk */
    unsigned n;
    bool cut; /* stopped before the outermost frame */
};

static _Unwind_Reason_Code slow_frame(struct _Unwind_Context *ctx, void *arg)
{
    struct slow_walk *w = arg;
    int signal_frame = 0;
    uintptr_t ip = uw_get_ip_info(ctx, &signal_frame);
    if (ip == 0)
        return _URC_END_OF_STACK;
    w->ip[w->n] = signal_frame ? 0 : ip; /* 0: no rule for a signal's frame */
    w->cfa[w->n] = uw_get_cfa(ctx);
    if (++w->n == SLOW_FRAMES) {
        w->cut = true;
        return _URC_END_OF_STACK;
    }
    return _URC_NO_REASON;
}

/* Frames from return address ip, where the stack pointer is sp, into out,
 * and where each but the first was read from into slots: false when one of
 * them is not known. */
static bool fast_walk(uintptr_t ip, uintptr_t sp, uintptr_t top, uintptr_t *out,
                      uintptr_t *slots, unsigned *n)
{
    slots[0] = 0;
    for (unsigned k = 0; k < DEPTH + 16;) {
        bool found;
        _Atomic uint64_t *slot = rule_slot(ip, &found);
        if (slot == NULL || !found)
            return false;
        uint64_t r = atomic_load_explicit(slot, memory_order_relaxed);
        if (r & RULE_SLOW)
            return false;
        out[k++] = ip;
        *n = k;
        if (r & RULE_END)
            return true;
        uintptr_t cfa = sp + ((r >> 2) & 0x3FFF) * 8;
        if (cfa <= sp || cfa > top)
            return false;
        if (k < DEPTH + 16)
            slots[k] = cfa - 8;
        ip = *(const uintptr_t *)(cfa - 8);
        sp = cfa;
    }
    return true;
}

/*
 * The last stack that record() took by the fast walk, and its site.  A loop
 * that allocates from one place calls from the same stack pointer, with the
 * same return addresses in the same slots of its stack; walked from there,
 * the same rules give the same frames.  So while the memo's slots still
 * hold its return addresses and no rule has changed since, the stack is the
 * memo's: one load and compare a frame, where the walk takes a table probe
 * and the site a hash and a comparison.  (The debug build walks every stack
 * and asserts that a matching memo named its site.)
 */
#define MEMO_FRAMES 32
struct stack_memo {
    uintptr_t ip, sp;  /* capture's return address and stack pointer */
    unsigned n;        /* frames (at most MEMO_FRAMES) */
    uint32_t site;     /* their site (0: none) */
    bool taken;        /* just taken: record() names its site */
    uint32_t changed;  /* rules_changed when it was taken */
    /* Frame k >= 1 was read at slot[k]; slot[n] is a word that never holds
     * ret[n] (its own place), so that the check's loop needs no count, and
     * ret follows slot, so that it needs one pointer. */
    uintptr_t slot[MEMO_FRAMES + 1], ret[MEMO_FRAMES + 1];
};

static inline bool memo_matches(const struct stack_memo *m, uintptr_t ip, uintptr_t sp)
{
    if (m->site == 0 || m->ip != ip || m->sp != sp ||
        m->changed != atomic_load_explicit(&rules_changed, memory_order_relaxed))
        return false;
    const uintptr_t *slot = &m->slot[1];
    while (*(const uintptr_t *)slot[0] == slot[MEMO_FRAMES + 1])
        slot++;
    return slot == &m->slot[m->n];
}

static void memo_take(struct stack_memo *m, uintptr_t ip, uintptr_t sp, const uintptr_t *frames,
                      const uintptr_t *slots, unsigned n)
{
    m->site = 0;
    m->taken = n <= MEMO_FRAMES;
    if (!m->taken)
        return;
    m->ip = ip;
    m->sp = sp;
    m->n = n;
    m->changed = atomic_load_explicit(&rules_changed, memory_order_relaxed);
    memcpy(m->slot, slots, n * sizeof *slots);
    memcpy(m->ret, frames, n * sizeof *frames);
    m->slot[n] = (uintptr_t)&m->slot[n];
    m->ret[n] = m->slot[n] + 1;
}

/* The debug build's check: a fast walk that differs from the slow one went
 * through a return address whose constant changed, which learn has just
 * marked. */
static bool explained(const uintptr_t *fast, unsigned nfast, const struct slow_walk *w,
                      unsigned first)
{
    if (w->cut ||
        (nfast + first == w->n && memcmp(fast, w->ip + first, nfast * sizeof *fast) == 0))
        return true;
    for (unsigned j = 0; j < nfast; j++) {
        bool found;
        _Atomic uint64_t *slot = rule_slot(fast[j], &found);
        if (slot != NULL && found && (atomic_load(slot) & RULE_SLOW))
            return true;
    }
    return false;
}

/* Captures from a check to the next: CHECK_GAP_MIN at a thread's first and
 * after a check that found a rule wrong, else twice the last gap, up to
 * CHECK_GAP_MAX. */
#define CHECK_GAP_MIN 256
#define CHECK_GAP_MAX 16384
static uint32_t next_check_gap(uint32_t gap, bool rule_changed)
{
    if (rule_changed || gap < CHECK_GAP_MIN)
        return CHECK_GAP_MIN;
    return gap < CHECK_GAP_MAX ? gap * 2 : CHECK_GAP_MAX;
}

/* capture's walk, from its return address ip and stack pointer sp (its
 * CFA): the fast walk, which takes m when it succeeds, and the slow one
 * too when it fails or `check` says.  Apart, so that a capture the memo
 * answers saves and restores three registers, not six, and keeps no frame
 * for the walks' arrays (random-mixed 4-32 KiB profiled: 12 instructions
 * a sample). */
static HK_NOINLINE unsigned capture_walk(uintptr_t ip, uintptr_t sp, bool check, uintptr_t *pc,
                                         struct stack_memo *m)
{
    struct prof_tls *t = &prof;
    uintptr_t fast[DEPTH + 16], slots[DEPTH + 16];
    unsigned nfast = 0;
    bool have_fast = t->stack_top != 0 && fast_walk(ip, sp, t->stack_top, fast, slots, &nfast);
    if (have_fast && m != NULL) /* stamped before the slow walk may change a rule */
        memo_take(m, ip, sp, fast, slots, nfast);
    if (have_fast && !check)
        return keep_outside(fast, nfast, pc);
    uint32_t changed = atomic_load_explicit(&rules_changed, memory_order_relaxed);
    struct slow_walk w = {.n = 0};
    uw_backtrace(slow_frame, &w);
    /* libgcc gives each frame's stack pointer at its return address as
     * "CFA" (the CFA of the frame it returns from): frame j's constant is
     * frame j + 1's less its own.  Frame 0 is this function's own; the
     * stack starts at the frame that returns to ip at sp: frame 1 when
     * capture came here by a tail call (-O2), else 2, past capture's. */
    unsigned first = w.n > 2 && !(w.ip[1] == ip && w.cfa[1] == sp) ? 2 : 1;
    HK_ASSERT(w.n <= first || (w.ip[first] == ip && w.cfa[first] == sp));
    for (unsigned j = first; j + 1 < w.n; j++)
        if (w.ip[j] != 0)
            learn(w.ip[j], w.cfa[j + 1] - w.cfa[j], false);
    if (!w.cut && w.n > first) {
        if (w.ip[w.n - 1] != 0)
            learn(w.ip[w.n - 1], 0, true);
        t->stack_top = w.cfa[w.n - 1];
    }
    HK_ASSERT(!have_fast || explained(fast, nfast, &w, first));
    if (check)
        t->until_check = t->check_gap = next_check_gap(
            t->check_gap, changed != atomic_load_explicit(&rules_changed, memory_order_relaxed));
    return keep_outside(w.ip + first, w.n > first ? w.n - first : 0, pc);
}

/* The stack into pc, its depth; with m: *site is m's site when the stack
 * is m's (then pc is left alone and 0 returned, but in the debug build),
 * else 0, and m is taken from this stack when the fast walk took it. */
static HK_NOINLINE unsigned capture(uintptr_t *pc, struct stack_memo *m, uint32_t *site)
{
    if (site != NULL)
        *site = 0;
    if (uw_backtrace == NULL) {
        void *frames[DEPTH + 16];
        int n = backtrace(frames, DEPTH + 16);
        return keep_outside((const uintptr_t *)frames, n > 0 ? (unsigned)n : 0, pc);
    }
    /* This function keeps a frame pointer (__builtin_frame_address), so its
     * CFA, the caller's stack pointer at the return address, is known. */
    uintptr_t ip = (uintptr_t)__builtin_return_address(0);
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0) + 16;
    struct prof_tls *t = &prof;
    /* A thread's first capture: glibc puts a thread's descriptor (what
     * pthread_self() returns) at the top of the mapping its stack and TLS
     * come in, so up to it every word above sp is readable, and the rules
     * the threads before it learnt walk its frames (start_thread's too).
     * The first check comes at its CHECK_GAP_MIN'th capture: checked at
     * once, each new thread paid libgcc's walk, 17,000 instructions, at
     * its first sample (churn profiled, 80 threads: 2.3% of its
     * instructions).  The main thread's descriptor lies below its stack: it
     * learns its top from its first check, as before. */
    if (HK_UNLIKELY(t->check_gap == 0) && t->stack_top == 0 &&
        (uintptr_t)pthread_self() > sp) {
        t->stack_top = (uintptr_t)pthread_self();
        t->until_check = t->check_gap = CHECK_GAP_MIN;
    }
#ifdef HK_DEBUG
    bool check = true;
#else
    bool check = t->until_check-- == 0;
#endif
    if (m != NULL && memo_matches(m, ip, sp)) {
        *site = m->site;
        if (!check)
            return 0;
    }
    return capture_walk(ip, sp, check, pc, m);
}

/* The slow way's functions, from the libgcc_s that glibc's backtrace loaded
 * (its first call, made here, loads it). */
static void fast_unwinder_start(void)
{
    rules = hk_os_map(RULES * sizeof *rules);
    void *gcc = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (rules == NULL || gcc == NULL)
        return;
    uw_get_ip_info = (uintptr_t (*)(struct _Unwind_Context *, int *))dlsym(gcc, "_Unwind_GetIPInfo");
    uw_get_cfa = (uintptr_t (*)(struct _Unwind_Context *))dlsym(gcc, "_Unwind_GetCFA");
    uw_backtrace = (_Unwind_Reason_Code (*)(_Unwind_Trace_Fn, void *))dlsym(gcc, "_Unwind_Backtrace");
    if (uw_get_ip_info == NULL || uw_get_cfa == NULL)
        uw_backtrace = NULL;
}
#else
struct stack_memo {
    uint32_t site;
    bool taken;
};

static unsigned capture(uintptr_t *pc, struct stack_memo *m, uint32_t *site)
{
    (void)m;
    if (site != NULL)
        *site = 0;
    void *frames[DEPTH + 16];
    int n = backtrace(frames, DEPTH + 16);
    return keep_outside((const uintptr_t *)frames, n > 0 ? (unsigned)n : 0, pc);
}

static void fast_unwinder_start(void)
{
}
#endif

unsigned hk_stack_capture(uintptr_t *pc, unsigned max)
{
    uintptr_t all[DEPTH];
    unsigned n = capture(all, NULL, NULL);
    n = n < max ? n : max;
    memcpy(pc, all, n * sizeof *pc);
    return n;
}

static int find_own_code(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uintptr_t me = (uintptr_t)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type != PT_LOAD || me < lo || me >= lo + ph->p_memsz)
            continue;
        if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0') {
            own_lo = lo;
            own_hi = lo + ph->p_memsz;
        }
        return 1; /* the program itself: hakmem is linked in, no range */
    }
    return 0;
}

/* ---- sites --------------------------------------------------------------- */

static uint64_t hash_stack(const uintptr_t *pc, unsigned n)
{
    uint64_t h = 0xCBF29CE484222325ull ^ n;
    for (unsigned i = 0; i < n; i++)
        h = (h ^ pc[i]) * 0x100000001B3ull + (h >> 29);
    return h | 1;
}

/* The id of the site of this stack, made if new; 0 when the table is full.
 * Lock held. */
static uint32_t site_of(const uintptr_t *pc, unsigned n)
{
    uint64_t h = hash_stack(pc, n);
    for (uint32_t i = (uint32_t)h & (INDEX_SIZE - 1);; i = (i + 1) & (INDEX_SIZE - 1)) {
        uint32_t id = site_index[i];
        if (id == 0) {
            if (held.nsites == MAX_SITES)
                return 0;
            id = held.nsites++;
            struct site *s = &sites[id];
            s->hash = h;
            s->depth = n;
            memcpy(s->pc, pc, n * sizeof *pc);
            site_index[i] = id;
            return id;
        }
        struct site *s = &sites[id];
        if (s->hash == h && s->depth == n && memcmp(s->pc, pc, n * sizeof *pc) == 0)
            return id;
    }
}

/* A site's counts are about to change: if a peak came since they last did,
 * they are its counts at that peak. */
static void keep_peak(struct site *s)
{
    if (s->gen != held.peak_gen) {
        s->gen = held.peak_gen;
        s->peak_n = s->live_n;
        s->peak_bytes = s->live_bytes;
    }
}

static void dump_locked(const char *why);

/* SIGUSR2 came while the lock was held: its dump, now. */
static HK_COLD void dump_wanted_now(void)
{
    hk_lock(&held.lock);
    if (dump_wanted) {
        dump_wanted = 0;
        dump_locked(NULL);
    }
    hk_unlock(&held.lock);
}

/* Inline: every sample and every sampled free lets the lock go here. */
static inline __attribute__((always_inline)) void unlock_and_dump_wanted(void)
{
    hk_unlock(&held.lock);
    if (HK_UNLIKELY(dump_wanted))
        dump_wanted_now();
}

/* The memo of the calling thread's heap, made at its first sample (NULL
 * for a thread without a heap, or with no memory to be had).  A heap is one
 * thread's at a time; memos come from chunks of their own and last as long
 * as heaps do.  (As static TLS, every thread of every program paid 552
 * bytes for it, and a program that dlopens hakmem draws that from glibc's
 * small static TLS surplus.) */
#define MEMO_CHUNK ((size_t)64 << 10)
static HK_NOINLINE struct stack_memo *heap_memo_make(struct hk_heap *h)
{
    static char *next, *end;
    hk_lock(&held.lock);
    if ((size_t)(end - next) < sizeof(struct stack_memo)) {
        next = hk_os_map(MEMO_CHUNK); /* zero: a memo of no site */
        end = next == NULL ? NULL : next + MEMO_CHUNK;
    }
    if (next != NULL) {
        h->stack_memo = (struct stack_memo *)next;
        next += (sizeof(struct stack_memo) + 63) & ~(size_t)63;
    }
    hk_unlock(&held.lock);
    return h->stack_memo;
}

static inline struct stack_memo *heap_memo(void)
{
    struct hk_heap *h = hk_tls.heap;
    if (h == NULL)
        return NULL;
    return h->stack_memo != NULL ? h->stack_memo : heap_memo_make(h);
}

/* The memo's slots were in the last thread's stack. */
void hk_heap_sample_attached(struct hk_heap *h)
{
    if (h->stack_memo != NULL)
        h->stack_memo->site = 0;
}

/* The held-back peak dump, if its second has come or live bytes have
 * doubled since the last; lock held. */
static HK_NOINLINE void peak_dump_if_due(void)
{
    held.clock_skip = PEAK_CLOCK_EVERY - 1;
    uint64_t now = hk_clock_ms();
    if (now < held.peak_dump_at && held.live_est < 2 * held.peak_dumped)
        return;
    held.peak_pending = false;
    held.peak_dumped = held.live_est;
    held.peak_dump_at = now + PEAK_DUMP_MS;
    dump_locked("peak");
}

/* Record a sampled allocation of `size` bytes made from the caller's
 * caller; its site + 1 (0: not recorded). */
static inline __attribute__((always_inline)) uint32_t record(uint64_t size, unsigned cls, void **slot)
{
    uintptr_t pc[DEPTH];
    uint32_t known;
    struct stack_memo *memo = heap_memo();
    unsigned n = capture(pc, memo, &known);
    hk_lock(&held.lock);
    uint32_t id = known;
    if (id == 0 || n != 0) {
        id = site_of(pc, n);
        HK_ASSERT(known == 0 || known == id); /* a matching memo names the site walked */
        if (memo != NULL) {
            if (memo->taken)
                memo->site = id;
            memo->taken = false;
        }
    }
    if (id == 0) {
        held.dropped++;
        hk_unlock(&held.lock);
        return 0;
    }
    if (cls != 0)
        *slot = hk_slot_alloc(cls);
    struct site *s = &sites[id];
    keep_peak(s);
    s->live_n++;
    s->live_bytes += size;
    s->alloc_n++;
    s->alloc_bytes += size;
    held.live_est += block_weight(cls, size);
    if (held.live_est > held.peak_est) {
        held.peak_est = held.live_est;
        held.peak_gen++;
        if (held.live_est * 100 >= held.peak_dumped * PEAK_STEP_PCT && held.live_est >= PEAK_DUMP_MIN_MEANS * mean)
            held.peak_pending = true;
    }
    if (HK_UNLIKELY(held.peak_pending) &&
        (held.clock_skip-- == 0 || held.live_est >= 2 * held.peak_dumped))
        peak_dump_if_due();
    unlock_and_dump_wanted();
    if (cls != 0 && *slot != NULL)
        hk_slot_stamp(*slot, id + 1, cls);
    return id + 1;
}

/* A sampled block of `size` bytes, of that weight, was freed. */
static inline __attribute__((always_inline)) void freed_locked(uint32_t site, size_t size,
                                                               double weight)
{
    struct site *s = &sites[site - 1];
    keep_peak(s);
    s->live_n--;
    s->live_bytes -= size;
    held.live_est -= weight;
}

void hk_heap_sample_freed(uint32_t site, size_t size)
{
    hk_lock(&held.lock);
    freed_locked(site, size, weight(size));
    unlock_and_dump_wanted();
}

void hk_heap_sample_slot_free(void *p, const char *call)
{
    hk_lock(&held.lock);
    struct slot_header *slot = hk_slot_live(p);
    bool to_purge = false;
    if (slot != NULL) {
        unsigned cls = slot->cls; /* never 0: a slot's weight is its class's */
        freed_locked(slot->site, hk_classes[cls].block_size, class_weight[cls]);
        to_purge = hk_slot_free(slot);
    }
    unlock_and_dump_wanted();
    if (slot == NULL)
        hk_invalid_pointer(call, p);
    if (to_purge) { /* madvise with the lock let go */
        hk_slot_purge(slot);
        hk_lock(&held.lock);
        hk_slot_push(slot);
        hk_unlock(&held.lock);
    }
}

void hk_heap_sample_slots_release(void)
{
    if (hk_slot_lo == 0)
        return;
    hk_lock(&held.lock);
    hk_slot_release_free();
    unlock_and_dump_wanted();
}

size_t hk_heap_sample_slot_usable(const void *p)
{
    if (!hk_slot_range(p))
        return 0;
    hk_lock(&held.lock);
    size_t size = hk_slot_usable_size(p);
    hk_unlock(&held.lock);
    return size;
}

/* ---- the allocator's detours --------------------------------------------- */

/* Serve a sample point (`what`: HK_SAMPLE_* bits) of a class of `size`
 * bytes, a power-of-two multiple of whose alignment the class guarantees:
 * NULL if it cannot be. */
static inline __attribute__((always_inline)) void *sampled_block(uint64_t size, unsigned cls, unsigned what)
{
    struct prof_tls *t = &prof;
    t->busy = true;
    void *p = NULL;
    /* A profiled point takes a slot (sample_slot.c) as it is recorded; a
     * guarded one, or one the slots have no room for, takes a huge block
     * (huge.c), with two more locks, a hash and its spare mappings: for
     * blocks of 64 KiB and up too, where thread churn with blocks up to
     * 256 KiB samples a quarter of its mallocs (churn-large profiled: 0.85
     * of the time with slots, peak RSS 66 -> 57 MiB; large-5m level). */
    bool slot = !(what & HK_SAMPLE_GUARD);
    uint32_t site = what & HK_SAMPLE_PROFILE ? record(size, slot ? cls : 0, &p) : 0;
    size_t align = size & -size;
    if (what & HK_SAMPLE_GUARD)
        p = hk_guard_alloc(size, align, false, site, size);
    else if (site != 0 && p == NULL)
        p = hk_huge_alloc_sampled(size, align > HK_OS_PAGE ? align : HK_OS_PAGE, site);
    if (p == NULL && site != 0)
        hk_heap_sample_freed(site, size);
    t->busy = false;
    return p;
}

/* A refill of n blocks of `size` bytes of class cls, for h's thread, holds
 * no point: counted, true; else false, for hk_heap_sample_refill to cut
 * the list. */
static inline bool pass_refill(struct hk_heap *h, unsigned n, uint64_t size, unsigned cls)
{
    struct hk_sample_left *s = &hk_tls.sample;
    hk_sample_fold(h);
    if (hk_sample_pending(cls) || s->left[0] <= (int64_t)(n * size) ||
        s->left[1] <= (int64_t)n)
        return false;
    s->left[0] -= (int64_t)(n * size);
    s->left[1] -= n;
    s->ticks -= (int64_t)(n * size); /* above n * size: small_tick came first */
    hk_sample_arm(h); /* the budget again, so that the next refills stay inline */
    return true;
}

/* While sampling, the small blocks counted through the heap's trim budget
 * (other heaps' kept blocks, quick refills) count toward its trim tick as
 * well: when `bytes` more would reach it, the tick's trim is taken here
 * (the rest of a tick, hk_bitmap_tick, is what a small refill does anyway),
 * and the budget set again. */
static void small_tick(struct hk_heap *h, uint64_t bytes)
{
    hk_sample_fold(h);
    if (hk_tls.sample.ticks > (int64_t)bytes)
        return;
    hk_tls.sample.ticks = HK_TRIM_BYTES;
    hk_bitmap_trim_due(h);
    hk_sample_arm(h);
}

/* Blocks `list` (n of them, NULL-terminated) go back to pg, from which the
 * refill took them. */
static void give_back(struct hk_heap *h, struct hk_page *pg, void *list, unsigned n)
{
    HK_ASSERT(pg->local_free == NULL);
    pg->local_free = list;
    pg->used -= (int32_t)n;
    hk_count(&h->returned[pg->cls], n);
}

/* The kinds of point pending for class cls (HK_SAMPLE_* bits), no longer
 * pending: its refill serves them now. */
static unsigned take_pending(unsigned cls)
{
    uint64_t bit = (uint64_t)1 << cls;
    unsigned kinds = 0;
    for (unsigned k = 0; k < KINDS; k++) {
        if (hk_tls.sample.pending[k] & bit) {
            hk_tls.sample.pending[k] &= ~bit;
            kinds |= 1u << k;
        }
    }
    return kinds;
}

/* A small refill while sampling (refill_sampled, page.c): the TLS list
 * gets the blocks that end before the next sample point; the malloc at the
 * point is sampled. */
void *hk_heap_sample_refill(struct hk_heap *h, struct hk_page *pg, unsigned cls, void *list,
                            unsigned n)
{
    struct prof_tls *t = prof_state();
    uint64_t size = hk_classes[cls].block_size, bit = (uint64_t)1 << cls;
    unsigned keep = n - 1; /* blocks for the TLS list, after the one returned */
    small_tick(h, (uint64_t)n * size);
    if (!pass_refill(h, n, size, cls) && !t->busy) {
        unsigned pending = take_pending(cls);
        unsigned what = pending | count_block(t, size, ~pending);
        hk_sample_arm(h);
        if (what != 0) {
            void *p = sampled_block(size, cls, what);
            if (p != NULL) {
                give_back(h, pg, list, n);
                HK_CHECK_PAGE(pg);
                return p;
            }
        } else {
            uint64_t before[KINDS]; /* blocks before each kind's next point */
            for (unsigned k = 0; k < KINDS; k++) {
                before[k] = ((uint64_t)hk_tls.sample.left[k] - 1) / units(k, size);
                if (before[k] < keep)
                    keep = (unsigned)before[k];
            }
            for (unsigned k = 0; k < KINDS; k++) {
                hk_tls.sample.left[k] -= (int64_t)(keep * units(k, size));
                if (before[k] == keep && keep < n - 1) {
                    hk_tls.sample.pending[k] |= bit;
                    passed_point(t, k);
                }
            }
            hk_sample_arm(h);
        }
    }
    if (keep < n - 1) {
        void *last = list;
        for (unsigned i = 0; i < keep; i++)
            last = hk_next(last);
        give_back(h, pg, hk_next(last), n - 1 - keep);
        hk_set_next(last, NULL);
    }
    void *next = hk_next(list);
    HK_SECURE_TAKEN(list, next, cls);
    hk_tls.free[cls] = next;
    HK_CHECK_PAGE(pg);
    return list;
}

/* hk_sample_pass_pushed's block did not fit the budget: counted, and
 * the points it holds pending for its class. */
bool hk_sample_pass_pushed_slow(struct hk_heap *h, unsigned cls)
{
    uint64_t size = hk_classes[cls].block_size;
    small_tick(h, size);
    if (pass_refill(h, 1, size, cls)) /* a pass sets the budget itself */
        return true;
    struct prof_tls *t = prof_state();
    unsigned what = t->busy ? 0 : count_block(t, size, ~0u);
    hk_sample_arm(h);
    for (unsigned k = 0; k < KINDS; k++)
        if (what & 1u << k)
            hk_tls.sample.pending[k] |= (uint64_t)1 << cls;
    return false;
}

void *hk_heap_sample_stashed(unsigned cls)
{
    struct prof_tls *t = prof_state();
    unsigned what = take_pending(cls);
    if (what == 0 || t->busy)
        return NULL;
    return sampled_block(hk_classes[cls].block_size, cls, what);
}

/* A medium or large block of class cls, `size` bytes, was just taken and
 * the heap's trim budget ran out, which while sampling ends at the next
 * trim tick or point, whichever comes first (at every block while
 * guarding): the blocks before this one hold no point.  The points it
 * holds (HK_SAMPLE_* bits): hk_heap_sample_bitmap serves them with a
 * sampled block instead and undoes its take, hk_heap_sample_span records
 * a profiled one's site for the block taken. */
static inline __attribute__((always_inline)) unsigned point_kinds(struct hk_heap *h, uint64_t size)
{
    prof_state();
    /* The blocks before this one, then this one. */
    h->trim_budget += (int64_t)size;
    hk_sample_fold(h);
    if (hk_tls.sample.ticks <= (int64_t)size) {
        hk_tls.sample.ticks = HK_TRIM_BYTES;
        hk_bitmap_tick(h);
    } else {
        hk_tls.sample.ticks -= (int64_t)size;
    }
    unsigned what = prof.busy ? 0 : count_block(&prof, size, ~0u);
    hk_sample_arm(h);
    return what;
}

uint32_t hk_heap_sample_span(struct hk_heap *h, uint64_t size, unsigned cls, void **sampled)
{
    unsigned what = point_kinds(h, size);
    *sampled = NULL;
    if (what != HK_SAMPLE_PROFILE) {
        if (what != 0)
            *sampled = sampled_block(size, cls, what);
        return 0;
    }
    prof.busy = true;
    uint32_t site = record(size, 0, NULL);
    prof.busy = false;
    return site;
}

/* Block i of pg, its class's current page, was just taken and the budget
 * ran out.  At a point the block goes back, its take undone (its bit and
 * `used` are all a free would change), and a sampled block serves instead. */
void *hk_heap_sample_bitmap(struct hk_heap *h, struct hk_page *pg, unsigned i)
{
    void *block = pg->blocks + (size_t)i * pg->block_size;
    unsigned what = point_kinds(h, pg->block_size);
    void *p = what == 0 ? NULL : sampled_block(pg->block_size, pg->cls, what);
    if (p == NULL)
        return block;
    uint64_t *word = &pg->free_map[i / 64], bit = (uint64_t)1 << (i % 64);
    HK_ASSERT(!(*word & bit));
    hk_count(&h->returned[pg->cls], 1);
    hk_bitmap_put(pg, word, bit, block, "malloc");
    return p;
}

unsigned hk_heap_sample_huge(size_t size, uint32_t *site)
{
    struct prof_tls *t = prof_state();
    struct hk_heap *h = hk_tls.heap;
    *site = 0;
    if (t->busy)
        return 0;
    if (h != NULL)
        hk_sample_fold(h);
    unsigned what = count_block(t, size, ~0u);
    if (h != NULL)
        hk_sample_arm(h);
    if (what & HK_SAMPLE_PROFILE) {
        t->busy = true;
        *site = record(size, 0, NULL);
        t->busy = false;
    }
    return what;
}

/* ---- dumps --------------------------------------------------------------- */

/* The writer: a buffer and write(2), as a signal handler may use. */
static struct {
    int fd;
    unsigned len;
    bool failed;
    char buf[16384];
} out;

static void flush_out(void)
{
    for (unsigned done = 0; done < out.len;) {
        ssize_t w = write(out.fd, out.buf + done, out.len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            out.failed = true;
            break;
        }
        done += (unsigned)w;
    }
    out.len = 0;
}

static void put(const char *s, size_t n)
{
    while (n > 0) {
        if (out.len == sizeof out.buf)
            flush_out();
        size_t room = sizeof out.buf - out.len, k = n < room ? n : room;
        memcpy(out.buf + out.len, s, k);
        out.len += (unsigned)k;
        s += k;
        n -= k;
    }
}

static void put_str(const char *s)
{
    put(s, strlen(s));
}

/* x in decimal (base 10) or as 0x... (base 16) into buf; its length. */
static size_t format_u64(char *buf, uint64_t x, unsigned base)
{
    char tmp[24];
    size_t n = 0, len = 0;
    do {
        tmp[n++] = "0123456789abcdef"[x % base];
        x /= base;
    } while (x != 0);
    if (base == 16) {
        buf[len++] = '0';
        buf[len++] = 'x';
    }
    while (n > 0)
        buf[len++] = tmp[--n];
    return len;
}

static void put_u64(uint64_t x, unsigned base)
{
    char buf[24];
    put(buf, format_u64(buf, x, base));
}

/* "n: bytes [n: bytes]" as pprof reads it. */
static void put_counts(uint64_t n1, uint64_t b1, uint64_t n2, uint64_t b2)
{
    put_u64(n1, 10);
    put_str(": ");
    put_u64(b1, 10);
    put_str(" [");
    put_u64(n2, 10);
    put_str(": ");
    put_u64(b2, 10);
    put_str("]");
}

/* A site's live counts now, or at the last peak. */
static void live_counts(const struct site *s, bool at_peak, uint64_t *n, uint64_t *bytes)
{
    bool changed = at_peak && s->gen == held.peak_gen; /* since the peak */
    *n = changed ? s->peak_n : s->live_n;
    *bytes = changed ? s->peak_bytes : s->live_bytes;
}

static void write_profile(bool at_peak)
{
    uint64_t ln_ = 0, lb = 0, an = 0, ab = 0;
    for (uint32_t id = 1; id < held.nsites; id++) {
        uint64_t n, b;
        live_counts(&sites[id], at_peak, &n, &b);
        ln_ += n;
        lb += b;
        an += sites[id].alloc_n;
        ab += sites[id].alloc_bytes;
    }
    put_str("heap profile: ");
    put_counts(ln_, lb, an, ab);
    put_str(" @ heap_v2/");
    put_u64((uint64_t)mean, 10);
    put_str("\n");
    for (uint32_t id = 1; id < held.nsites; id++) {
        const struct site *s = &sites[id];
        uint64_t n, b;
        live_counts(s, at_peak, &n, &b);
        put_counts(n, b, s->alloc_n, s->alloc_bytes);
        put_str(" @");
        for (unsigned i = 0; i < s->depth; i++) {
            put_str(" ");
            put_u64(s->pc[i], 16);
        }
        put_str("\n");
    }
    if (held.dropped != 0) {
        put_str("# samples not recorded (too many sites): ");
        put_u64(held.dropped, 10);
        put_str("\n");
    }
    put_str("\nMAPPED_LIBRARIES:\n");
    int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (maps >= 0) {
        char buf[4096];
        ssize_t r;
        while ((r = read(maps, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
            if (r > 0)
                put(buf, (size_t)r);
        close(maps);
    }
}

/* Write <prefix>.<pid>.<why>.heap (why NULL: the next number), through a
 * temporary name, so that a reader never sees half a dump. */
static bool dump_to(const char *why, bool at_peak)
{
    char path[4096], tmp[4096 + 8];
    const char *prefix = hk_config.heap_profile;
    size_t len = strlen(prefix);
    if (len + 64 > sizeof path)
        return false;
    memcpy(path, prefix, len);
    path[len++] = '.';
    len += format_u64(path + len, (uint64_t)getpid(), 10);
    path[len++] = '.';
    if (why != NULL) {
        memcpy(path + len, why, strlen(why));
        len += strlen(why);
    } else {
        len += format_u64(path + len, ++dump_seq, 10);
    }
    memcpy(path + len, ".heap", 6);
    memcpy(tmp, path, len + 5);
    memcpy(tmp + len + 5, ".tmp", 5);
    int saved = errno;
    out.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = out.fd >= 0;
    if (ok) {
        out.failed = false;
        write_profile(at_peak);
        flush_out();
        ok = !out.failed;
        close(out.fd);
        ok = ok && rename(tmp, path) == 0;
        if (!ok)
            unlink(tmp);
    }
    errno = saved;
    return ok;
}

static void dump_locked(const char *why)
{
    dump_to(why, why != NULL && strcmp(why, "peak") == 0);
}

HK_API int hak_heap_profile_dump(void)
{
    if (!profiling) {
        errno = EINVAL; /* not profiling */
        return -1;
    }
    hk_lock(&held.lock);
    bool ok = dump_to(NULL, false);
    hk_unlock(&held.lock);
    if (!ok)
        errno = EIO;
    return ok ? 0 : -1;
}

/* SIGUSR2: dump now, or as soon as the thread holding the lock lets go. */
static void on_sigusr2(int sig)
{
    (void)sig;
    if (!hk_trylock(&held.lock)) {
        dump_wanted = 1;
        return;
    }
    dump_locked(NULL);
    hk_unlock(&held.lock);
}

__attribute__((destructor)) static void dump_at_exit(void)
{
    if (!profiling)
        return;
    hk_lock(&held.lock);
    if (held.peak_gen != 0)
        dump_to("peak", true);
    dump_to("exit", false);
    hk_unlock(&held.lock);
}

/* ---- start and fork -------------------------------------------------------- */

/* The profiler's tables and SIGUSR2; false if there is no memory for them. */
static bool profile_start(void)
{
    sites = hk_os_map((size_t)MAX_SITES * sizeof *sites);
    site_index = hk_os_map((size_t)INDEX_SIZE * sizeof *site_index);
    if (sites == NULL || site_index == NULL) {
        hk_warn("HAKMEM_HEAP_PROFILE (no memory for the profile)");
        return false;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr2;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR2, &sa, NULL);
    mean = (double)hk_config.heap_sample;
    for (unsigned cls = 1; cls < HK_NCLASSES; cls++)
        class_weight[cls] = weight(hk_classes[cls].block_size);
    scale[PROFILED] = mean * 0.69314718055994530942; /* ln 2: -ln u = -log2(u) ln 2 */
    return true;
}

void hk_heap_profile_start(void)
{
    bool profile = hk_config.heap_profile != NULL, guard = hk_config.guard_sample != 0;
    if (!(profile || guard) || hk_heap_sampling)
        return;
    if (HK_SECURE_ON && profile) { /* its checks take a stand-in block for a page's */
        hk_warn("HAKMEM_HEAP_PROFILE (the hardened build has no heap profiler)");
        profile = false;
    }
    log2_table_fill();
    profiling = profile && profile_start();
    if (!(profiling || guard))
        return;
    dl_iterate_phdr(find_own_code, (void *)(uintptr_t)&hk_heap_profile_start);
    void *warm[1];
    backtrace(warm, 1);
    fast_unwinder_start();
    /* Blocks handed out before now (the loader's, constructors') go back,
     * so that the thread's next ones come from refills, which sample, and
     * its next medium or large block visits the profiler. */
    if (hk_tls.heap != NULL) {
        hk_heap_flush_tls(hk_tls.heap);
        hk_tls.heap->trim_budget = hk_tls.heap->trim_budget_set = 0;
    }
    kind_on[PROFILED] = profiling;
    if (guard) {
        double n = (double)hk_config.guard_sample;
        scale[GUARDED] = n > 1 ? -0.69314718055994530942 / ln(1 - 1 / n) : 0;
        kind_on[GUARDED] = true;
        hk_guard_start();
    }
    hk_heap_sampling = true;
    hk_lists_sampling_start();
    atomic_fetch_or(&hk_detour, HK_DETOUR_SAMPLE);
}

void hk_heap_profile_fork_lock(void)
{
    hk_lock(&held.lock);
}

void hk_heap_profile_fork_unlock(bool child)
{
    if (child) {
        hk_lock_reset(&held.lock);
        dump_seq = 0;
    } else {
        hk_unlock(&held.lock);
    }
}
