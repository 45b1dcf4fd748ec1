"""A self-contained HTML page: inline styles, figures embedded as base64 PNG, no script, no external resource.

The page works offline and in any browser: nothing is fetched (no stylesheet, font, script or image URL),
wide tables scroll inside their own box and long words (paths, hashes) wrap, so the page never overflows
the viewport horizontally (checked in headless Chromium by ``tests/test_report_browser.py``).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Sequence

from matplotlib.figure import Figure

__all__ = ["Page", "esc", "new_figure", "fitted_limits", "square_axes"]

_CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       font-size: 15px; line-height: 1.45; color: #1b1f24; background: #fff; }
main { max-width: 980px; margin: 0 auto; padding: 0 16px 48px; }
h1 { font-size: 1.6em; margin: 0.6em 0 0.2em; }
h2 { font-size: 1.25em; margin: 1.6em 0 0.4em; border-bottom: 1px solid #d0d7de; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
p, li, dd, dt { overflow-wrap: anywhere; }
td, th { overflow-wrap: break-word; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 0.92em; background: #f3f4f6;
       padding: 0 3px; border-radius: 3px; overflow-wrap: anywhere; }
.banner { background: #fff4e5; border: 2px solid #d9480f; border-radius: 6px; padding: 10px 14px; margin: 16px 0; }
.warning { background: #fff0f0; border-left: 5px solid #c92a2a; padding: 8px 12px; margin: 10px 0; }
.note { color: #57606a; font-size: 0.92em; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.93em; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 14px 0; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { color: #57606a; font-size: 0.9em; margin-top: 4px; }
dl.facts { display: grid; grid-template-columns: minmax(8em, max-content) minmax(0, 1fr); gap: 4px 14px; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
.metrics { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.metric { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; min-width: 10em; flex: 1 1 10em; }
.metric .value { font-size: 1.4em; font-weight: 600; }
.metric .label { color: #57606a; font-size: 0.88em; }
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def new_figure(width: float = 8.0, height: float = 4.2) -> Figure:
    """A matplotlib figure outside pyplot (no global state, no display backend)."""
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def fitted_limits(values, pad: float = 0.05) -> tuple[float, float]:
    """Axis limits that span ``values`` with a margin: a scatter of top-k supports (which crowd far from 0) fills
    its plot instead of sitting in a corner of one that starts at 0."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
    margin = max(hi - lo, abs(hi) * 0.02, 1e-12) * pad
    return lo - margin, hi + margin


def square_axes(ax, values, spread: float = 20.0) -> float | None:
    """Give a released-vs-true scatter the same limits on both axes, fitted to ``values``, and draw the diagonal.

    Where the positive values span more than ``spread`` times (a few very frequent itemsets beside many rarer
    ones), both axes are logarithmic and the returned floor is where the caller draws values at or below 0 (at
    the bottom edge); else linear axes fitted to the range (not from 0) and None."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    pos = v[v > 0]
    floor = None
    if pos.size and float(pos.max()) > spread * float(pos.min()):
        floor = float(pos.min()) / 2
        lo, hi = floor / 1.25, float(pos.max()) * 1.25
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        lo, hi = fitted_limits(v)
    ax.plot([lo, hi], [lo, hi], color="#555", linewidth=1)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    return floor


class Page:
    """An HTML report built section by section."""

    def __init__(self, title: str):
        self.title = title
        self.parts: list[str] = []
        self.n_figures = 0

    # --- building blocks ---
    def raw(self, fragment: str) -> None:
        self.parts.append(fragment)

    def heading(self, text: str, level: int = 2) -> None:
        self.parts.append(f"<h{level}>{esc(text)}</h{level}>")

    def paragraph(self, text: str, cls: str | None = None, *, markup: bool = False) -> None:
        body = text if markup else esc(text)
        self.parts.append(f'<p class="{cls}">{body}</p>' if cls else f"<p>{body}</p>")

    def warning(self, text: str) -> None:
        self.parts.append(f'<div class="warning">{esc(text)}</div>')

    def bullets(self, items: Iterable[str], *, markup: bool = False) -> None:
        lis = "".join(f"<li>{item if markup else esc(item)}</li>" for item in items)
        self.parts.append(f"<ul>{lis}</ul>")

    def facts(self, pairs: Iterable[tuple[str, str]], *, markup: bool = False) -> None:
        body = "".join(f"<dt>{esc(k)}</dt><dd>{v if markup else esc(v)}</dd>" for k, v in pairs)
        self.parts.append(f'<dl class="facts">{body}</dl>')

    def metrics(self, cards: Iterable[tuple[str, str]]) -> None:
        body = "".join(f'<div class="metric"><div class="value">{esc(v)}</div><div class="label">{esc(k)}</div></div>'
                       for k, v in cards)
        self.parts.append(f'<div class="metrics">{body}</div>')

    def table(self, header: Sequence[str], rows: Iterable[Sequence[object]], *, numeric: Sequence[bool] | None = None,
              caption: str | None = None) -> None:
        numeric = list(numeric) if numeric is not None else [False] * len(header)
        head = "".join(f"<th>{esc(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f'<td class="num">{esc(v)}</td>' if numeric[i] else f"<td>{esc(v)}</td>"
                                        for i, v in enumerate(row)) + "</tr>" for row in rows)
        self.parts.append(f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
                          f"</table></div>")
        if caption:
            self.parts.append(f'<p class="note">{esc(caption)}</p>')

    def figure(self, fig: Figure, alt: str, caption: str | None = None) -> None:
        """Embed a matplotlib figure as a base64 PNG (the figure is closed)."""
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        self.n_figures += 1
        cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
        self.parts.append(f'<figure><img alt="{esc(alt)}" src="data:image/png;base64,{data}">{cap}</figure>')

    # --- the page ---
    def html(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                f"<title>{esc(self.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n"
                + "\n".join(self.parts) + "\n</main>\n</body>\n</html>\n")
