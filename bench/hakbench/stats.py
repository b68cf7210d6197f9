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
