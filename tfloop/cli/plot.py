"""``tfloop plot``: curves of one or more runs' stats, as PNG/SVG (matplotlib) or one HTML page.

    tfloop plot train_log/mnist                          # plot.png, one chart per stat
    tfloop plot train_log/run1 train_log/run2 -o cmp.html --stats 'cost|val-' --smooth 0.6

The HTML page is self-contained (inline SVG, no script, no network) and needs no matplotlib.
"""
import html
import math
import os
import sys

from tfloop.cli.logdir import load_runs, stat_names
from tfloop.cli.stats import compile_pattern
from tfloop.utils.extras import install_command

__all__ = ["add_arguments", "run", "collect_series", "smooth", "write_html", "write_image",
           "make_figure"]

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf"]
IMAGE_SUFFIXES = (".png", ".svg", ".pdf")


def add_arguments(parser):
    parser.add_argument("logdirs", nargs="+", metavar="LOGDIR", help="log directories to overlay")
    parser.add_argument("-o", "--output", default="plot.png",
                        help="the file to write: .png, .svg or .pdf (needs matplotlib) or .html "
                             "(self-contained; default: %(default)s)")
    parser.add_argument("--stats", metavar="REGEX", help="only the stats matching this regex")
    parser.add_argument("--x", choices=("step", "epoch"), default="step",
                        help="the x axis: global step or epoch (default: %(default)s)")
    parser.add_argument("--smooth", type=float, default=0.0, metavar="W",
                        help="exponential smoothing weight in [0, 1), as in TensorBoard "
                             "(default: 0, none)")


def smooth(values, weight):
    """Exponential moving average with debiasing, TensorBoard's smoothing: ``weight`` in [0, 1)."""
    if not weight:
        return list(values)
    out, average, count = [], 0.0, 0
    for value in values:
        count += 1
        average = average * weight + (1 - weight) * value
        out.append(average / (1 - weight ** count))
    return out


def collect_series(runs, pattern=None, x="step", weight=0.0):
    """``{stat: [(run, xs, ys)]}`` of the finite values of every selected stat of every run."""
    key = "global_step" if x == "step" else "epoch_num"
    series = {}
    for name, records in runs:
        for stat in stat_names(records):
            if pattern is not None and not pattern.search(stat):
                continue
            points = [(r[key], r[stat]) for r in records
                      if isinstance(r.get(stat), (int, float)) and key in r
                      and math.isfinite(r[stat])]
            if points:
                xs, ys = zip(*points)
                series.setdefault(stat, []).append((name, list(xs), smooth(ys, weight)))
    return series


def _progress(items, what):
    from tqdm import tqdm
    return tqdm(items, desc=what, file=sys.stderr, disable=len(items) < 8, leave=False)


def _nice_ticks(low, high, count=5):
    if high == low:
        high, low = high + (abs(high) or 1) * 0.5, low - (abs(low) or 1) * 0.5
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 0.5:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _svg_chart(stat, lines, xlabel, width=480, height=300):
    left, right, top, bottom = 64, 16, 28, 44
    xs = [x for _, line_x, _ in lines for x in line_x]
    ys = [y for _, _, line_y in lines for y in line_y]
    xticks, yticks = _nice_ticks(min(xs), max(xs)), _nice_ticks(min(ys), max(ys))
    x0, x1, y0, y1 = xticks[0], xticks[-1], yticks[0], yticks[-1]

    def px(x):
        return left + (x - x0) / ((x1 - x0) or 1) * (width - left - right)

    def py(y):
        return height - bottom - (y - y0) / ((y1 - y0) or 1) * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(stat)}">',
             f'<text x="{width / 2}" y="18" text-anchor="middle" font-weight="bold">'
             f'{html.escape(stat)}</text>']
    for tick in xticks:
        parts.append(f'<line x1="{px(tick):.1f}" y1="{top}" x2="{px(tick):.1f}" '
                     f'y2="{height - bottom}" stroke="#eee"/><text x="{px(tick):.1f}" '
                     f'y="{height - bottom + 16}" text-anchor="middle">{tick:g}</text>')
    for tick in yticks:
        parts.append(f'<line x1="{left}" y1="{py(tick):.1f}" x2="{width - right}" '
                     f'y2="{py(tick):.1f}" stroke="#eee"/><text x="{left - 6}" '
                     f'y="{py(tick) + 4:.1f}" text-anchor="end">{tick:.4g}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 8}" '
                 f'text-anchor="middle">{xlabel}</text>')
    for i, (name, line_x, line_y) in enumerate(lines):
        color = COLORS[i % len(COLORS)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(line_x, line_y))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{points}">'
                     f'<title>{html.escape(name)}</title></polyline>')
        if len(line_x) == 1:
            parts.append(f'<circle cx="{px(line_x[0]):.1f}" cy="{py(line_y[0]):.1f}" r="3" '
                         f'fill="{color}"/>')
    parts.append("</svg>")
    return "".join(parts)


