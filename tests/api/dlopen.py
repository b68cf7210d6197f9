#!/usr/bin/env python3
"""api/dlopen: libhakmem.so loaded with dlopen into a running program.

A program that dlopens hakmem (python3's ctypes here, as a plugin host
would) has its threads already made: hakmem's initial-exec TLS then comes
from glibc's static TLS surplus, shared by every library loaded so.  The check: the library's TLS segment stays within TLS_BUDGET, it
loads, and its hak_* functions serve blocks from threads that existed before
it was loaded and from new ones.

usage: dlopen.py <libhakmem.so>
"""
import ctypes
import struct
import sys
import threading

# What glibc (2.32 on, default tunables: 4 namespaces) keeps for the
# initial-exec TLS of dlopened libraries, all of them together: 3 * 192 +
# 4 * 144 bytes (its test elf/tst-tls-ie.c); the 512 bytes of surplus
# beyond are optional, which TLS access optimisations may take first.
# hakmem's thread state is 1130 bytes; with the heap profiler's stack memo
# (552 bytes, now with the heap) it was 1674, past the guaranteed part.
TLS_BUDGET = 1152
PT_TLS = 7

checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        print(f"FAIL: {what}")
        sys.exit(1)


def tls_size(path):
    """The memory size of the ELF file's PT_TLS segment (0 if none)."""
    with open(path, "rb") as f:
        elf = f.read()
    check(elf[:4] == b"\x7fELF" and elf[4] == 2 and elf[5] == 1, "a 64-bit little-endian ELF")
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, = struct.unpack_from("<I", elf, phoff + i * phentsize)
        if p_type == PT_TLS:
            p_memsz, = struct.unpack_from("<Q", elf, phoff + i * phentsize + 0x28)
            return p_memsz
    return 0


def use(lib, n, errors):
    """Allocate n blocks of 16 B-64 KiB, write each whole, check, free."""
    blocks = []
    for i in range(n):
        size = 16 << (i % 13)
        p = lib.hak_malloc(size)
        if not p:
            errors.append(f"hak_malloc({size}) returned NULL")
            return
        ctypes.memset(p, i & 0xFF, size)
        blocks.append((p, size, i & 0xFF))
    for p, size, byte in blocks:
        if ctypes.string_at(p + size - 1, 1)[0] != byte or ctypes.string_at(p, 1)[0] != byte:
            errors.append(f"block of {size} bytes lost what was written")
        lib.hak_free(p)


def main():
    path = sys.argv[1]
    size = tls_size(path)
    print(f"TLS segment: {size} bytes (budget {TLS_BUDGET})")
    check(0 < size <= TLS_BUDGET, f"TLS segment of {size} bytes, over {TLS_BUDGET}")

    # Threads made before the library is loaded get its TLS from the surplus.
    ready, go = threading.Barrier(5), threading.Event()
    errors = []
    lib = None

    def early():
        ready.wait()
        go.wait()
        use(lib, 2000, errors)

    before = [threading.Thread(target=early) for _ in range(4)]
    for t in before:
        t.start()
    ready.wait()
    lib = ctypes.CDLL(path)
    lib.hak_malloc.restype = ctypes.c_void_p
    lib.hak_malloc.argtypes = [ctypes.c_size_t]
    lib.hak_free.argtypes = [ctypes.c_void_p]
    check(True, "loaded")
    go.set()
    after = [threading.Thread(target=use, args=(lib, 2000, errors)) for _ in range(4)]
    for t in after:
        t.start()
    use(lib, 2000, errors)
    for t in before + after:
        t.join()
    check(not errors, "; ".join(errors[:3]))
    print(f"checks: {checks}")


main()
