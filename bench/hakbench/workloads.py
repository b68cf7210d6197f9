"""The workloads of the suite and their default sizes.

Each default is sized to take a few tenths of a second with the fast
allocators on a 2-core machine, so that the whole interleaved suite stays
within `make bench`'s 10-minute budget; --quick scales the work by 1/10.
"""
from dataclasses import dataclass, field, replace
from typing import Callable, List, Optional

from . import paths

# Functions every workload's probe must find in the allocator under test.
CORE = ["malloc", "free", "calloc", "realloc"]


@dataclass
class Workload:
    name: str
    binary: str
    make_args: Callable[[float], List]   # scale -> arguments
    about: str
    needs: List[str] = field(default_factory=lambda: list(CORE))
    ipo_scale: float = 0.1               # callgrind runs ~50x slower
    # The no-op floor is meaningless where it does more work than a real
    # allocator (its realloc, not knowing the old size, copies the new size).
    has_floor: bool = True
    extra: List[str] = field(default_factory=list)  # result keys to show
    # One thread: its runs are pinned to one CPU (suite.py), so that every
    # allocator runs on the same one.
    single_thread: bool = False
    # Where its argument list gives the thread count (for --threads), and
    # how many threads one unit of it is (prodcons: a pair).
    threads_at: Optional[int] = None
    threads_per_unit: int = 1
    # A real program timed whole from outside (bench/workloads/program.c):
    # no instruction or system-call counts, no RSS after free.
    whole_program: bool = False

    def argv(self, scale=1.0):
        return [paths.binary(self.binary)] + [str(a) for a in self.make_args(scale)]


def n(count, scale, least=1):
    return max(least, int(count * scale))


def _random_mixed(name, lo, hi, about, dist="uniform", ops=20_000_000):
    return Workload(
        name, "random_mixed",
        lambda s: [n(ops, s), 400, lo, hi, 42] + ([dist] if dist != "uniform" else []),
        about, single_thread=True)


