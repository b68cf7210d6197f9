"""The allocators under test: which exist here, how to preload them, and how
to tell that a run was really served by the one we meant."""
import hashlib
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Optional

from . import paths

_DEBIAN_LIBS = "/usr/lib/x86_64-linux-gnu"

# Peers in table order.  tcmalloc_minimal is gperftools' allocator without the
# heap profiler hooks, the one to compare against.
PEERS = [
    ("mimalloc", ["libmimalloc.so.2"]),
    ("jemalloc", ["libjemalloc.so.2"]),
    ("tcmalloc", ["libtcmalloc_minimal.so.4", "libtcmalloc.so.4"]),
]


@dataclass
class Allocator:
    name: str
    lib: Optional[str]          # preloaded file; None for glibc
    version: str = ""
    broken: Optional[str] = None  # why it cannot run (e.g. did not build)
    is_peer: bool = True        # False for hakmem: ratios are to the best peer
    settings: dict = field(default_factory=dict)  # environment it runs with

    def env(self, base=None):
        env = dict(os.environ if base is None else base)
        env.pop("LD_PRELOAD", None)
        if self.lib:
            env["LD_PRELOAD"] = self.lib
        env.update(self.settings)
        return env

    def command_prefix(self):
        words = [f"{k}={shlex.quote(v)}" for k, v in self.settings.items()]
        if self.lib:
            words.append(f"LD_PRELOAD={paths.rel(self.lib)}")
        return " ".join(words) + " " if words else ""

    def serves(self, provider_file):
        """True if provider_file (from the probe) is this allocator."""
        if self.lib is None:
            return os.path.basename(provider_file).startswith("libc.so")
        return os.path.realpath(provider_file) == os.path.realpath(self.lib)


def _dpkg_version(path):
    try:
        pkg = subprocess.run(["dpkg", "-S", os.path.realpath(path)],
                             capture_output=True, text=True, check=True)
        name = pkg.stdout.split(":")[0]
        ver = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name],
                             capture_output=True, text=True, check=True)
        return f"{name} {ver.stdout.strip()}"
    except (OSError, subprocess.CalledProcessError):
        return ""


def git_version(repo):
    try:
        rev = subprocess.run(["git", "-C", repo, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain",
                                "--untracked-files=no", "--", "src", "include"],
                               capture_output=True, text=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return ""


def snapshot(lib):
    """A private copy of lib, named by its content, that a rebuild of lib
    during the run cannot touch.  Other people rebuild build/libhakmem.so in
    the same tree; while the linker rewrites it, the loader cannot preload
    it and the program silently runs on glibc (the probe catches that, but
    the run is lost)."""
    with open(lib, "rb") as f:
        data = f.read()
    digest = hashlib.sha256(data).hexdigest()[:12]
    name = os.path.basename(lib).replace(".so", f"-{digest}.so")
    copy = os.path.join(paths.BIN_DIR, "lib", name)
    if not os.path.exists(copy):
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        tmp = copy + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, copy)
    return copy, digest


def _loads(a):
    """None if a tiny workload runs with a's malloc, else why not."""
    probe = paths.binary("random_mixed")
    if not os.path.exists(probe):
        return None
    p = subprocess.run([probe, "1", "1", "16", "16", "1"], env=a.env(),
                       capture_output=True, text=True, timeout=60)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("HAKBENCH-PROBE")), "")
    if p.returncode != 0:
        return f"a one-op run fails (exit status {p.returncode}): {p.stderr.strip()[-200:]}"
    if os.path.basename(a.lib) not in line:
        return f"does not replace malloc when preloaded: {p.stderr.strip()[-200:]}"
    return None


def hakmem(lib=paths.HAKMEM_LIB, name="hakmem", version=None, tries=3, settings=None):
    version = version if version is not None else git_version(paths.REPO)
    lib = os.path.abspath(lib)
    why = f"{paths.rel(lib)} not built (make lib failed?)"
    for attempt in range(tries):
        if attempt:
            time.sleep(2)  # perhaps caught mid-rebuild: let the linker finish
        if not os.path.exists(lib):
            continue
        copy, digest = snapshot(lib)
        a = Allocator(name, copy, is_peer=False, settings=settings or {},
                      version=f"{version}, {paths.rel(lib)} sha256 {digest}")
        why = _loads(a)
        if why is None:
            return a
        os.remove(copy)
    return Allocator(name, lib, is_peer=False, version=version, broken=why)


def hakmem_secure():
    """The hardened build, if this tree built it (`make secure`): its cost
    is read against hakmem's (report.py), so it is no peer either."""
    if not os.path.exists(paths.HAKMEM_SECURE_LIB):
        return []
    return [hakmem(paths.HAKMEM_SECURE_LIB, name="hakmem-secure")]


def hakmem_heapprof():
    """hakmem with its heap profiler on at the default rate, dumping into
    build/bench/heap-profiles (emptied first: each run of a workload leaves
    its dumps there): the profiler's cost is read against hakmem's
    (report.py), so it is no peer either."""
    prefix = os.path.join(paths.BIN_DIR, "heap-profiles", "run")
    shutil.rmtree(os.path.dirname(prefix), ignore_errors=True)  # the last run's
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    return hakmem(name="hakmem-heapprof", settings={"HAKMEM_HEAP_PROFILE": prefix})


def glibc():
    return Allocator("glibc", None, version="glibc " + os.confstr("CS_GNU_LIBC_VERSION").split()[-1])


def peers():
    found = []
    for name, files in PEERS:
        for f in files:
            path = os.path.join(_DEBIAN_LIBS, f)
            if os.path.exists(path):
                found.append(Allocator(name, path, version=_dpkg_version(path)))
                break
    return found + extra_peers(os.environ.get("HAKBENCH_PEERS", ""))


def extra_peers(spec):
    """Peers given by path: "name=path,name=path" (make's PEERS=...).  Each is
    checked as hakmem is: a copy that a rebuild cannot touch, and a probe that
    it really serves malloc when preloaded."""
    found = []
    for item in [i.strip() for i in spec.split(",") if i.strip()]:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"PEERS: '{item}' is not name=path")
        if name in ("hakmem", "hakmem-secure", "hakmem-heapprof", "glibc", "floor") or \
                name in [n for n, _ in PEERS]:
            raise SystemExit(f"PEERS: the name '{name}' is taken")
        path = os.path.abspath(path)
        if not os.path.exists(path):
            found.append(Allocator(name, path, broken=f"{path} does not exist"))
            continue
        copy, digest = snapshot(path)
        a = Allocator(name, copy, version=f"{paths.rel(path)} sha256 {digest}")
        a.broken = _loads(a)
        found.append(a)
    return found


def noop_floor():
    return Allocator("floor", paths.NOOP_LIB, version="no-op malloc",
                     is_peer=False)


def select(allocs, wanted):
    """Keep the allocators named in wanted (comma list), in table order."""
    if not wanted:
        return allocs
    names = [w.strip() for w in wanted.split(",") if w.strip()]
    unknown = set(names) - {a.name for a in allocs}
    if unknown:
        raise SystemExit(f"unknown or unavailable allocator(s): {', '.join(sorted(unknown))}"
                         f" (have: {', '.join(a.name for a in allocs)})")
    return [a for a in allocs if a.name in names]


def default_set(wanted=None):
    return select([hakmem()] + hakmem_secure() + [hakmem_heapprof(), glibc()] + peers(), wanted)
