"""Soak: the soak workload for a chosen duration, RSS sampled over time.

Figures per allocator: RSS drift, the change of the median RSS from the
first tenth of the run to the last tenth (the first second, one breath of
the working set, is left out of the first tenth as warm-up); system calls
per op; throughput; a PNG of RSS and throughput over time.

The timed run is not traced: under strace every system call stops the
process, which would slow an allocator that makes many and change its RSS
over time.  System calls are counted in a second, shorter run under strace
(a tenth of the duration, at least 10 s; --no-strace skips it).
"""
import json
import statistics
import time

from . import allocators, chart, machine, output, paths, runner, syscalls, tables

NEEDS = ["malloc", "free"]


def drift(samples, warmup=1.0):
    """Percent change of median RSS, first tenth to last tenth of the run."""
    if len(samples) < 10:
        return None
    end = samples[-2]["t"]  # the very last sample is taken after the threads stopped
    tenth = end / 10
    first = [s["rss_kb"] for s in samples if warmup <= s["t"] <= max(tenth, warmup + tenth / 2)]
    last = [s["rss_kb"] for s in samples if end - tenth <= s["t"] <= end]
    if not first or not last:
        return None
    a, b = statistics.median(first), statistics.median(last)
    return {"first_tenth_kb": a, "last_tenth_kb": b, "drift_pct": 100.0 * (b - a) / a}


def _soak_one(alloc, argv, duration):
    t0 = time.monotonic()
    next_report = [duration / 10]

    def on_stdout(line):
        if not line.startswith("HAKBENCH-SAMPLE "):
            return False
        s = json.loads(line.split(" ", 1)[1])
        if s["t"] >= next_report[0]:
            next_report[0] += duration / 10
            print(f"    {alloc.name}: {s['t']:6.0f}s  RSS {s['rss_kb'] / 1024:8.1f} MiB  "
                  f"{s['ops'] / max(s['t'], 1e-9) / 1e6:7.1f} M ops/s", flush=True)
        return False  # keep it: runner parses the samples afterwards

    run = runner.stream(alloc, argv, NEEDS, on_stdout=on_stdout, timeout=duration * 3 + 120)
    print(f"    {alloc.name}: done in {time.monotonic() - t0:.0f}s"
          + ("" if run.ok else f": FAILED: {run.error}\n      command: {run.command}"),
          flush=True)
    return run


def _count_syscalls(alloc, argv, seconds):
    """Syscalls per op in a shorter run of the same workload under strace."""
    argv = argv[:1] + [str(int(seconds))] + argv[2:]
    print(f"    {alloc.name}: counting system calls ({seconds:.0f}s under strace)", flush=True)
    run, tally = syscalls.stream(alloc, argv, NEEDS, timeout=seconds * 3 + 120)
    if not run.ok:
        return {"error": run.error, "command": run.command}
    ops = run.result["ops"]
    return {"per_op": tally.total() / ops if ops else None, "ops": ops,
            "by_name": tally.names(), "command": run.command}


def run(args, command):
    duration = 30.0 if args.quick and args.duration == 600 else args.duration
    # A quarter of the workload's one-second breath: a period of whole
    # seconds would sample one phase of it only, and the tenths' medians
    # would hang on what the allocator does at that phase.
    sample_ms = args.sample_ms or 250
    allocs = allocators.default_set(args.allocators)
    if not args.allocators:
        hak = allocs[0]
        allocs = [hak] if not hak.broken else [allocators.glibc()]
    use_strace = not args.no_strace and syscalls.available()
    argv = [paths.binary("soak"), str(int(duration)), str(args.threads),
            str(args.working_set), str(sample_ms), "42"]
    print(f"soak: {duration:.0f}s per allocator ({', '.join(a.name for a in allocs)}), "
          f"RSS every {sample_ms} ms"
          + (f", then syscalls counted in {min(duration, max(10.0, duration / 10)):.0f}s under strace"
             if use_strace else ""),
          flush=True)
    rows, doc, series = [], {"meta": {"machine": machine.describe(), "command": command,
                                       "duration": duration, "sample_ms": sample_ms},
                             "allocators": {}}, {}
    strace_seconds = min(duration, max(10.0, duration / 10))
    for a in allocs:
        r = _soak_one(a, argv, duration)
        entry = {"command": r.command, "ok": r.ok, "error": r.error, "result": r.result,
                 "samples": r.samples}
        if r.ok:
            d = drift(r.samples)
            sc = _count_syscalls(a, argv, strace_seconds) if use_strace else {}
            per_op = sc.get("per_op")
            entry.update(drift=d, syscalls=sc)
            series[a.name] = r.samples
            rows.append([a.name, f"{r.result['ops_per_sec'] / 1e6:.1f}",
                         f"{max(s['rss_kb'] for s in r.samples) / 1024:.1f}",
                         f"{d['first_tenth_kb'] / 1024:.1f}" if d else "-",
                         f"{d['last_tenth_kb'] / 1024:.1f}" if d else "-",
                         f"{d['drift_pct']:+.1f}%" if d else "-",
                         f"{r.result['rss_after_free_kb'] / 1024:.1f}",
                         f"{per_op:.2g}" if per_op is not None else "-"])
        else:
            rows.append([a.name, "FAIL"] + ["-"] * 6)
        doc["allocators"][a.name] = entry
    headers = ["allocator", "M ops/s", "max RSS MiB", "first tenth", "last tenth",
               "drift", "after free", "syscalls/op"]
    print("\n" + tables.text(headers, rows))
    base = output.base("soak")
    png = chart.traces(base + ".png", series, f"soak, {duration:.0f} s: RSS and throughput")
    m = doc["meta"]["machine"]
    with open(base + ".md", "w") as f:
        f.write("\n".join([
            "# hakmem soak", "", f"- Duration: {duration:.0f} s per allocator, "
            f"RSS sampled every {sample_ms} ms", f"- Machine: {m['cpu']}, {m['cores']} cores; "
            f"{m['date']}; hakmem {m['hakmem_commit']}", f"- Command: `{command}`",
            f"- Workload: `{' '.join([paths.rel(argv[0])] + argv[1:])}`",
            "- Drift: median RSS of the last tenth against the first tenth (after a "
            "1 s warm-up); syscalls/op: a separate, shorter run under strace -f, calls "
            "between the workload's markers without the harness's own", "", tables.markdown(headers, rows), ""]
            + ([f"![RSS over time]({paths.rel(png).split('/')[-1]})", ""] if png else [])))
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    output.publish_latest("soak", [base + ".md", base + ".json", png])
    print(f"\nreport: {paths.rel(base)}.md  data: {paths.rel(base)}.json"
          + (f"  chart: {paths.rel(png)}" if png else ""))
    return 0 if all(e["ok"] for e in doc["allocators"].values()) else 1
