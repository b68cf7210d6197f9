"""A/B: two revisions of libhakmem.so, interleaved, with a GO/NO-GO verdict.

Each revision is checked out in a git worktree under build/ab/<commit> and
built there with `make lib` (the special revision WORKTREE is the current
work tree, built in place).  The same workload binaries run both libraries,
A B, B A, A B ... (suite.py), and each workload's change is the median of
the rounds' ratios B/A: a round runs A and B back to back, so a machine
that drifts between rounds (this project's VM: 1.5x between minutes) moves
both alike, where the ratio of the two medians takes the drift as a change.
The verdict follows the original hakmem's protocol: GO above +1%, NO-GO
below -1%, NEUTRAL in between; a change whose rounds' middle half (the
interquartile range of the ratios) reaches both sides of 0 is marked as
within noise.
"""
import json
import os
import subprocess

from . import allocators, machine, output, paths, stats, suite, tables

BAND_PCT = 1.0


def _clean_env():
    # `make ab A=...` puts A= into MAKEFLAGS, and the top-level Makefile has a
    # variable A of its own: a sub-make must not inherit it.
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL"):
        env.pop(k, None)
    return env


def _git(*args):
    return subprocess.run(["git", "-C", paths.REPO] + list(args), capture_output=True,
                          text=True, check=True).stdout.strip()


def build(rev):
    """Build libhakmem.so at rev; returns (label, path to the library)."""
    if rev == "WORKTREE":
        print("ab: building the work tree (make lib)", flush=True)
        p = subprocess.run(["make", "-C", paths.REPO, "lib"], env=_clean_env(),
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"ab: make lib failed in the work tree:\n{p.stderr[-2000:]}")
        return "worktree" + ("+" + allocators.git_version(paths.REPO)), paths.HAKMEM_LIB
    try:
        sha = _git("rev-parse", "--verify", rev + "^{commit}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"ab: '{rev}' is not a git revision here")
    tree = os.path.join(paths.BUILD, "ab", sha[:12])
    lib = os.path.join(tree, "build", "libhakmem.so")
    if not os.path.isdir(tree):
        print(f"ab: checking out {rev} ({sha[:12]}) in {paths.rel(tree)}", flush=True)
        _git("worktree", "add", "--detach", "--force", tree, sha)
    if not os.path.exists(lib):
        print(f"ab: building {rev} ({sha[:12]})", flush=True)
        p = subprocess.run(["make", "-C", tree, "lib"], env=_clean_env(),
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit(f"ab: make lib failed at {rev}:\n{p.stderr[-2000:]}")
    return f"{rev} ({sha[:12]})", lib


def paired_change(cell_a, cell_b):
    """Median and quartiles, in %, of B's change against A round by round
    (runs[i] of both cells is round i: a failed run fails the workload)."""
    q1, median, q3 = stats.quartiles(stats.paired_ratios(cell_a, cell_b))
    return 100.0 * (median - 1.0), 100.0 * (q1 - 1.0), 100.0 * (q3 - 1.0)


def verdict(change_pct, q1_pct, q3_pct):
    v = "GO" if change_pct > BAND_PCT else "NO-GO" if change_pct < -BAND_PCT else "NEUTRAL"
    return v + (" (within noise)" if q1_pct < 0 < q3_pct and v != "NEUTRAL" else "")


def run(rev_a, rev_b, workloads, runs, scale, timeout, command):
    if not rev_a:
        raise SystemExit("usage: make ab A=<git rev> [B=<git rev>|WORKTREE]")
    label_a, lib_a = build(rev_a)
    label_b, lib_b = build(rev_b)
    a = allocators.hakmem(lib_a, name="A", version=label_a)
    b = allocators.hakmem(lib_b, name="B", version=label_b)
    print(f"ab: A = {label_a}\n    B = {label_b}\n"
          f"    {len(workloads)} workloads x {runs} runs each, interleaved A B, B A, ...",
          flush=True)
    results = suite.run_suite(workloads, [a, b], runs, scale, timeout=timeout,
                              out=suite.printer)
    rows, doc_rows = [], []
    for e in results:
        ca, cb = e["cells"]["A"], e["cells"]["B"]
        sa, sb = ca.get("ops_per_sec"), cb.get("ops_per_sec")
        if ca["failures"] or cb["failures"] or not sa or not sb:
            which = "A" if (ca["failures"] or not sa) else "B"
            rows.append([e["name"], "-", "-", "-", "-", f"FAILED ({which})"])
            doc_rows.append({"workload": e["name"], "verdict": f"FAILED ({which})"})
            continue
        change, q1, q3 = paired_change(ca, cb)
        noise = max(sa["cv_pct"], sb["cv_pct"])
        rss = 100.0 * (cb["peak_rss_kb"]["median"] / ca["peak_rss_kb"]["median"] - 1.0)
        v = verdict(change, q1, q3)
        rows.append([e["name"], tables.rate(sa["median"]), tables.rate(sb["median"]),
                     f"{change:+.2f}%", f"{q1:+.1f}% .. {q3:+.1f}%", f"{noise:.1f}%",
                     f"{rss:+.1f}%", v])
        doc_rows.append({"workload": e["name"], "a": sa, "b": sb, "change_pct": change,
                         "change_q1_pct": q1, "change_q3_pct": q3, "noise_pct": noise,
                         "peak_rss_change_pct": rss, "verdict": v})
    headers = ["workload", "A ops/s", "B ops/s", "change", "middle half", "max CV",
               "peak RSS", "verdict"]
    rows = [r if len(r) == 8 else r[:5] + ["-", "-", r[5]] for r in rows]
    print("\nA/B: change of B against A (median of %d rounds' ratios; medians of the runs)\n"
          % runs + tables.text(headers, rows))
    base = output.base("ab")
    m = machine.describe()
    with open(base + ".md", "w") as f:
        f.write("\n".join([
            "# hakmem A/B", "", f"- A: {label_a}, `{paths.rel(lib_a)}`",
            f"- B: {label_b}, `{paths.rel(lib_b)}`",
            f"- {runs} runs each, interleaved; scale {scale:g}; change: the median of "
            f"the rounds' ratios B/A, and their middle half; verdict: GO above "
            f"+{BAND_PCT:g}%, NO-GO below -{BAND_PCT:g}%, NEUTRAL between, within "
            f"noise when the middle half reaches both sides of 0",
            f"- Machine: {m['cpu']}, {m['cores']} cores; {m['date']}",
            f"- Command: `{command}`", "", tables.markdown(headers, rows), ""]))
    with open(base + ".json", "w") as f:
        json.dump({"a": label_a, "b": label_b, "runs": runs, "scale": scale,
                   "machine": m, "command": command, "rows": doc_rows,
                   "workloads": results}, f, indent=1)
    output.publish_latest("ab", [base + ".md", base + ".json"])
    print(f"\nreport: {paths.rel(base)}.md  data: {paths.rel(base)}.json")
    return 0


