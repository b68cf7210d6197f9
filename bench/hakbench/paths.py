"""Where the suite's files are."""
import os

BENCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(BENCH_DIR)
BUILD = os.path.join(REPO, "build")
BIN_DIR = os.path.join(BUILD, "bench")
RESULTS = os.path.join(BENCH_DIR, "results")
HAKMEM_LIB = os.path.join(BUILD, "libhakmem.so")
# The hardened build (make secure), one more allocator when it is built.
HAKMEM_SECURE_LIB = os.path.join(BUILD, "libhakmem-secure.so")
NOOP_LIB = os.path.join(BIN_DIR, "libnoop_malloc.so")


def binary(name):
    return os.path.join(BIN_DIR, name)


def rel(path):
    """A path relative to the repository, for commands people can paste."""
    try:
        r = os.path.relpath(path, REPO)
    except ValueError:
        return path
    return path if r.startswith("..") else r
