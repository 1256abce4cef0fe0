"""Figures of the report, drawn with matplotlib (Agg backend) and returned as PNG bytes.

Needs the ``report`` extra (``pip install -e '.[report]'``). Labels are data (system names,
targets, categories): ``$`` is escaped so matplotlib never reads them as mathtext.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tiap.errors import require

__all__ = ["Bar", "bars", "cardinality_plot", "cost_plot", "delta_histograms", "depth_plot",
           "design_plot", "forest_plot", "place_labels"]

#: Okabe & Ito's colour-blind-safe palette (blue, orange, bluish green, reddish purple, sky
#: blue, vermillion, black); no red beside green.
_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")


def pyplot() -> Any:
    """matplotlib.pyplot in the Agg backend with the report's style (an install hint if missing)."""
    mpl = require("matplotlib", "report")
    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                         "svg.hashsalt": "tiap", "text.usetex": False})
    return plt


def lbl(text: object) -> str:
    return str(text).replace("$", r"\$")


def _png(fig: Any) -> bytes:
    plt = pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


class Bar(NamedTuple):
    """One bar of :func:`bars`: ``mean`` (``None`` where partial lineage only bounds it),
    the bounds ``lower``/``upper`` of the mean (equal to it when exact), and the interval
    ``ci_low``/``ci_high`` drawn as an error bar (``None``: none)."""

    mean: float | None
    lower: float
    upper: float
    ci_low: float | None = None
    ci_high: float | None = None


