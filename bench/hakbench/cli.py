"""Command line: run (the suite), ipo, ab, soak, list."""
import argparse
import os
import shlex
import sys

from . import allocators, chart, machine, output, paths, report, suite, workloads


def _command_line():
    """The command as the user typed it: `make bench ...` when make ran us."""
    own = "python3 bench/hakbench.py " + shlex.join(sys.argv[1:])
    made = os.environ.get("HAKBENCH_MAKE_COMMAND", "").strip()
    return f"{made} (runs {own})" if made else own


def _common(p, runs_default):
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1/10 of the work and 2 runs")
    p.add_argument("--runs", type=int, help=f"runs per allocator and workload (default {runs_default})")
    p.add_argument("--scale", type=float, help="multiply every workload's work by this")
    p.add_argument("--workloads", help="comma list; 'random-mixed*' selects by prefix")
    p.add_argument("--timeout", type=float,
                   help="seconds before a run counts as hung (default 60 x scale, at least 60)")


def _runs_scale(args, runs_default):
    runs = args.runs or (2 if args.quick else runs_default)
    scale = args.scale or (0.1 if args.quick else 1.0)
    if args.timeout is None:
        args.timeout = 60.0 * max(1.0, scale)
    return runs, scale


def cmd_list(args):
    for w in workloads.ALL + workloads.PROGRAMS:
        print(f"{w.name:24} {paths.rel(w.argv()[0])} {' '.join(map(str, w.argv()[1:]))}\n"
              f"{'':24} {w.about}")
    print("\nallocators here:")
    for a in allocators.default_set():
        print(f"  {a.name:10} {a.lib or '(no preload)'}  {a.version}"
              + (f"  [{a.broken}]" if a.broken else ""))
    return 0


def cmd_run(args):
    runs, scale = _runs_scale(args, 7)
    allocs = allocators.default_set(args.allocators)
    chosen = workloads.with_threads(workloads.select(args.workloads), args.threads)
    print(f"bench: {len(chosen)} workloads x {len(allocs)} allocators x {runs} runs, "
          f"interleaved (scale {scale:g})")
    for a in allocs:
        print(f"  {a.name:9} {a.version:28} " + (a.lib or "(no preload)")
              + (f"   NOT RUNNABLE: {a.broken}" if a.broken else ""))
    meta = {"machine": machine.describe(), "command": _command_line(),
            "scale": scale, "runs": runs}
    busy = machine.busy_warning()
    if busy:
        print(busy)
    results = suite.run_suite(
        chosen, allocs, runs, scale, ipo=args.ipo, count_syscalls=args.syscalls,
        sample_ms=args.sample_ms if args.rss_trace else 0, timeout=args.timeout,
        floor=allocators.noop_floor() if args.ipo else None, out=suite.printer)

    meta["load_average_end"] = os.getloadavg()
    base = output.base("bench")
    charts = [chart.suite(base + ".png", results, allocs,
                          f"hakmem vs peers, median of {runs} runs")]
    if args.rss_trace:
        for e in results:
            series = {a: c.get("samples") for a, c in e["cells"].items()}
            charts.append(chart.traces(f"{base}-{e['name']}-rss.png", series,
                                       f"{e['name']}: RSS and throughput over time"))
    charts = [c for c in charts if c]
    print(report.terminal(results, allocs, runs))
    fails = report.failures(results, allocs)
    if fails:
        print("\nFailures (command to reproduce, from the repository root):")
        for w, a, err, cmd in fails:
            print(f"  {w}, {a}: {err}\n    {cmd}")
    md, js = report.save(base, results, allocs, runs, meta, charts)
    output.publish_latest("bench", [md, js] + charts[:1])
    print(f"\nreport: {paths.rel(md)}\ndata:   {paths.rel(js)}"
          + "".join(f"\nchart:  {paths.rel(c)}" for c in charts))
    return 0


def cmd_ipo(args):
    from . import ipo
    chosen = workloads.select(args.workloads or "random-mixed-tiny")
    return ipo.run(chosen, allocators.default_set(args.allocators), _command_line())


def cmd_ab(args):
    from . import ab
    runs, scale = _runs_scale(args, 10)
    return ab.run(args.a, args.b, workloads.select(args.workloads), runs, scale,
                  args.timeout, _command_line())


def cmd_soak(args):
    from . import soak
    return soak.run(args, _command_line())


def main(argv=None):
    p = argparse.ArgumentParser(prog="hakbench", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="the suite: every workload x allocator, interleaved")
    _common(r, 7)
    r.add_argument("--allocators", help="comma list of hakmem,glibc,mimalloc,jemalloc,tcmalloc")
    r.add_argument("--threads", type=int,
                   help="run the multi-threaded workloads with this many threads")
    r.add_argument("--ipo", action="store_true", help="add callgrind instructions/op")
    r.add_argument("--syscalls", action="store_true", help="add strace system calls/op")
    r.add_argument("--rss-trace", action="store_true", help="sample RSS over time and plot it")
    r.add_argument("--sample-ms", type=int, default=20, help="RSS sampling period (default 20)")
    r.set_defaults(func=cmd_run)

    i = sub.add_parser("ipo", help="instructions/op above the no-op floor (callgrind)")
    i.add_argument("--workloads", help="default random-mixed-tiny")
    i.add_argument("--allocators")
    i.set_defaults(func=cmd_ipo)

    a = sub.add_parser("ab", help="A/B of two revisions of libhakmem.so")
    _common(a, 10)
    a.add_argument("--a", required=True, help="git revision A (the base)")
    a.add_argument("--b", default="WORKTREE",
                   help="git revision B, or WORKTREE for the current tree (default)")
    a.set_defaults(func=cmd_ab)

    s = sub.add_parser("soak", help="long mixed run with RSS over time")
    s.add_argument("--duration", type=float, default=600, help="seconds per allocator (default 600)")
    s.add_argument("--allocators", help="default hakmem (glibc if hakmem is not built)")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--working-set", type=int, default=20000)
    s.add_argument("--sample-ms", type=int, help="default: 250 ms, a quarter of a breath")
    s.add_argument("--no-strace", action="store_true", help="skip the syscall count")
    s.add_argument("--quick", action="store_true", help="30-second soak")
    s.set_defaults(func=cmd_soak)

    sub.add_parser("list", help="workloads and allocators").set_defaults(func=cmd_list)
    args = p.parse_args(argv)
    return args.func(args)
