"""Small helpers shared by the experiment reproductions: summary statistics and atomic CSV/PNG output."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..data.io import atomic_output

__all__ = ["mean_se", "write_csv", "save_png"]


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for a single value)."""
    arr = np.asarray(values, dtype=float)
    se = float(arr.std(ddof=1) / np.sqrt(arr.size)) if arr.size > 1 else 0.0
    return float(arr.mean()), se


def write_csv(path: Path, rows: list[dict[str, object]]) -> None:
    """Rows (dicts with the same keys) as a CSV with a header, written atomically; nothing for no rows."""
    if not rows:
        return
    with atomic_output(path) as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0].keys()), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def save_png(fig, path: Path) -> None:
    """Save a matplotlib figure as PNG atomically and close it."""
    import matplotlib.pyplot as plt

    with atomic_output(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
