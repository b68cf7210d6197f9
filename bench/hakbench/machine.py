"""What the report records about the machine and the run."""
import datetime
import os
import platform
import subprocess

from . import allocators, paths


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _mem_total():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 1048576:.1f} GiB"
    except OSError:
        pass
    return "?"


def _compiler():
    try:
        out = subprocess.run([os.environ.get("CC", "cc"), "--version"],
                             capture_output=True, text=True).stdout
        return out.splitlines()[0] if out else "?"
    except OSError:
        return "?"


def describe():
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "host": platform.node(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory": _mem_total(),
        "kernel": platform.release(),
        "libc": "glibc " + os.confstr("CS_GNU_LIBC_VERSION").split()[-1],
        "compiler": _compiler(),
        "hakmem_commit": allocators.git_version(paths.REPO),
        "load_average": os.getloadavg(),
    }


def busy_warning():
    """A warning when other work already loads the machine at the start."""
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    if load > cores / 2:
        return (f"bench: note: load average {load:.1f} on {cores} cores before the run; "
                "other work shares the machine, expect noisy figures (see max CV)")
    return None
