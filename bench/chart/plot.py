"""The chart of one benchmark run: per case, req/s and server CPU µs per operation per server.

Usage: plot.py CHART_TSV OUT_PNG TITLE

CHART_TSV is what `loadgen chart-data RESULTS.tsv` prints: a header, then one line per cell
(case title, server title, rate, CPU µs per operation, the last possibly empty). A base
(`barrel-mcp@<commit>`, from BENCH_BASE_SRC) is one more series, light blue, after barrel-mcp.
Each case gets
a row of two panels with their own linear scales, so a slow server does not flatten the others.
matplotlib's Agg backend and its bundled DejaVu fonts: no display and no system fonts needed.
"""

import csv
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# One colour per server, the same in every panel.
COLOURS = {
    "barrel-mcp": "#1f6feb",
    "rmcp": "#d1242f",
    "floor": "#8c959f",
    "TypeScript SDK": "#bf8700",
}
SERVER_ORDER = list(COLOURS)
BASE_PREFIX = "barrel-mcp@"
BASE_COLOUR = "#8fb8f5"


def colour(server):
    if server.startswith(BASE_PREFIX):
        return BASE_COLOUR
    return COLOURS.get(server, "#6e7781")


def order(cells):
    """The servers of one case: the known ones in their order, the base right after
    barrel-mcp, then any other."""
    known = [s for s in SERVER_ORDER if s in cells]
    bases = sorted(s for s in cells if s.startswith(BASE_PREFIX))
    if "barrel-mcp" in known:
        at = known.index("barrel-mcp") + 1
        known[at:at] = bases
    else:
        known = bases + known
    return known + [s for s in cells if s not in known]


def read(path):
    cases = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            cell = cases.setdefault(row["case"], {})
            cpu = float(row["cpu_us"]) if row["cpu_us"] else None
            cell[row["server"]] = (float(row["rate"]), cpu)
    return cases


def label(value):
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.0f}"
    return f"{value:.1f}"


def panel(ax, servers, values, title):
    xs = range(len(servers))
    heights = [v if v is not None else 0 for v in values]
    bars = ax.bar(xs, heights, color=[colour(s) for s in servers])
    for bar, value in zip(bars, values):
        text = label(value) if value is not None else "n/a"
        ax.annotate(
            text,
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=8,
            xytext=(0, 2),
            textcoords="offset points",
        )
    # More than four names side by side overlap: slanted, they fit.
    crowded = len(servers) > 4
    ax.set_xticks(
        list(xs),
        servers,
        fontsize=8,
        rotation=20 if crowded else 0,
        ha="right" if crowded else "center",
    )
    ax.set_title(title, fontsize=9)
    ax.tick_params(axis="y", labelsize=7)
    ax.margins(y=0.18)
    ax.spines[["top", "right"]].set_visible(False)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    data, out, title = sys.argv[1:]
    cases = read(data)
    if not cases:
        sys.exit("plot.py: no cells to plot")
    fig, axes = plt.subplots(
        len(cases), 2, figsize=(11, 2.5 * len(cases) + 0.8), squeeze=False
    )
    for (case, cells), (left, right) in zip(cases.items(), axes):
        servers = order(cells)
        unit = "calls/s" if case.startswith("stdio") else "req/s"
        if case.startswith("session creation"):
            unit = "sessions/s"
        name = textwrap.shorten(case, width=60, placeholder="…")
        panel(left, servers, [cells[s][0] for s in servers], f"{name}\n{unit} (higher is better)")
        panel(
            right,
            servers,
            [cells[s][1] for s in servers],
            f"{name}\nserver CPU µs per op (lower is better)",
        )
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main()
