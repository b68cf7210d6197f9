"""The suite's report: tables for the terminal, a Markdown file, a JSON file."""
import json
import math
import os

from . import stats, tables


def _mib(kb):
    return f"{kb / 1024:.1f}"


def _median(cell, key):
    s = cell.get(key)
    return s["median"] if s else None


def _mib_of(cell, key):
    """The median in MiB, or '-' where the workload has no such figure (a
    real program has no RSS after free)."""
    v = _median(cell, key)
    return "-" if v is None else _mib(v)


def _failed(cell):
    return bool(cell["failures"]) or cell.get("ops_per_sec") is None


def _best_peer(entry, allocs, key, higher_is_better):
    vals = [_median(entry["cells"][a.name], key) for a in allocs
            if a.is_peer and not _failed(entry["cells"][a.name])]
    vals = [v for v in vals if v]
    if not vals:  # no peer ran: compare with whatever did
        vals = [_median(entry["cells"][a.name], key) for a in allocs
                if not _failed(entry["cells"][a.name])]
        vals = [v for v in vals if v]
    if not vals:
        return None
    return max(vals) if higher_is_better else min(vals)


def figure_rows(results, allocs, key, fmt, higher_is_better):
    """Rows: workload, then 'value (ratio to best peer)' per allocator."""
    rows = []
    for e in results:
        best = _best_peer(e, allocs, key, higher_is_better)
        row = [e["name"]]
        for a in allocs:
            cell = e["cells"][a.name]
            v = _median(cell, key)
            if _failed(cell):
                row.append("FAIL")
            elif v is None:
                row.append("-")
            else:
                ratio = f" ({v / best:.2f}x)" if best else ""
                row.append(fmt(v) + ratio)
        if key == "ops_per_sec":
            cvs = [cell["ops_per_sec"]["cv_pct"] for cell in e["cells"].values()
                   if cell.get("ops_per_sec")]
            row.append(f"{max(cvs):.1f}%" if cvs else "-")
        rows.append(row)
    return rows


def ipo_rows(results, allocs):
    rows = []
    for e in results:
        if "ipo_floor" not in e and not any("ipo" in c for c in e["cells"].values()):
            continue
        floor = e.get("ipo_floor", {}).get("ipo")
        row = [e["name"], f"{floor:.1f}" if floor else "n/a"]
        for a in allocs:
            c = e["cells"][a.name].get("ipo", {})
            if c.get("ipo") is None:
                row.append("FAIL")
            elif c.get("above_floor") is not None:
                row.append(f"{c['ipo']:.1f} ({c['above_floor']:+.1f})")
            else:
                row.append(f"{c['ipo']:.1f}")
        rows.append(row)
    return rows


def syscall_rows(results, allocs):
    rows = []
    for e in results:
        if not any("syscalls" in c for c in e["cells"].values()):
            continue
        row = [e["name"]]
        for a in allocs:
            c = e["cells"][a.name].get("syscalls", {})
            row.append(f"{c['per_op']:.2g}" if c.get("per_op") is not None else "FAIL")
        rows.append(row)
    return rows


