"""Headline 1: instructions per operation above the no-op floor.

random-mixed tiny (16-1024 B, working set 400, 2 M ops by default) under
callgrind, once with each allocator and once with the no-op malloc
(bench/noop_malloc.c) that gives the floor: what the loop costs with an
allocator that does nothing.

Two floors are reported.  The bump floor is the loop run with the no-op
library as it is: its malloc bumps a pointer (a few instructions a call), so
that blocks do not overlap.  The zero-cost floor is the same run without the
instructions executed inside that library: the loop and its calls and
returns only, the "malloc that does no work" of DESIGN-NOTES.  An
allocator's figure above the zero-cost floor is the stricter one.
"""
import json

from . import allocators, callgrind, machine, output, paths, tables


def run(workloads, allocs, command):
    if not callgrind.available():
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    floor = allocators.noop_floor()
    doc = {"meta": {"machine": machine.describe(), "command": command}, "workloads": []}
    text_parts, md_parts = [], []
    for w in workloads:
        print(f"{w.name}: callgrind, {w.ipo_scale:g}x the default ops", flush=True)
        rows, entry = [], {"name": w.name, "args": w.argv(w.ipo_scale)[1:], "results": {}}
        f = (callgrind.count(floor, w) if w.has_floor
             else {"error": "no floor for this workload", "command": ""})
        entry["results"]["floor"] = f
        base = f.get("ipo")
        zero = ((f["ir"] - f["lib_ir"]) / f["ops"]
                if base is not None and f.get("lib_ir") is not None and f["ops"] else None)
        if zero is not None:
            f["zero_cost_ipo"] = zero
        print("    floor: " + (f"{base:.2f} instructions/op (zero-cost floor "
                               f"{zero:.2f})" if base and zero else
                               f"{base:.2f} instructions/op" if base else
                               f"failed: {f['error']}"), flush=True)
        rows.append(["floor (no-op malloc)", f"{base:.1f}" if base else "n/a", "0",
                     f"{base - zero:.1f}" if zero is not None else "n/a",
                     f.get("ir", "-"), f.get("ops", "-")])
        for a in allocs:
            c = callgrind.count(a, w)
            if c.get("ipo") is not None and base is not None:
                c["above_floor"] = c["ipo"] - base
            if c.get("ipo") is not None and zero is not None:
                c["above_zero_cost_floor"] = c["ipo"] - zero
            entry["results"][a.name] = c
            if c.get("ipo") is None:
                print(f"    {a.name}: FAILED: {c['error']}\n      command: {c['command']}",
                      flush=True)
                rows.append([a.name, "FAIL", "FAIL", "FAIL", "-", "-"])
                continue
            above = f"{c['above_floor']:.1f}" if "above_floor" in c else "n/a"
            strict = (f"{c['above_zero_cost_floor']:.1f}" if "above_zero_cost_floor" in c
                      else "n/a")
            print(f"    {a.name}: {c['ipo']:.2f} instructions/op, {above} above the floor, "
                  f"{strict} above the zero-cost floor", flush=True)
            rows.append([a.name, f"{c['ipo']:.1f}", above, strict, c["ir"], c["ops"]])
        headers = ["allocator", "instructions/op", "above bump floor",
                   "above zero-cost floor", "instructions", "ops"]
        cmd = f.get("command", "")
        text_parts.append(f"\n{w.name} ({' '.join(entry['args'])}):\n"
                          + tables.text(headers, rows))
        md_parts += [f"## {w.name}", "", f"Floor command: `{cmd}`", "",
                     tables.markdown(headers, rows), ""]
        doc["workloads"].append(entry)
    print("\n".join(text_parts))
    b = output.base("ipo")
    m = doc["meta"]["machine"]
    with open(b + ".md", "w") as fh:
        fh.write("\n".join([
            "# Instructions per operation (callgrind)", "",
            f"- Date: {m['date']}; {m['cpu']}, {m['cores']} cores; {m['libc']}",
            f"- hakmem: {m['hakmem_commit']}", f"- Command: `{command}`",
            "- Counted: instructions executed inside bench_loop (callgrind "
            "--toggle-collect=bench_loop) divided by the ops it made; the floor is "
            "the same loop with the no-op malloc of bench/noop_malloc.c (a pointer "
            "bump); the zero-cost floor leaves out the instructions executed inside "
            "that library, so it is the loop with its calls and returns only.", "",
            "Allocators: " + ", ".join(f"{a.name} ({a.version or a.lib or 'glibc'})"
                                       for a in allocs), ""] + md_parts))
    with open(b + ".json", "w") as fh:
        json.dump(doc, fh, indent=1)
    output.publish_latest("ipo", [b + ".md", b + ".json"])
    print(f"\nreport: {paths.rel(b)}.md  data: {paths.rel(b)}.json")
    return 0
