"""Plots drawn on the server as SVG with matplotlib's object API (no pyplot state, so one figure per
request is thread-safe). Text stays text (`svg.fonttype: none`), so the files are small and searchable;
pages show them as <img> (an SVG loaded as an image runs no script). Labels are relayrag's own names
(stages, arms, dataset ids); matplotlib escapes them as XML, and `$` is escaped so no label is mathtext.
"""

from __future__ import annotations

import io
import math

import matplotlib

matplotlib.rcParams["svg.fonttype"] = "none"
matplotlib.rcParams["svg.hashsalt"] = "relayrag"  # deterministic element ids
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

ARM_COLORS = {"dense": "#1f77b4", "bm25": "#ff7f0e", "hybrid": "#2ca02c"}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#17becf", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def _label(text: object) -> str:
    return str(text).replace("$", r"\$")


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def beta_pdf(x: float, a: float, b: float) -> float:
    """Density of Beta(a, b) at x in (0, 1), computed in log space (lgamma) so large a, b do not overflow."""
    if not 0.0 < x < 1.0:
        return 0.0
    log_b = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    return math.exp((a - 1) * math.log(x) + (b - 1) * math.log(1 - x) - log_b)


def waterfall(stages: list[dict], title: str = "") -> str:
    """Stage timings as a waterfall: one bar per trace entry, starting where the previous one ended (the
    workflow runs stages one after another), labelled with name and method; an LLM fallback is red."""
    n = max(1, len(stages))
    fig = Figure(figsize=(8, 0.45 * n + 1.0))
    ax = fig.add_subplot()
    start = 0.0
    for i, s in enumerate(stages):
        ms = float(s.get("ms") or 0.0)
        color = "#d62728" if s.get("llm_error") else PALETTE[i % len(PALETTE)]
        ax.barh(i, max(ms, 0.5), left=start, color=color, height=0.6)
        ax.text(start + ms, i, f"  {ms:,.0f} ms", va="center", fontsize=8)
        start += ms
    ax.set_yticks(range(len(stages)), [_label(f"{s.get('name')} ({s.get('method')})") for s in stages], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds since the first stage started")
    ax.set_xlim(0, max(1.0, start) * 1.18)
    if title:
        ax.set_title(_label(title), fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def beta_posteriors(arms: dict[str, tuple[float, float]], title: str = "") -> str:
    """Each arm's Beta(alpha, beta) density on [0, 1], with its mean as a dashed line."""
    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    xs = [i / 400 for i in range(1, 400)]
    for i, (arm, (a, b)) in enumerate(sorted(arms.items())):
        color = ARM_COLORS.get(arm, PALETTE[i % len(PALETTE)])
        ys = [beta_pdf(x, a, b) for x in xs]
        ax.plot(xs, ys, color=color, label=_label(f"{arm}: Beta({a:.2f}, {b:.2f}), mean {a / (a + b):.3f}"))
        ax.fill_between(xs, ys, color=color, alpha=0.12)
        ax.axvline(a / (a + b), color=color, linestyle="--", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("expected reward θ")
    ax.set_ylabel("posterior density")
    if title:
        ax.set_title(_label(title), fontsize=9)
    ax.legend(fontsize=8, loc="upper left")
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def reward_over_time(pulls: list[dict], title: str = "") -> str:
    """Running mean reward per arm against the pull number (pulls oldest first)."""
    fig = Figure(figsize=(7, 2.8))
    ax = fig.add_subplot()
    series: dict[str, tuple[list[int], list[float]]] = {}
    totals: dict[str, tuple[float, int]] = {}
    for i, p in enumerate(pulls, start=1):
        s, n = totals.get(p["arm"], (0.0, 0))
        totals[p["arm"]] = (s + p["reward"], n + 1)
        xs, ys = series.setdefault(p["arm"], ([], []))
        xs.append(i)
        ys.append((s + p["reward"]) / (n + 1))
    for j, (arm, (xs, ys)) in enumerate(sorted(series.items())):
        ax.plot(xs, ys, marker="o", markersize=3, color=ARM_COLORS.get(arm, PALETTE[j % len(PALETTE)]),
                label=_label(f"{arm} ({len(xs)} pull{'' if len(xs) == 1 else 's'})"))
    return _line_chart_svg(fig, ax, "pull (all arms, oldest first)", "mean reward so far", bool(series),
                           "no bandit pulls yet", title)


def history(points: dict[str, list[tuple[int, float]]], ylabel: str, title: str = "") -> str:
    """Line chart of metric values per series against the evaluation run number."""
    fig = Figure(figsize=(7, 2.8))
    ax = fig.add_subplot()
    for j, (name, pts) in enumerate(sorted(points.items())):
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                    color=ARM_COLORS.get(name, PALETTE[j % len(PALETTE)]), label=_label(name))
    return _line_chart_svg(fig, ax, "evaluation run", _label(ylabel), any(points.values()),
                           "no evaluations yet", title)


def _line_chart_svg(fig, ax, xlabel: str, ylabel: str, has_data: bool, empty_text: str, title: str) -> str:
    """Finish a 0–1 line chart over integer x (axes, legend or an empty-state text, title) as SVG."""
    ax.set_ylim(0, 1.04)  # a point at 1.0 stays whole
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if has_data:
        # whole numbers around the data: one point alone left matplotlib a 0.945-1.055 axis of fractional ticks
        x0, x1 = ax.dataLim.intervalx
        ax.set_xlim(math.floor(x0) - 0.5, max(math.ceil(x1), math.floor(x0) + 1) + 0.5)
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.text(0.5, 0.5, empty_text, ha="center", va="center", transform=ax.transAxes)
    if title:
        ax.set_title(_label(title), fontsize=9)
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)