def write_html(series, path, runs, xlabel):
    """A self-contained HTML page: a legend of the runs and one inline SVG chart per stat."""
    names = [name for name, _ in runs]
    legend = " ".join(f'<span style="color:{COLORS[i % len(COLORS)]}">&#9632; '
                      f'{html.escape(name)}</span>' for i, name in enumerate(names))
    charts = []
    for stat in _progress(sorted(series), "charts"):
        by_run = {name: (xs, ys) for name, xs, ys in series[stat]}
        lines = [(name,) + by_run[name] for name in names if name in by_run]
        charts.append(_svg_chart(stat, lines, xlabel))
    page = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tfloop: "
            f"{html.escape(', '.join(names))}</title><style>body{{font-family:sans-serif}}"
            "svg{margin:6px;font-size:11px}</style></head><body>"
            f"<h1>tfloop runs</h1><p>{legend}</p>{''.join(charts)}</body></html>\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("tfloop plot needs matplotlib for .png/.svg/.pdf output: "
                         f"pip install matplotlib (or {install_command('plot')}), or write an "
                         ".html file, which needs nothing.") from None
    matplotlib.use("Agg")
    from matplotlib import pyplot
    from matplotlib.lines import Line2D
    return pyplot, Line2D


def make_figure(series, runs, xlabel):
    """A matplotlib figure with a subplot per stat and, for several runs, their legend in a band
    of its own below the charts (never over a chart or its title, however many runs)."""
    plt, Line2D = _matplotlib()
    names = [name for name, _ in runs]
    stats = sorted(series)
    cols = min(3, len(stats))
    rows = math.ceil(len(stats) / cols)
    legend_cols = min(len(names), max(1, cols * 2))
    legend_rows = math.ceil(len(names) / legend_cols) if len(names) > 1 else 0
    legend_height = 0.3 * legend_rows + 0.2 * bool(legend_rows)    # inches
    height = 3.4 * rows + legend_height
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, height), squeeze=False)
    for ax, stat in zip(axes.flat, _progress(stats, "charts")):
        for name, xs, ys in series[stat]:
            color = COLORS[names.index(name) % len(COLORS)]
            ax.plot(xs, ys, label=name, color=color, marker="." if len(xs) < 30 else None)
        ax.set_title(stat)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(stats):]:
        ax.set_visible(False)
    if legend_rows:
        handles = [Line2D([], [], color=COLORS[i % len(COLORS)], label=name)
                   for i, name in enumerate(names)]
        fig.legend(handles=handles, loc="lower center", ncol=legend_cols, frameon=False,
                   bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, legend_height / height, 1, 1))
    return fig


def write_image(series, path, runs, xlabel):
    """One matplotlib figure (:func:`make_figure`) saved as PNG, SVG or PDF."""
    plt, _ = _matplotlib()
    fig = make_figure(series, runs, xlabel)
    fig.savefig(path)
    plt.close(fig)


def run(args):
    if not 0 <= args.smooth < 1:
        raise SystemExit(f"--smooth must be in [0, 1), got {args.smooth}.")
    suffix = os.path.splitext(args.output)[1].lower()
    if suffix not in IMAGE_SUFFIXES + (".html",):
        raise SystemExit(f"-o {args.output!r}: write a .png, .svg, .pdf or .html file.")
    pattern = compile_pattern(args.stats, "--stats")
    runs = load_runs(args.logdirs)
    series = collect_series(runs, pattern, args.x, args.smooth)
    if not series:
        raise SystemExit("Nothing to plot: no stat with numbers"
                         + (f" matches --stats {args.stats!r}." if args.stats
                            else " in stats.json."))
    xlabel = "global step" if args.x == "step" else "epoch"
    (write_html if suffix == ".html" else write_image)(series, args.output, runs, xlabel)
    print(f"Wrote {args.output}: {len(series)} stat(s) of {len(runs)} run(s).")
    return 0
