"""A file's symbols by address, from nm: for bench/waits.py (the data a
futex word lies in) and bench/pcsample.py (the functions samples fall in)."""
import subprocess


def nm_symbols(path, types, dynamic=False):
    """Sorted (address, name) of path's defined symbols whose nm type letter
    is in `types`; with `dynamic`, its dynamic ones where it has no others
    (a stripped library, as the C library is).  Empty without nm."""
    for flags in ([], ["-D"]) if dynamic else ([],):
        try:
            out = subprocess.run(["nm", "--defined-only", *flags, path],
                                 capture_output=True, text=True).stdout
        except OSError:
            return []
        syms = []
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in types:
                syms.append((int(f[0], 16), f[2]))
        if syms:
            return sorted(syms)
    return []
