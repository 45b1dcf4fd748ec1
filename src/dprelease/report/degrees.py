"""The report of a degree-sequence release (RPS, Hay et al., Day et al. under node-DP; docs/rps.md).

* KS, L1 and Earth Mover's distance of the released degree distribution to the raw graph's
  (:func:`dprelease.evaluation.degrees.degree_metrics`, the numbers of ``evaluate degrees``), the number of
  nodes and the mean and largest degree of each;
* beside them, the same distances of a sequence that never looked at the graph: the raw node count spread
  evenly over the public degrees 0..theta (when the manifest gives theta);
* plots: the degree histograms, raw vs released (log scale), and the two cumulative distributions (the KS
  distance is their largest vertical gap).

The release is of the graph projected onto maximum degree theta (public): degrees above theta in the raw graph
cannot appear in it, and the page says how many raw nodes are above theta. It also says which neighbour model
the manifest declares: from an edge file alone (``edge-list``) only nodes of projected degree >= 1 are released;
with a node list (``declared-nodes``) every declared node is, and the raw side counts the isolated ones.
"""

from __future__ import annotations

import numpy as np

from .page import Page, new_figure

__all__ = ["degrees_section"]


def _fmt(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}g}" if np.isfinite(x) else "n/a"


def _degree_ticks(ax, top: int) -> None:
    """Plain degree ticks 0, 1, 2, 5, 10, 20, 50, ... on a symlog axis (its default shows only powers of 10)."""
    if top <= 50:
        return
    ticks = [0] + [m * 10 ** e for e in range(len(str(top))) for m in (1, 2, 5) if m * 10 ** e <= top]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()


def _uniform_degrees(n: int, theta: int) -> np.ndarray:
    """``n`` nodes spread evenly over the degrees 0..theta: a sequence that never looked at the graph."""
    return (np.arange(n, dtype=np.int64) * (theta + 1)) // max(n, 1)


def degrees_section(page: Page, true: np.ndarray, released: np.ndarray, *, theta: int | None, graph: bool,
                    model: str | None = None) -> dict[str, object]:
    """Append the utility section; returns the numbers."""
    from ..evaluation.degrees import degree_metrics

    true = np.asarray(true, dtype=np.int64)
    released = np.asarray(released, dtype=np.int64)
    metrics = degree_metrics(true, released)
    uniform = degree_metrics(true, _uniform_degrees(true.size, theta)) if theta is not None else None
    above = int((true > theta).sum()) if theta is not None else 0
    out: dict[str, object] = {**metrics, "nodes": int(true.size), "released_nodes": int(released.size),
                              "mean_degree": float(true.mean()) if true.size else 0.0,
                              "released_mean_degree": float(released.mean()) if released.size else 0.0,
                              "max_degree": int(true.max(initial=0)), "released_max_degree": int(released.max(initial=0)),
                              "nodes_above_theta": above, **({"neighbour_model": model} if model else {}),
                              **({"uniform": uniform} if uniform is not None else {})}

    def beside(label: str, key: str) -> tuple[str, str]:
        return (label + (f"; degrees spread evenly over 0..θ {_fmt(uniform[key])}" if uniform is not None else ""),
                _fmt(metrics[key]))

    page.heading("Utility")
    page.metrics([beside("KS distance, 0 is perfect", "ks"), beside("L1 distance of histograms, 0..2", "l1"),
                  beside("Earth Mover's distance in degrees", "emd"),
                  ("nodes: raw / released", f"{true.size:,} / {released.size:,}"),
                  ("mean degree: raw / released", f"{out['mean_degree']:.3g} / {out['released_mean_degree']:.3g}")])
    what = "the degrees of the graph regenerated from the released sequence" if graph else "the released sequence"
    page.paragraph(f"Compared: the raw graph's degrees and {what} (dprelease.evaluation.degrees, as `dprelease "
                   "evaluate degrees`). KS: the largest gap between the cumulative distributions; L1: the sum of "
                   "the gaps between the normalised histograms; EMD: the area between the cumulative distributions "
                   "(in degrees). Beside each, a data-independent baseline: the raw node count spread evenly over "
                   "the public degrees 0..θ.", "note")
    if model == "edge-list":
        page.paragraph("Neighbour model: edge list (no node list was given). The nodes are the ids of the edge file, "
                       "so removing a node also removes its friends that have no other edge; the release therefore "
                       "covers only the nodes of projected degree ≥ 1, and its node count is itself noisy. Raw nodes "
                       f"of degree 0 here: {int((true == 0).sum()):,}.", "note")
    elif model == "declared-nodes":
        page.paragraph("Neighbour model: declared nodes (a complete node list was given with --nodes): every declared "
                       "node is released, isolated ones at degree 0.", "note")
    if theta is not None:
        page.paragraph(f"The release is of the graph projected onto maximum degree θ = {theta} (public): "
                       f"{above:,} of the {true.size:,} raw nodes have a larger degree, which the release cannot "
                       f"show (their share of the KS distance is the projection's, not the noise's).")

    top = int(max(true.max(initial=0), released.max(initial=0))) + 1
    ht = np.bincount(true, minlength=top)
    hr = np.bincount(released, minlength=top)
    page.heading("Degree histograms", 3)
    fig = new_figure(8.0, 3.8)
    ax = fig.add_subplot()
    xs = np.arange(top)
    ax.step(xs, np.where(ht > 0, ht, np.nan), where="mid", color="#1f77b4", label="raw")
    ax.step(xs, np.where(hr > 0, hr, np.nan), where="mid", color="#d62728", label="released")
    if theta is not None and theta < top:
        ax.axvline(theta, color="#555", linestyle=":", linewidth=1, label=f"θ = {theta}")
    ax.set_yscale("log")
    if top > 50:
        ax.set_xscale("symlog", linthresh=10)
    ax.set_xlim(-0.5 if top <= 50 else 0, top)  # no negative degrees (symlog would label a -10^1 tick)
    _degree_ticks(ax, top)
    ax.set_xlabel("degree")
    ax.set_ylabel("nodes")
    ax.set_title("Degree histogram: raw vs released")
    ax.legend()
    page.figure(fig, "degree histograms of the raw graph and of the release", "Number of nodes of each degree "
                "(log scale; empty degrees not drawn).")

    page.heading("Cumulative distributions", 3)
    fig = new_figure(8.0, 3.8)
    ax = fig.add_subplot()
    ft = np.cumsum(ht) / max(true.size, 1)
    fr = np.cumsum(hr) / max(released.size, 1) if released.size else np.ones(top)
    ax.step(xs, ft, where="post", color="#1f77b4", label="raw")
    ax.step(xs, fr, where="post", color="#d62728", label="released")
    k = int(np.argmax(np.abs(ft - fr)))
    ax.vlines(k, min(ft[k], fr[k]), max(ft[k], fr[k]), color="#000", linewidth=2, label=f"KS = {metrics['ks']:.3g}")
    if top > 50:
        ax.set_xscale("symlog", linthresh=10)
    ax.set_xlim(0, top)
    _degree_ticks(ax, top)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("degree")
    ax.set_ylabel("share of nodes with degree ≤ x")
    ax.set_title("Cumulative degree distributions")
    ax.legend(loc="lower right")
    page.figure(fig, "cumulative degree distributions of the raw graph and of the release")
    return out
