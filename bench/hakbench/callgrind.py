"""Instructions per operation, counted by valgrind's callgrind.

Only instructions executed inside the workload's bench_loop function (and
everything it calls: malloc, free, ...) are counted (--toggle-collect), so
process start-up and the final clean-up are left out.  Callgrind counts are
deterministic for single-threaded workloads, so one run suffices.
"""
import os
import re
import tempfile

from . import runner

VALGRIND = ["valgrind", "--tool=callgrind", "--toggle-collect=bench_loop"]


def count(allocator, workload, timeout=300.0):
    """Returns a dict: ir, ops, ipo (instructions per op), or error; and the
    command that was run."""
    argv = workload.argv(workload.ipo_scale)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        wrapper = VALGRIND + [f"--callgrind-out-file={out}"]
        run = runner.run(allocator, argv, workload.needs, timeout=timeout,
                         wrapper=wrapper)
        cmd = run.command.replace(out, "callgrind.out")
        if not run.ok:
            return {"error": run.error, "command": cmd}
        ir = _total_ir(out)
        lib_ir = _self_ir_of(out, os.path.basename(allocator.lib)) if allocator.lib else None
    if ir is None:
        return {"error": "no totals in callgrind output", "command": cmd}
    ops = run.result["ops"]
    result = {"ir": ir, "ops": ops, "ipo": ir / ops if ops else None, "command": cmd}
    if lib_ir is not None:
        result["lib_ir"] = lib_ir  # instructions executed inside the preloaded library
    return result


def _self_ir_of(path, lib_name):
    """Instructions executed in the functions of the object named lib_name
    (their self cost), from callgrind_annotate; None if it cannot tell."""
    import subprocess
    try:
        text = subprocess.run(["callgrind_annotate", "--threshold=100", path],
                              capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    total = 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+\S.*\[(.*)\]\s*$", line)
        if m and os.path.basename(m.group(2)) == lib_name:
            total += int(m.group(1).replace(",", ""))
    return total


def _total_ir(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"(?:totals|summary):\s+(\d+)", line)
            if m:
                return int(m.group(1))
    return None


def available():
    from shutil import which
    return which("valgrind") is not None
