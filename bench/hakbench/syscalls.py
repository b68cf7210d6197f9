"""System calls per operation, counted with strace.

strace -f follows every thread through ptrace (no seccomp filter), so the
process stops at each system call and nowhere else: an allocator that
rarely enters the kernel runs at nearly full speed.  Its trace is streamed to
this process and counted, keeping only the calls made between the two
markers that the workload makes around its measured region (marker.h) and
leaving out the harness's own sampler thread.  The counting run is separate
from the timed runs.
"""
import re
import shlex
from collections import Counter
from shutil import which

from . import paths, runner

STRACE = ["strace", "-f", "-qq", "-e", "signal=none", "-o", "/dev/stderr"]
# Calls that the harness makes, not the allocator: thread start and exit
# (pthread_create, the workers' return), waiting for a full queue or for the
# other threads (sched_yield).  Left out of the per-op figure, kept in the
# per-name breakdown.  Thread stacks (mmap, mprotect) cannot be told apart
# from the allocator's own mappings and stay in.
HARNESS_CALLS = {"sched_yield", "clone", "clone3", "exit", "rseq", "set_robust_list",
                 "rt_sigprocmask", "nanosleep", "clock_nanosleep"}
_LINE = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z0-9_]+)[\( ]")


class Tally:
    """Counts trace lines; feed() is called for each line strace prints."""

    def __init__(self):
        self.inside = False
        self.calls = Counter()       # (tid, name) -> count
        self.excluded_tids = set()

    def feed(self, line):
        if "/hakbench-marker/begin" in line:
            self.inside = True
            return
        if "/hakbench-marker/end" in line:
            self.inside = False
            return
        m = _LINE.match(line)
        # A call that blocks is printed twice ("<unfinished ...>", then
        # "<... name resumed>"): count its first line only.
        if not m or not self.inside or "resumed>" in line:
            return
        self.calls[(int(m.group(1)), m.group(2))] += 1

    def names(self):
        by_name = Counter()
        for (tid, name), n in self.calls.items():
            if tid not in self.excluded_tids:
                by_name[name] += n
        return dict(by_name.most_common())

    def total(self):
        return sum(n for name, n in self.names().items() if name not in HARNESS_CALLS)


def stream(allocator, argv, needs, on_stdout=None, timeout=None):
    """Run argv under strace with allocator preloaded.  Returns (Run, Tally)."""
    tally = Tally()
    # -E preloads the allocator into the traced program only, not strace.
    wrapper = STRACE + (["-E", f"LD_PRELOAD={allocator.lib}"] if allocator.lib else [])

    def on_stderr(line):
        if _LINE.match(line):
            tally.feed(line)
            return True
        return False

    r = runner.stream(allocator, argv, needs, wrapper=wrapper, preload_in_wrapper=True,
                      on_stdout=on_stdout, on_stderr=on_stderr, timeout=timeout)
    shown = STRACE + (["-E", f"LD_PRELOAD={paths.rel(allocator.lib)}"]
                      if allocator.lib else [])
    r.command = shlex.join(shown + [paths.rel(argv[0])] + list(argv[1:]))
    if r.sampler_tid is not None:
        tally.excluded_tids.add(r.sampler_tid)
    return r, tally


def count(allocator, workload, scale=1.0, timeout=300.0):
    """Syscalls per op for one workload; returns a dict."""
    run, counter = stream(allocator, workload.argv(scale), workload.needs,
                          timeout=timeout)
    if not run.ok:
        return {"error": run.error, "command": run.command}
    ops = run.result["ops"]
    total = counter.total()
    return {"syscalls": total, "ops": ops, "per_op": total / ops if ops else None,
            "by_name": counter.names(), "command": run.command}


def available():
    return which("strace") is not None
