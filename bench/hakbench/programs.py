"""Real programs from Debian's packages, timed whole under each allocator
(`make bench-programs`): what a user sees, where make bench's workloads
show what an allocator does.  Each runs one input of ours
(bench/programs/) for about half a second to a second under glibc, pinned
to one CPU; bench/workloads/program.c runs it and reports its wall time,
peak RSS and exit status (a failed program fails the run)."""
import os

from . import paths
from .workloads import Workload

INPUTS = os.path.join(paths.BENCH_DIR, "programs")


def _program(name, package, command, about):
    def make_args(scale, command=command):
        return [name] + [a.format(inputs=paths.rel(INPUTS)) for a in command]
    return Workload(name, "program", make_args, f"{about} (Debian package {package})",
                    has_floor=False, single_thread=True, whole_program=True,
                    extra=["user_s", "sys_s", "minor_faults"])


PROGRAMS = [
    _program("prog-python", "python3", ["/usr/bin/python3", "{inputs}/objects.py"],
             "python3: dicts of records, text, a JSON round trip, object cycles"),
    _program("prog-sqlite", "sqlite3", ["sqlite3", ":memory:", ".read {inputs}/ledger.sql"],
             "sqlite3: a ledger in an in-memory database"),
    _program("prog-lua", "lua5.4", ["lua5.4", "{inputs}/tables.lua"],
             "lua 5.4: trees of tables, strings, a map churned"),
    _program("prog-perl", "perl", ["perl", "{inputs}/words.pl"],
             "perl: hashes of words, regular expressions, sorts"),
    _program("prog-z3", "z3", ["z3", "{inputs}/queens.smt2"],
             "z3: 24 queens as integer arithmetic"),
    _program("prog-gs", "ghostscript",
             ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=ppmraw", "-r100",
              "-sOutputFile=/dev/null", "{inputs}/shapes.ps"],
             "ghostscript: 12 pages of curves and text rendered"),
]
