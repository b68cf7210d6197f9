"""Median, spread and coefficient of variation of repeated runs."""
import statistics


def summarize(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {
        "n": len(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "mean": mean,
        "cv_pct": 100.0 * sd / mean if mean else 0.0,
    }


def paired_ratios(cell_a, cell_b, key="ops_per_sec"):
    """B's figure over A's, round by round: runs[i] of every cell of a
    workload ran in round i, close in time, so that the host's drift from
    one round to the next cancels.  None when a run failed (the rounds no
    longer line up) or a cell has none."""
    if cell_a["failures"] or cell_b["failures"]:
        return None
    runs_a, runs_b = cell_a["runs"], cell_b["runs"]
    if not runs_a or len(runs_a) != len(runs_b):
        return None
    return [rb[key] / ra[key] for ra, rb in zip(runs_a, runs_b)]


def quartiles(values):
    """(first quartile, median, third quartile); all three the value when
    there is one."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3
