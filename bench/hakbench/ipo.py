"""Headline 1: instructions per operation above the no-op floor.

random-mixed tiny (16-1024 B, working set 400, 2 M ops by default) under
callgrind, once with each allocator and once with the no-op malloc
(bench/noop_malloc.c) that gives the floor: what the loop costs with an
allocator that does nothing.
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
        print("    floor: " + (f"{base:.2f} instructions/op" if base else f"failed: {f['error']}"),
              flush=True)
        rows.append(["floor (no-op malloc)", f"{base:.1f}" if base else "n/a", "0", 
                     f.get("ir", "-"), f.get("ops", "-")])
        for a in allocs:
            c = callgrind.count(a, w)
            if c.get("ipo") is not None and base is not None:
                c["above_floor"] = c["ipo"] - base
            entry["results"][a.name] = c
            if c.get("ipo") is None:
                print(f"    {a.name}: FAILED: {c['error']}\n      command: {c['command']}",
                      flush=True)
                rows.append([a.name, "FAIL", "FAIL", "-", "-"])
                continue
            above = f"{c['above_floor']:.1f}" if "above_floor" in c else "n/a"
            print(f"    {a.name}: {c['ipo']:.2f} instructions/op, {above} above the floor",
                  flush=True)
            rows.append([a.name, f"{c['ipo']:.1f}", above, c["ir"], c["ops"]])
        headers = ["allocator", "instructions/op", "above floor", "instructions", "ops"]
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
            "the same loop with a malloc that does no work.", "",
            "Allocators: " + ", ".join(f"{a.name} ({a.version or a.lib or 'glibc'})"
                                       for a in allocs), ""] + md_parts))
    with open(b + ".json", "w") as fh:
        json.dump(doc, fh, indent=1)
    output.publish_latest("ipo", [b + ".md", b + ".json"])
    print(f"\nreport: {paths.rel(b)}.md  data: {paths.rel(b)}.json")
    return 0
