"""Rendering rows as a Markdown table or as aligned terminal text."""


def rate(v):
    """A rate in 3 significant digits with a k/M/G suffix."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def markdown(headers, rows, align=None):
    align = align or ["l"] + ["r"] * (len(headers) - 1)
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def text(headers, rows, align=None):
    align = align or ["l"] + ["r"] * (len(headers) - 1)
    cols = list(zip(*([headers] + [[str(c) for c in r] for r in rows])))
    widths = [max(len(c) for c in col) for col in cols]

    def fmt(row):
        return "  ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w)
                         for c, w, a in zip(row, widths, align))
    return "\n".join([fmt(headers), "  ".join("-" * w for w in widths)]
                     + [fmt(r) for r in rows])
