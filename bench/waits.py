#!/usr/bin/env python3
"""Where a program's threads wait, without perf or strace.

    python3 bench/waits.py [--lib build/libhakmem.so] -- \
        env LD_PRELOAD=build/libhakmem.so program args...

Runs the program (its standard output is discarded) and, every half
millisecond until it ends, reads each of its threads' state, system call
and, for a sleeping thread, kernel stack (/proc/PID/task/TID/stack, which
needs root).  Prints the program's resource usage (user and system time,
page faults, voluntary and involuntary context switches), the most frequent
kernel stacks of sleeping threads, and the futex words they sleep on, each
named by the symbol of --lib that holds it where it is one (nm).

Written for the lent 16-core machines, which have neither perf nor strace:
there it showed 16 threads of xstress sleeping 220 K times a run on the
message pool's lock (docs/ARCHITECTURE.md, remote frees).  Sampling sees
only waits long enough to be caught; short ones show in the context
switches.
"""
import argparse
import collections
import os
import subprocess
import sys
import time

from nm_symbols import nm_symbols

SYS_FUTEX = "202"  # x86-64


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def name_address(addr, maps, lib, syms):
    """The symbol of lib holding addr (its data or bss, which follows the
    file's mappings), else the mapping's file and offset."""
    base = None
    for line in maps.splitlines():
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if len(f) > 5 and lib and f[5].endswith(lib) and int(f[2], 16) == 0 and base is None:
            base = lo
        if lo <= addr < hi:
            where = f"{f[5] if len(f) > 5 else '[anon]'}+{addr - lo:#x}"
            break
    else:
        where = "?"
    if base is not None and syms and addr >= base:
        off = addr - base
        below = [s for s in syms if s[0] <= off]
        if below and off - below[-1][0] < 4096:
            return f"{below[-1][1]}+{off - below[-1][0]:#x}"
    return where


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default="build/libhakmem.so",
                    help="library whose symbols name the futex words")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no program given")

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    states, stacks, futexes = collections.Counter(), collections.Counter(), collections.Counter()
    maps, samples, usage, status = "", 0, None, 0
    while usage is None:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            usage = ru
            break
        try:
            tids = os.listdir(f"/proc/{proc.pid}/task")
        except OSError:
            continue
        if samples % 1000 < len(tids):  # the mappings change as it runs
            maps = read(f"/proc/{proc.pid}/maps") or maps
        for tid in tids:
            task = f"/proc/{proc.pid}/task/{tid}"
            stat, syscall = read(task + "/stat"), read(task + "/syscall")
            if stat is None or syscall is None:
                continue
            samples += 1
            state = stat.rsplit(")", 1)[1].split()[0]
            states[state] += 1
            if state not in "SD":
                continue
            call = syscall.split()
            stack = read(task + "/stack")
            frames = [l.split(" ", 1)[-1].split("+")[0] for l in (stack or "").splitlines() if l]
            stacks[(state, call[0] if call else "?", " < ".join(frames[:6]) or "?")] += 1
            if call and call[0] == SYS_FUTEX:
                futexes[int(call[1], 16)] += 1
        time.sleep(0.0005)

    print(f"exit {os.waitstatus_to_exitcode(status)}: user {usage.ru_utime:.2f} s, system {usage.ru_stime:.2f} s, "
          f"minor faults {usage.ru_minflt}, voluntary switches {usage.ru_nvcsw}, "
          f"involuntary {usage.ru_nivcsw}")
    print(f"thread samples {samples}: " + ", ".join(f"{k} {v}" for k, v in states.most_common()))
    print("sleeping threads' kernel stacks (state, system call, innermost first):")
    for (state, call, stack), n in stacks.most_common(args.top):
        print(f"{n:8d}  {state} {call:>4} {stack}")
    print("futex words slept on:")
    syms = nm_symbols(args.lib, "bBdD") if os.path.exists(args.lib) else []
    for addr, n in futexes.most_common(args.top):
        print(f"{n:8d}  {addr:#x} {name_address(addr, maps, os.path.basename(args.lib), syms)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
