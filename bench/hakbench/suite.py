"""The interleaved suite: every workload, every allocator, N runs each.

For each workload and each run index, every allocator runs once before the
next run index starts, so a slow spell of the shared machine hits all
allocators alike rather than one.  The order differs from run index to run
index, a shuffle seeded by the workload's name and the index (the same in
every suite run): on the project's VM a run that follows other work can be
several times slower, its time in the kernel zeroing the pages it faults
in, and how much depends on what ran just before.  With a fixed order that
was always the first allocator's run (`large` with hakmem, the first of
four runs after large-5m: 518 calls/s, then 2,567-2,995); with the order
rotated by one each index, each allocator still followed the same one
every time but the first: `large` with hakmem after snmalloc 608-804
calls/s, after hakmem itself 2,755-2,913; two reports' `large` rows had
hakmem at 0.27 and 0.51 of the same library's throughput profiled.
"""
import os
import random
import shutil
import sys
import time

from . import callgrind, stats, syscalls
from .tables import rate
from . import runner as runner_mod

# The figures summarised over runs, from each run's result line.
FIGURES = ["ops_per_sec", "seconds", "peak_rss_kb", "rss_after_free_kb",
           "rss_after_trim_kb", "rss_start_kb"]


class Progress:
    """One line per run index of each workload, with a rough time left."""

    def __init__(self, total_runs):
        self.total = total_runs
        self.done = 0
        self.start = time.monotonic()

    def step(self, n=1):
        self.done += n

    def eta(self):
        elapsed = time.monotonic() - self.start
        if not self.done:
            return f"{elapsed:4.0f}s elapsed"
        left = elapsed / self.done * (self.total - self.done)
        return f"{elapsed:4.0f}s elapsed, ~{left:.0f}s left"


def summarize_cell(runs, extra_keys):
    ok = [r for r in runs if r.ok]
    cell = {
        "runs": [dict(r.result, wall=r.wall) for r in ok],
        "failures": [{"error": r.error, "command": r.command} for r in runs if not r.ok],
        "command": runs[0].command if runs else "",
        "provider": ok[0].probe.get("malloc") if ok else None,
    }
    for key in FIGURES + list(extra_keys):
        cell[key] = stats.summarize([r.result.get(key) for r in ok])
    if any(r.samples for r in ok):
        # The RSS trace of the run with the median throughput.
        by_speed = sorted(ok, key=lambda r: r.result["ops_per_sec"])
        cell["samples"] = by_speed[len(by_speed) // 2].samples
    return cell


def pin_wrapper():
    """taskset -c N for single-threaded workloads: N is HAKBENCH_CPU, or the
    first CPU this process may use; none with HAKBENCH_CPU=none or without
    taskset.  The CPUs of a shared machine need not run alike: on the
    project's 2-core VM one ran realloc-growth at 18.8 M ops/s and the other
    at 15.2 M, so which CPU a run landed on decided A/B comparisons of 15
    runs (+27% and -26% a minute apart)."""
    cpu = os.environ.get("HAKBENCH_CPU", "")
    if cpu == "none" or shutil.which("taskset") is None:
        return ()
    if cpu == "":
        cpu = str(min(os.sched_getaffinity(0)))
    return ("taskset", "-c", cpu)


def run_suite(workloads, allocs, runs, scale, ipo=False, count_syscalls=False,
              sample_ms=0, timeout=300.0, floor=None, out=print):
    progress = Progress(len(workloads) * runs * len(allocs))
    pin = pin_wrapper()
    results = []
    for wi, w in enumerate(workloads, 1):
        argv = w.argv(scale)
        out(f"[{wi}/{len(workloads)}] {w.name}: {w.about}")
        per_alloc = {a.name: [] for a in allocs}
        for i in range(runs):
            line = []
            order = list(allocs)
            random.Random(f"{w.name}:{i}").shuffle(order)
            for a in order:
                earlier = per_alloc[a.name]
                if earlier and earlier[-1].error and "timed out" in earlier[-1].error:
                    # A hang costs the whole timeout: do not wait for it again.
                    r = runner_mod.Run(a.name, earlier[-1].command,
                                       error="skipped: an earlier run timed out")
                else:
                    r = runner_mod.run(a, argv, w.needs, timeout=timeout,
                                       sample_ms=sample_ms,
                                       wrapper=pin if w.single_thread else ())
                per_alloc[a.name].append(r)
                progress.step()
                line.append(f"{a.name} {rate(r.result['ops_per_sec'])}" if r.ok
                            else f"{a.name} FAIL")
            out(f"    run {i + 1}/{runs}: " + "  ".join(line) + f"   ({progress.eta()})")
        for a in allocs:
            for r in per_alloc[a.name]:
                if not r.ok:
                    out(f"    {a.name} failed: {r.error}\n      command: {r.command}")
                    break
        entry = {
            "name": w.name, "about": w.about, "binary": w.binary,
            "args": argv[1:], "extra": w.extra,
            "op_unit": next((r.result.get("op_unit") for rs in per_alloc.values()
                             for r in rs if r.ok), "call"),
            "cells": {a.name: summarize_cell(per_alloc[a.name], w.extra) for a in allocs},
        }
        if ipo and not w.whole_program:
            _add_ipo(entry, w, allocs, floor, out)
        if count_syscalls and not w.whole_program:
            _add_syscalls(entry, w, allocs, scale, out)
        results.append(entry)
    return results


def _add_ipo(entry, w, allocs, floor, out):
    out(f"    callgrind ({w.ipo_scale:g}x the ops): ", end="")
    floor_ipo = None
    if floor is not None and w.has_floor:
        f = callgrind.count(floor, w)
        entry["ipo_floor"] = f
        floor_ipo = f.get("ipo")
        out(f"floor {floor_ipo:.1f}  " if floor_ipo else "floor n/a  ", end="")
    for a in allocs:
        c = callgrind.count(a, w)
        if c.get("ipo") is not None and floor_ipo is not None:
            c["above_floor"] = c["ipo"] - floor_ipo
        entry["cells"][a.name]["ipo"] = c
        out(f"{a.name} {c['ipo']:.1f}  " if c.get("ipo") is not None
            else f"{a.name} FAIL  ", end="")
    out("")


def _add_syscalls(entry, w, allocs, scale, out):
    out("    strace: ", end="")
    for a in allocs:
        c = syscalls.count(a, w, scale)
        entry["cells"][a.name]["syscalls"] = c
        out(f"{a.name} {c['per_op']:.2g}/op  " if c.get("per_op") is not None
            else f"{a.name} FAIL  ", end="")
    out("")


def printer(text="", end="\n"):
    sys.stdout.write(text + end)
    sys.stdout.flush()