def bars(title: str, groups: Sequence[str],
         series: Mapping[str, Sequence[Bar | float | None]], ylabel: str) -> bytes:
    """Grouped bars: one group per system, one bar per target. An exact mean is a bar with
    its interval as an error bar; a mean known only as ``[lower, upper]`` is a hatched
    range from its lower to its upper bound (never left out); a missing one, a gap.

    >>> png = bars("t", ["A", "B"], {"raw": [Bar(0.5, 0.5, 0.5, 0.4, 0.6),
    ...                                      Bar(None, 0.2, 0.3)]}, "nDCG@10")
    >>> png[:4] == b"\\x89PNG"
    True
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4.5, 0.9 * len(groups) * max(1, len(series)) / 2), 3))
    width = 0.8 / max(1, len(series))
    x = np.arange(len(groups))
    ranged = False
    for i, (name, vals) in enumerate(series.items()):
        color = _COLORS[i % len(_COLORS)]
        xs = x + (i - (len(series) - 1) / 2) * width
        bs = [Bar(float(v), float(v), float(v)) if isinstance(v, int | float) else v
              for v in vals]
        exact = [b.mean if b is not None and b.mean is not None else np.nan for b in bs]
        ax.bar(xs, exact, width, label=lbl(name), color=color)
        for xi, b in zip(xs, bs, strict=True):
            if b is None:
                continue
            if b.mean is None:  # bounded: the range itself
                ranged = True
                ax.bar([xi], [b.upper - b.lower], width, bottom=[b.lower], color="white",
                       edgecolor=color, hatch="////", linewidth=1.2)
                ax.plot([xi - width / 2, xi + width / 2], [b.lower, b.lower], color=color,
                        lw=1.5)
                ax.plot([xi - width / 2, xi + width / 2], [b.upper, b.upper], color=color,
                        lw=1.5)
            elif b.ci_low is not None and b.ci_high is not None:
                ax.errorbar([xi], [b.mean], yerr=[[b.mean - b.ci_low], [b.ci_high - b.mean]],
                            fmt="none", ecolor="#222222", capsize=2.5, lw=0.9)
    handles, labels = ax.get_legend_handles_labels()
    if ranged:  # a hatched swatch (an empty bar's handle would take the next fill colour)
        patches = require("matplotlib.patches", "report")
        handles.append(patches.Patch(facecolor="white", edgecolor="#555555", hatch="////"))
        labels.append("bounded mean: [lower, upper]")
    ax.set_xticks(x)
    ax.set_xticklabels([lbl(g) for g in groups], rotation=20 if len(groups) > 4 else 0,
                       ha="right" if len(groups) > 4 else "center")
    ax.set_ylabel(lbl(ylabel))
    ax.set_title(lbl(title))
    ax.legend(handles, labels, frameon=False, fontsize=8, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def delta_histograms(title: str, panels: Mapping[tuple[str, str], Sequence[float]],
                     systems: Sequence[str], pairs: Sequence[str]) -> bytes:
    """Figure 3: per system (rows) and pair of targets (columns), the histogram of Δ."""
    plt = pyplot()
    nr, nc = max(1, len(systems)), max(1, len(pairs))
    fig, axes = plt.subplots(nr, nc, figsize=(2.6 * nc + 0.6, 1.7 * nr + 0.6), squeeze=False,
                             sharex=True)
    edges = np.linspace(-1, 1, 21)
    for i, s in enumerate(systems):
        for j, p in enumerate(pairs):
            ax = axes[i][j]
            d = np.asarray(panels.get((s, p), ()), dtype=float)
            if d.size:
                ax.hist(np.clip(d, -1, 1), bins=edges, color=_COLORS[j % len(_COLORS)])
                ch = float((np.abs(d) > 1e-12).mean())
                ax.text(0.02, 0.95, f"n={d.size:,}\nchanged {100 * ch:.1f}%",
                        transform=ax.transAxes, va="top", fontsize=7)
            else:
                ax.text(0.5, 0.5, "no shared queries", transform=ax.transAxes, ha="center",
                        fontsize=7)
            ax.axvline(0, color="#444", lw=0.6)
            if i == 0:
                ax.set_title(lbl(p), fontsize=8)
            if j == 0:
                ax.set_ylabel(lbl(s), fontsize=8)
            if i == nr - 1:
                ax.set_xlabel("Δ per query", fontsize=8)
    fig.suptitle(lbl(title), fontsize=9)
    return _png(fig)


def forest_plot(title: str,
                entries: Sequence[tuple[str, str, float | None, float | None, float | None]
                                  | tuple[str, str, float | None, float | None, float | None,
                                          float, float]],
                targets: Sequence[str],
                xlabel: str = "gap (A − B) with its sign-flip interval (family-adjusted level)",
                ) -> bytes:
    """Gaps with intervals: ``(pair label, target, gap, ci_low, ci_high)``; a gap partial
    lineage only bounds is ``(pair label, target, None, ci_low, ci_high, lower, upper)``,
    drawn as a hatched box from its lower to its upper bound (its interval, where known, as
    the line). The default x label names the interval of ``tiap sensitivity``: the inverted
    sign-flip test at each gap's family-adjusted effective level (not a fixed 95%).

    >>> png = forest_plot("t", [("A vs B", "raw", 0.1, 0.05, 0.15),
    ...                         ("A vs B", "source", None, -0.2, 0.3, -0.1, 0.2)],
    ...                   ["raw", "source"])
    >>> png[:4] == b"\\x89PNG"
    True
    """
    plt = pyplot()
    patches = require("matplotlib.patches", "report")
    labels = list(dict.fromkeys(e[0] for e in entries))
    fig, ax = plt.subplots(figsize=(6.5, 0.35 * len(labels) * max(1, len(targets)) / 1.6 + 1))
    off = {t: (i - (len(targets) - 1) / 2) * 0.22 for i, t in enumerate(targets)}
    bounded = False
    for e in entries:
        y = labels.index(e[0]) + off.get(e[1], 0)
        c = _COLORS[list(targets).index(e[1]) % len(_COLORS)] if e[1] in targets else "#555"
        if e[3] is not None and e[4] is not None:
            ax.plot([e[3], e[4]], [y, y], color=c, lw=1.5)
        if e[2] is not None:
            ax.plot([e[2]], [y], "o", color=c, ms=4)
        elif len(e) == 7:  # bounded: the range of the gap over every lineage
            bounded = True
            ax.add_patch(patches.Rectangle((e[5], y - 0.09), e[6] - e[5], 0.18, facecolor="white",
                                           edgecolor=c, hatch="////", lw=1.0, zorder=3))
    handles = [plt.Line2D([], [], marker="o", color=_COLORS[i % len(_COLORS)], label=lbl(t))
               for i, t in enumerate(targets)]
    if bounded:
        handles.append(patches.Patch(facecolor="white", edgecolor="#555555", hatch="////",
                                     label="bounded gap: [lower, upper]"))
    ax.axvline(0, color="#444", lw=0.7)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels([lbl(x) for x in labels], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(lbl(xlabel))
    ax.set_title(lbl(title))
    ax.legend(handles=handles, frameon=False, fontsize=7, loc="best")
    return _png(fig)


def design_plot(title: str, configs: Sequence[str],
                by_target: Mapping[str, Sequence[float | tuple[float, float] | None]]) -> bytes:
    """Per target, each configuration's mean minus the first configuration's mean. A mean
    partial lineage only bounds is ``(lower, upper)``: its difference is drawn as a range
    (every value it may take), never left out.

    >>> png = design_plot("t", ["f1", "f5"], {"raw": [0.3, 0.25], "source": [0.5, (0.4, 0.6)]})
    >>> png[:4] == b"\\x89PNG"
    True
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 3))
    x = np.arange(len(configs))
    ranged = False
    for i, (t, vals) in enumerate(by_target.items()):
        color = _COLORS[i % len(_COLORS)]
        lo = np.array([np.nan if y is None else (y[0] if isinstance(y, tuple) else y)
                       for y in vals], dtype=float)
        hi = np.array([np.nan if y is None else (y[1] if isinstance(y, tuple) else y)
                       for y in vals], dtype=float)
        # the difference to the first configuration, bounded over every lineage of both
        d_lo, d_hi = lo - hi[0], hi - lo[0]
        exact = np.where(d_lo == d_hi, d_lo, np.nan)
        ax.plot(x, exact, "o-", color=color, label=lbl(t))
        for xi, a, b in zip(x, d_lo, d_hi, strict=True):
            if not np.isnan(a) and a != b:
                ranged = True
                ax.plot([xi + 0.04 * i, xi + 0.04 * i], [a, b], color=color, lw=4, alpha=0.45,
                        solid_capstyle="butt")
    if ranged:
        ax.plot([], [], color="#555555", lw=4, alpha=0.45, label="bounded: [lower, upper]")
    ax.axhline(0, color="#444", lw=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels([lbl(c) for c in configs], fontsize=8)
    ax.set_ylabel(f"mean − mean({lbl(configs[0])})")
    ax.set_title(lbl(title))
    ax.legend(frameon=False, fontsize=8)
    return _png(fig)


def cardinality_plot(title: str, series: Mapping[str, Sequence[tuple[str, float | None,
                                                                      float | None, int]]]
                     ) -> bytes:
    """Mean shift per size-difference bin, ``(bin, mean, sd, n)``, with ±1.96 sd/√n."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 3))
    for i, (name, pts) in enumerate(series.items()):
        xs, ys, es = [], [], []
        for j, (_, m, sd, n) in enumerate(pts):
            if m is None or n == 0:
                continue
            xs.append(j)
            ys.append(m)
            es.append(1.96 * sd / np.sqrt(n) if sd is not None and n > 1 else 0.0)
        ax.errorbar(np.asarray(xs) + 0.08 * i, ys, yerr=es, fmt="o-", capsize=3,
                    color=_COLORS[i % len(_COLORS)], label=lbl(name))
    bins = [b for b, *_ in next(iter(series.values()))] if series else []
    ax.set_xticks(range(len(bins)))
    ax.set_xticklabels(bins)
    ax.set_xlabel("extra eligible ids (size difference)")
    ax.set_ylabel("mean shift")
    ax.axhline(0, color="#444", lw=0.6)
    ax.set_title(lbl(title))
    ax.legend(frameon=False, fontsize=8)
    return _png(fig)


def depth_plot(title: str, series: Mapping[str, Sequence[tuple[int, float | None]]]) -> bytes:
    """Relative shift by cutoff k, one line per system."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.8, 3))
    for i, (name, pts) in enumerate(series.items()):
        pts = [(k, v) for k, v in pts if v is not None]
        if pts:
            ax.plot([k for k, _ in pts], [100 * v for _, v in pts], "o-",
                    color=_COLORS[i % len(_COLORS)], label=lbl(name))
    ax.set_xlabel("cutoff k")
    ax.set_ylabel("relative shift (%)")
    ax.set_title(lbl(title))
    ax.legend(frameon=False, fontsize=7)
    return _png(fig)


def place_labels(points: Sequence[tuple[float, float, float]], height: float = 10.0,
                 gap: float = 6.0) -> list[tuple[float, float]]:
    """Where to put labels beside points so that no two overlap: ``points`` are ``(x, y,
    width)`` in points (1/72 in) of the figure; returns each label's lower-left corner.

    A label starts right of its point, centred on it, and moves up past every label already
    placed that it would overlap (labels are placed from the lowest point up).

    >>> place_labels([(0, 0, 30), (1, 1, 30), (200, 0, 30)])
    [(6.0, -5.0), (7.0, 5.0), (206.0, -5.0)]
    """
    placed: list[tuple[float, float, float]] = []  # x0, x1, y
    out: list[tuple[float, float] | None] = [None] * len(points)
    for i in sorted(range(len(points)), key=lambda j: (points[j][1], points[j][0])):
        x, y, w = points[i]
        lx, ly = x + gap, y - height / 2
        moved = True
        while moved:
            moved = False
            for x0, x1, py in placed:
                if lx < x1 and x0 < lx + w and abs(ly - py) < height:
                    ly = py + height
                    moved = True
        placed.append((lx, lx + w, ly))
        out[i] = (lx, ly)
    return [p for p in out if p is not None]


def cost_plot(title: str, xlabel: str, ylabel: str,
              points: Mapping[str, Sequence[tuple[str, float, float, float, float]]]) -> bytes:
    """Quality against cost: per target (a marker and colour) one point per system, ``(system,
    tokens, mean, lower, upper)``; a bounded mean is drawn as its interval."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    markers = "osD^vP*X"
    for i, (target, pts) in enumerate(points.items()):
        color = _COLORS[i % len(_COLORS)]
        for j, (system, x, y, lo, hi) in enumerate(pts):
            ax.errorbar([x], [y], yerr=[[y - lo], [hi - y]] if hi > lo else None,
                        fmt=markers[i % len(markers)], color=color, capsize=2,
                        label=lbl(target) if j == 0 else None)
    # a system's points share its x: name it once, beside its first target's point, with
    # labels moved apart where points crowd (place_labels) and a leader line when moved
    first = next(iter(points.values()), [])
    fig.canvas.draw()
    to_pt = 72.0 / fig.dpi
    anchors = []
    for system, x, y, _, _ in first:
        px, py = ax.transData.transform((x, y))
        anchors.append((px * to_pt, py * to_pt, 4.3 * len(str(system)) + 2))
    for (system, x, y, _, _), (ax_pt, ay_pt, _), (lx, ly) in zip(
            first, anchors, place_labels(anchors), strict=True):
        dx, dy = lx - ax_pt, ly - ay_pt + 2
        ax.annotate(lbl(system), (x, y), textcoords="offset points", xytext=(dx, dy),
                    fontsize=7, color="#333333", annotation_clip=False,
                    arrowprops={"arrowstyle": "-", "color": "#999999", "lw": 0.5,
                                "shrinkA": 0, "shrinkB": 2} if abs(dy + 3) > 4 else None)
    ax.set_xlabel(lbl(xlabel))
    ax.set_ylabel(lbl(ylabel))
    ax.set_title(lbl(title))
    ax.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)