def extra_rows(results, allocs):
    rows = []
    for e in results:
        for key in e.get("extra", []):
            row = [f"{e['name']} {key}"]
            for a in allocs:
                v = _median(e["cells"][a.name], key)
                row.append("FAIL" if _failed(e["cells"][a.name])
                           else ("-" if v is None else f"{v:.4g}"))
            rows.append(row)
    return rows


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def variant_rows(results, allocs, variant):
    """hakmem, or a variant of hakmem's (the hardened build, the heap
    profiler on): its time per op against each other allocator's, per
    workload, and their geometric means: the yardsticks of issues 12, 13
    and 14.  Each figure is the median of the ratios of the runs of one round
    (the variant's run and the other's, close in time), with the middle
    half of those ratios: the host's speed drifts from minute to minute,
    by up to 3x on the rows that pass blocks between CPUs, and a ratio of
    the two medians carries that drift.  The last row gives the geomean of
    the ratios of the medians too, the figure before."""
    names = [a.name for a in allocs]
    if variant not in names or "hakmem" not in names:
        return []
    others = [n for n in names if n != variant]
    rows = []
    paired, unpaired = {n: [] for n in others}, {n: [] for n in others}
    for e in results:
        var = e["cells"][variant]
        row = [e["name"]]
        for n in others:
            c = e["cells"][n]
            ratios = stats.paired_ratios(var, c)  # None where a run failed
            if not ratios:
                row.append("-")
                continue
            q1, median, q3 = stats.quartiles(ratios)
            paired[n].append(median)
            unpaired[n].append(_median(c, "ops_per_sec") / _median(var, "ops_per_sec"))
            row.append(f"{median:.2f}x ({q1:.2f}-{q3:.2f})")
        rows.append(row)
    rows.append(["geomean"] + [f"{_geomean(paired[n]):.3f}x" if paired[n] else "-"
                               for n in others])
    rows.append(["geomean, ratio of medians"] +
                [f"{_geomean(unpaired[n]):.3f}x" if unpaired[n] else "-" for n in others])
    return rows


VARIANTS = [
    ("hakmem", "hakmem against each allocator, round by round", "hakmem"),
    ("hakmem-secure", "The hardened build's cost", "the hardened build"),
    ("hakmem-heapprof", "The heap profiler's cost",
     "hakmem with HAKMEM_HEAP_PROFILE set (default rate)"),
]


def sections(results, allocs, runs):
    """(title, note, headers, rows) for each table of the report."""
    names = [a.name for a in allocs]
    out = [
        ("Throughput", f"ops/s, median of {runs} runs; (ratio to the best peer in the row); "
         "max CV = largest coefficient of variation in the row",
         ["workload"] + names + ["max CV"],
         figure_rows(results, allocs, "ops_per_sec", tables.rate, True)),
        ("Peak RSS", "MiB (VmHWM), median; (ratio to the smallest peer)",
         ["workload"] + names, figure_rows(results, allocs, "peak_rss_kb", _mib, False)),
        ("RSS after free", "MiB resident once the workload has freed everything, "
         "before malloc_trim; (ratio to the smallest peer)",
         ["workload"] + names, figure_rows(results, allocs, "rss_after_free_kb", _mib, False)),
        ("RSS after free and malloc_trim(0)", "MiB",
         ["workload"] + names, figure_rows(results, allocs, "rss_after_trim_kb", _mib, False)),
    ]
    for variant, title, what in VARIANTS:
        rows = variant_rows(results, allocs, variant)
        if rows:
            out.append((title, f"{variant}'s time per op over each allocator's in the same "
                        "round: the median over the rounds (the middle half of the rounds' "
                        f"ratios); above 1: {what} is slower",
                        ["workload"] + ["vs " + a.name for a in allocs if a.name != variant],
                        rows))
    ipo = ipo_rows(results, allocs)
    if ipo:
        out.append(("Instructions per op (callgrind)",
                    "instructions inside bench_loop / ops; (+ above the no-op malloc floor)",
                    ["workload", "floor"] + names, ipo))
    sc = syscall_rows(results, allocs)
    if sc:
        out.append(("System calls per op (strace)",
                    "calls between the workload's markers / ops", ["workload"] + names, sc))
    ex = extra_rows(results, allocs)
    if ex:
        out.append(("Workload-specific figures", "median", ["figure"] + names, ex))
    return out


def terminal(results, allocs, runs):
    parts = []
    for title, note, headers, rows in sections(results, allocs, runs):
        parts.append(f"\n{title}: {note}\n" + tables.text(headers, rows))
    return "\n".join(parts)


