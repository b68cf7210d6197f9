#!/usr/bin/env python3
"""Name the addresses bench/pcsample.c took: the share of samples per
function, most first.

usage: pcsample.py [--map FROM=TO] [--top N] FILE...

Each FILE is a $PCSAMPLE_OUT.<pid> dump; several are added up.  --map
rewrites a path prefix of the maps (the lent machine's checkout) to where
the same files lie here.  Functions are found with nm in the files the maps
name; an address in a file that is not here, or in no file, is counted under
that file's name (or [anon])."""
import argparse
import bisect
import collections
import os
import struct
import sys

from nm_symbols import nm_symbols


def load_segments(path):
    """(p_offset, p_vaddr, p_filesz) of each PT_LOAD of an ELF file."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return []
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    segs = []
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", table, i * phentsize)
        if p_type == 1:
            segs.append((p_offset, p_vaddr, p_filesz))
    return segs


class File:
    def __init__(self, path):
        self.ok = os.path.exists(path)
        self.segs = load_segments(path) if self.ok else []
        syms = nm_symbols(path, "tTwWiI", dynamic=True) if self.ok else []
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def name(self, offset):
        for p_offset, p_vaddr, p_filesz in self.segs:
            if p_offset <= offset < p_offset + p_filesz:
                vaddr = offset - p_offset + p_vaddr
                i = bisect.bisect_right(self.addrs, vaddr) - 1
                return self.names[i] if i >= 0 else None
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--map", action="append", default=[])
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    remap = [m.split("=", 1) for m in args.map]
    files = {}
    counts = collections.Counter()
    total = 0
    for dump in args.files:
        maps = []
        with open(dump) as f:
            lines = iter(f)
            for line in lines:
                if line.startswith("--"):
                    break
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                path = parts[5] if len(parts) > 5 else ""
                maps.append((lo, hi, int(parts[2], 16), path))
            maps.sort()
            starts = [m[0] for m in maps]
            for line in lines:
                pc = int(line, 16)
                total += 1
                i = bisect.bisect_right(starts, pc) - 1
                if i < 0 or pc >= maps[i][1] or not maps[i][3].startswith("/"):
                    counts["[anon]"] += 1
                    continue
                lo, _, off, path = maps[i]
                local = path
                for a, b in remap:
                    if local.startswith(a):
                        local = b + local[len(a):]
                if local not in files:
                    files[local] = File(local)
                fn = files[local].name(pc - lo + off)
                counts[f"{fn or '?'} ({os.path.basename(path)})"] += 1
    if total == 0:
        sys.exit("no samples")
    print(f"{total} samples")
    for name, c in counts.most_common(args.top):
        print(f"{100.0 * c / total:6.2f}%  {name}")


if __name__ == "__main__":
    main()
