"""Running one workload process under one allocator, and reading its output."""
import json
import os
import shlex
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import List, Optional

from . import paths


@dataclass
class Run:
    allocator: str
    command: str                   # what to paste to reproduce it
    ok: bool = False
    error: Optional[str] = None
    probe: dict = field(default_factory=dict)
    result: dict = field(default_factory=dict)
    samples: List[dict] = field(default_factory=list)
    sampler_tid: Optional[int] = None
    wall: float = 0.0


def command_string(allocator, argv, wrapper=()):
    words = list(wrapper) + [paths.rel(argv[0])] + list(argv[1:])
    return allocator.command_prefix() + shlex.join(words)


def parse_output(run, text):
    for line in text.splitlines():
        tag, _, body = line.partition(" ")
        try:
            if tag == "HAKBENCH-PROBE":
                run.probe = json.loads(body)
            elif tag == "HAKBENCH-RESULT":
                run.result = json.loads(body)
            elif tag == "HAKBENCH-SAMPLE":
                run.samples.append(json.loads(body))
            elif tag == "HAKBENCH-SAMPLER":
                run.sampler_tid = json.loads(body)["tid"]
        except (ValueError, KeyError):
            pass


def check_provider(run, allocator, needs):
    """The refusal of a run served by another allocator than the one meant."""
    if not run.probe:
        return "no probe line: did the workload start?"
    for fn in needs:
        got = run.probe.get(fn, "?")
        if not allocator.serves(got):
            want = allocator.lib or "the C library"
            return f"wrong allocator: {fn} came from {got}, not {want}"
    return None


def describe_exit(code):
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _last_line(text):
    """The workload's own complaint if there is one, else the last line."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    ours = [ln for ln in lines if ln.startswith("hakbench:")]
    return (ours or lines or [""])[-1][:300]


def run(allocator, argv, needs, timeout=300.0, wrapper=(), sample_ms=0,
        extra_env=None):
    """Run argv (a workload) with allocator preloaded; returns a Run."""
    r = Run(allocator.name, command_string(allocator, argv, wrapper))
    if allocator.broken:
        r.error = allocator.broken
        return r
    env = allocator.env()
    if sample_ms:
        env["HAKBENCH_SAMPLE_MS"] = str(sample_ms)
    env.update(extra_env or {})
    start = os.times().elapsed
    try:
        p = subprocess.run(list(wrapper) + list(argv), env=env, cwd=paths.REPO,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        r.error = f"timed out after {timeout:.0f} s"
        parse_output(r, e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))
        return r
    except OSError as e:
        r.error = f"could not start: {e}"
        return r
    r.wall = os.times().elapsed - start
    parse_output(r, p.stdout)
    if p.returncode != 0:
        why = _last_line(p.stderr)
        r.error = describe_exit(p.returncode) + (f": {why}" if why else "")
        return r
    r.error = check_provider(r, allocator, needs)
    if r.error is None and not r.result:
        r.error = "no result line"
    r.ok = r.error is None
    return r


def stream(allocator, argv, needs, wrapper=(), preload_in_wrapper=False,
           on_stdout=None, on_stderr=None, timeout=None):
    """Like run(), but hands each output line to a callback as it comes: for
    long runs (soak) and for tracers whose output is counted on the fly.
    With preload_in_wrapper, the wrapper (e.g. strace -E) passes LD_PRELOAD
    on to the workload, so the wrapper itself runs without it."""
    r = Run(allocator.name, command_string(allocator, argv, wrapper))
    if allocator.broken:
        r.error = allocator.broken
        return r
    env = allocator.env()
    if preload_in_wrapper:
        env.pop("LD_PRELOAD", None)
    out_lines, err_lines = [], []
    start = os.times().elapsed
    try:
        p = subprocess.Popen(list(wrapper) + list(argv), env=env, cwd=paths.REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, bufsize=1)
    except OSError as e:
        r.error = f"could not start: {e}"
        return r

    def pump(pipe, keep, callback):
        for line in pipe:
            if callback is None or callback(line) is not True:
                keep.append(line)  # callbacks return True for lines they consumed

    readers = [threading.Thread(target=pump, args=(p.stdout, out_lines, on_stdout)),
               threading.Thread(target=pump, args=(p.stderr, err_lines, on_stderr))]
    for t in readers:
        t.start()
    try:
        code = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        code = p.wait()
        r.error = f"timed out after {timeout:.0f} s"
    for t in readers:
        t.join()
    r.wall = os.times().elapsed - start
    parse_output(r, "".join(out_lines))
    if r.error is None and code != 0:
        why = _last_line("".join(err_lines))
        r.error = describe_exit(code) + (f": {why}" if why else "")
    if r.error is None:
        r.error = check_provider(r, allocator, needs)
    if r.error is None and not r.result:
        r.error = "no result line"
    r.ok = r.error is None
    return r
