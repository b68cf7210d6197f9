"""Where a report's files go: bench/results/<kind>-<date>.{md,json,png},
with copies named <kind>-latest.* for the most recent run of each kind."""
import datetime
import os
import shutil

from . import paths


def base(kind, out_dir=None):
    out_dir = out_dir or paths.RESULTS
    os.makedirs(out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join(out_dir, f"{kind}-{stamp}")


def publish_latest(kind, files):
    """Copy each file to <kind>-latest.<ext> beside it; returns the copies."""
    copies = []
    for f in files:
        if not f or not os.path.exists(f):
            continue
        ext = f[f.index(".", len(os.path.dirname(f))):]
        latest = os.path.join(os.path.dirname(f), f"{kind}-latest{ext}")
        shutil.copyfile(f, latest)
        copies.append(latest)
    return copies