def _details(results, allocs):
    lines = ["## Details", ""]
    for e in results:
        lines += [f"### {e['name']}", "", f"{e['about']}. Op = {e['op_unit']}.", ""]
        rows = []
        for a in allocs:
            c = e["cells"][a.name]
            s = c.get("ops_per_sec")
            if s is None:
                rows.append([a.name, "FAIL", "", "", "", "", "", "", ""])
                continue
            rows.append([a.name, tables.rate(s["median"]), tables.rate(s["min"]),
                         tables.rate(s["max"]), f"{s['cv_pct']:.1f}%", s["n"],
                         _mib_of(c, "peak_rss_kb"), _mib_of(c, "rss_after_free_kb"),
                         _mib_of(c, "rss_after_trim_kb")])
        lines.append(tables.markdown(
            ["allocator", "median ops/s", "min", "max", "CV", "runs",
             "peak RSS MiB", "after free", "after trim"], rows))
        cmd = next((c["command"] for c in e["cells"].values() if c.get("command")), "")
        lines += ["", f"Command: `{cmd}`", ""]
        for a in allocs:
            sc = e["cells"][a.name].get("syscalls", {})
            if sc.get("by_name"):
                top = ", ".join(f"{k} {v}" for k, v in list(sc["by_name"].items())[:5])
                lines.append(f"- {a.name} system calls: {top}")
        lines.append("")
    return lines


def failures(results, allocs):
    out = []
    for e in results:
        for a in allocs:
            for f in e["cells"][a.name]["failures"]:
                out.append((e["name"], a.name, f["error"], f["command"]))
                break
            for kind in ("ipo", "syscalls"):
                c = e["cells"][a.name].get(kind, {})
                if c.get("error"):
                    out.append((e["name"], f"{a.name} ({kind})", c["error"], c["command"]))
    return out


def markdown(results, allocs, runs, meta, charts=()):
    lines = ["# hakmem benchmark report", ""]
    m = meta["machine"]
    lines += [f"- Date: {m['date']}; host {m['host']}",
              f"- Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}; "
              f"Linux {m['kernel']}; {m['libc']}; {m['compiler']}",
              f"- Load average at start: {', '.join(f'{x:.2f}' for x in m['load_average'])}"
              + (f"; at end: {', '.join(f'{x:.2f}' for x in meta['load_average_end'])}"
                 if meta.get("load_average_end") else "")
              + " (1, 5, 15 min)",
              f"- hakmem: {m['hakmem_commit']}",
              f"- Suite command: `{meta['command']}`",
              f"- Runs per allocator and workload: {runs}, interleaved; "
              f"scale {meta['scale']:g}", "",
              "Allocators:", ""]
    for a in allocs:
        where = a.lib or "(no preload)"
        lines.append(f"- {a.name}: {a.version or '?'}, `{where}`"
                     + (f" — NOT RUN: {a.broken}" if a.broken else ""))
    lines.append("")
    for title, note, headers, rows in sections(results, allocs, runs):
        lines += [f"## {title}", "", note + ".", "", tables.markdown(headers, rows), ""]
    for c in charts:
        lines += [f"![{os.path.basename(c)}]({os.path.basename(c)})", ""]
    fails = failures(results, allocs)
    if fails:
        lines += ["## Failures", "", "Each failed run, with the command that reproduces it "
                  "(from the repository root).", ""]
        for w, a, err, cmd in fails:
            lines.append(f"- {w}, {a}: {err}\n  `{cmd}`")
        lines.append("")
    lines += _details(results, allocs)
    return "\n".join(lines)


def save(base, results, allocs, runs, meta, charts=()):
    """Writes base.md and base.json; returns their paths."""
    md = base + ".md"
    js = base + ".json"
    with open(md, "w") as f:
        f.write(markdown(results, allocs, runs, meta, charts))
    doc = {
        "meta": meta,
        "allocators": [{"name": a.name, "lib": a.lib, "version": a.version,
                        "broken": a.broken, "is_peer": a.is_peer} for a in allocs],
        "runs": runs,
        "workloads": results,
    }
    with open(js, "w") as f:
        json.dump(doc, f, indent=1)
    return md, js
