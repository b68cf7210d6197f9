"""PNG charts with matplotlib (Debian's python3-matplotlib); skipped if absent."""

COLORS = {"hakmem": "#d62728", "hakmem-secure": "#9467bd", "hakmem-heapprof": "#e377c2", "glibc": "#7f7f7f", "mimalloc": "#1f77b4",
          "jemalloc": "#2ca02c", "tcmalloc": "#ff7f0e", "A": "#1f77b4", "B": "#d62728"}


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("chart: this python3 has no matplotlib (Debian's python3-matplotlib is for "
              "/usr/bin/python3); no PNG")
        return None


def _color(name, i):
    return COLORS.get(name, f"C{i % 10}")


def _ratios(results, allocs, key, higher_is_better):
    from .report import _best_peer, _failed, _median
    out = {a.name: [] for a in allocs}
    for e in results:
        best = _best_peer(e, allocs, key, higher_is_better)
        for a in allocs:
            cell = e["cells"][a.name]
            v = _median(cell, key)
            out[a.name].append(v / best if (best and v and not _failed(cell)) else 0)
    return out


def suite(path, results, allocs, title):
    """Throughput and peak RSS of every workload, relative to the best peer."""
    plt = _pyplot()
    if plt is None or not results:
        return None
    names = [e["name"] for e in results]
    fig, axes = plt.subplots(1, 2, figsize=(14, 1.2 + 0.45 * len(names) * max(1, len(allocs) / 4)),
                             sharey=True)
    panels = [("ops_per_sec", True, "throughput / best peer (higher is better)"),
              ("peak_rss_kb", False, "peak RSS / smallest peer (lower is better)")]
    height = 0.8 / max(1, len(allocs))
    for ax, (key, hib, label) in zip(axes, panels):
        ratios = _ratios(results, allocs, key, hib)
        for i, a in enumerate(allocs):
            ys = [j + (i - (len(allocs) - 1) / 2) * height for j in range(len(names))]
            ax.barh(ys, ratios[a.name], height=height, label=a.name, color=_color(a.name, i))
            for y, r in zip(ys, ratios[a.name]):
                if r == 0:
                    ax.text(0.02, y, "fail", va="center", fontsize=6)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(names)))
    axes[0].set_yticklabels(names)
    axes[0].invert_yaxis()
    axes[0].legend(loc="lower right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def traces(path, series, title):
    """RSS and throughput over time.  series: {label: [sample dicts]}."""
    plt = _pyplot()
    series = {k: v for k, v in series.items() if v}
    if plt is None or not series:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for i, (label, samples) in enumerate(series.items()):
        t = [s["t"] for s in samples]
        top.plot(t, [s["rss_kb"] / 1024 for s in samples], label=label,
                 color=_color(label, i), linewidth=1)
        rates = [(b["ops"] - a["ops"]) / (b["t"] - a["t"]) / 1e6
                 for a, b in zip(samples, samples[1:]) if b["t"] > a["t"]]
        bottom.plot(t[1:len(rates) + 1], rates, label=label, color=_color(label, i),
                    linewidth=1)
    top.set_ylabel("RSS (MiB)")
    bottom.set_ylabel("throughput (M ops/s)")
    bottom.set_xlabel("seconds")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