ALL = [
    _random_mixed("random-mixed-tiny", 16, 1024,
                  "random-mixed, 16-1024 B, working set 400 (the headline)"),
    _random_mixed("random-mixed-small", 16, 2048, "random-mixed, 16-2048 B"),
    _random_mixed("random-mixed-medium", 4096, 32768, "random-mixed, 4-32 KiB",
                  ops=10_000_000),
    _random_mixed("random-mixed-mixed", 16, 32768, "random-mixed, 16 B-32 KiB",
                  ops=10_000_000),
    _random_mixed("random-mixed-app", 16, 32768,
                  "random-mixed, 80% 16-256 B, 15% 257-2048 B, 5% 2-32 KiB", "app"),
    Workload("server", "server",
             lambda s: [4, n(2_500_000, s), 1000, 16, 512, 1000, 42],
             "4 threads, Larson-style, slot sets swapped between threads", threads_at=0),
    Workload("server-retire", "server",
             lambda s: [4, n(1_500_000, s), 1000, 8, 1000, 1000, 42, 20_000],
             "server, 8-1000 B, each thread replaced every 20 K iterations", threads_at=0),
    Workload("working-set", "working_set",
             lambda s: [1, n(3_000_000, s), 262144, 16, 1024, 42],
             "256 K live blocks, Pareto 16 B-1 KiB, random one replaced, written whole",
             single_thread=True),
    Workload("working-set-2t", "working_set",
             lambda s: [2, n(1_500_000, s), 262144, 16, 1024, 42],
             "working-set on 2 threads, each with its own 256 K blocks", threads_at=0),
    Workload("xstress", "xstress",
             lambda s: [2, n(1_000_000, s), 1000, 4000, 42],
             "2 threads pass mixed sizes (8 B-64 KiB) and lifetimes, short run",
             threads_at=0),
    Workload("prodcons", "prodcons",
             lambda s: [1, n(4_000_000, s), 16, 1024, 42],
             "a producer thread allocates, a consumer thread frees",
             threads_at=0, threads_per_unit=2),
    Workload("xthread-0", "xthread",
             lambda s: [2, n(4_000_000, s), 0, 256, 16, 1024, 42],
             "2 threads, no remote frees", threads_at=0),
    Workload("xthread-50", "xthread",
             lambda s: [2, n(4_000_000, s), 50, 256, 16, 1024, 42],
             "2 threads, 50% of frees by the other thread", threads_at=0),
    Workload("xthread-90", "xthread",
             lambda s: [2, n(4_000_000, s), 90, 256, 16, 1024, 42],
             "2 threads, 90% of frees by the other thread", threads_at=0),
    Workload("churn", "churn",
             lambda s: [n(100, s, 10), 4, 20_000, 16, 4096, 42],
             "waves of 4 short-lived threads; RSS growth over the waves",
             extra=["rss_growth_pct", "threads_per_sec"], threads_at=1),
    Workload("churn-large", "churn",
             lambda s: [n(40, s, 4), 4, 20_000, 16, 262_144, 42],
             "churn with blocks of 16 B-256 KiB (about 16 MiB live per thread)",
             extra=["rss_growth_pct", "threads_per_sec"], threads_at=1),
    Workload("false-sharing-passive", "false_sharing",
             lambda s: [2, n(100, s), 1_000_000, 8, "passive"],
             "objects from main handed to 2 writer threads (op = write)", threads_at=0),
    Workload("false-sharing-active", "false_sharing",
             lambda s: [2, n(100, s), 1_000_000, 8, "active"],
             "2 threads each allocate and write an object (op = write)", threads_at=0),
    Workload("realloc-growth", "realloc_growth",
             lambda s: [n(3_000_000, s), 32, 65536, 42],
             "32 buffers grown by realloc up to 64 KiB", has_floor=False, single_thread=True),
    Workload("calloc", "calloc_zero",
             lambda s: [n(3_000_000, s), 400, 16, 16384, 42],
             "random-mixed with calloc, 16 B-16 KiB, zeroing checked", single_thread=True),
    Workload("aligned", "aligned",
             lambda s: [n(5_000_000, s), 400, 16, 1024, 4096, 42],
             "posix_memalign/aligned_alloc, alignment 16 B-4 KiB",
             needs=CORE + ["posix_memalign", "aligned_alloc"], single_thread=True),
    Workload("large", "large",
             lambda s: [n(200, s, 20), 8, 65536, 32 << 20, 4096, 42],
             "64 KiB-32 MiB blocks, every page written", ipo_scale=0.25, single_thread=True),
    Workload("large-5m", "large",
             lambda s: [n(3000, s, 300), 8, 65536, 5 << 20, 4096, 42],
             "64 KiB-5 MiB blocks, every page written", ipo_scale=0.25, single_thread=True),
    Workload("large-512k", "large",
             lambda s: [n(10_000, s, 1000), 8, 65536, 512 << 10, 4096, 42],
             "64-512 KiB blocks (size classes), every page written", ipo_scale=0.25,
             single_thread=True),
]

# The real programs (programs.py) run only when named: `make bench-programs`.
from .programs import PROGRAMS  # noqa: E402

BY_NAME = {w.name: w for w in ALL + PROGRAMS}


def select(wanted):
    """Workloads named in a comma list (a name ending in '*' is a prefix);
    without one, make bench's own (not the real programs)."""
    if not wanted:
        return list(ALL)
    chosen = []
    for pat in [p.strip() for p in wanted.split(",") if p.strip()]:
        match = [w for w in ALL + PROGRAMS
                 if w.name == pat or (pat.endswith("*") and w.name.startswith(pat[:-1]))]
        if not match:
            raise SystemExit(f"unknown workload '{pat}'; have: "
                             + ", ".join(w.name for w in ALL + PROGRAMS))
        chosen += [w for w in match if w not in chosen]
    return chosen


def with_threads(chosen, threads):
    """The workloads with `threads` threads where they take a thread count
    (named e.g. server-16t; each thread does the work it did), the others as
    they are: for machines with more cores than make bench's 2."""
    if not threads:
        return chosen
    out = []
    for w in chosen:
        if w.threads_at is None:
            out.append(w)
            continue
        units = max(1, threads // w.threads_per_unit)
        n = units * w.threads_per_unit

        def make_args(s, w=w, units=units):
            args = w.make_args(s)
            args[w.threads_at] = units
            return args
        base = w.name[:-3] if w.name.endswith("-2t") else w.name
        out.append(replace(w, name=f"{base}-{n}t", make_args=make_args,
                           about=f"{w.about}; here {n} threads"))
    return out
