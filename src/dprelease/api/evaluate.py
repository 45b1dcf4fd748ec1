"""``dp.evaluate.*`` (the papers' utility metrics of a release against the raw data) and ``dp.report`` (the HTML
page of ``dprelease report``). Both read the raw data: they are for the custodian, never to be published.

``raw`` takes the forms a release takes (a path, baskets, a DataFrame, a graph); the universe and schema are
the release's own.
"""

from __future__ import annotations

import os
import tempfile
import types
from pathlib import Path
from typing import Any

from ._core import check_output, python_reporter

__all__ = ["namespace", "report", "counting", "topk", "itemsets", "ranges", "degrees"]


def _inner(release: Any) -> Any:
    return getattr(release, "release", release)


def _raw_transactions(raw: object, universe: Any) -> Any:
    import argparse

    from .inputs import transactions_of

    db, _ = transactions_of(raw, universe, argparse.Namespace(derive_universe=False, universe_required=False),
                            python_reporter)
    return db


def counting(raw: object, release: Any, *, queries: int = 50_000, seed: int = 0) -> dict[str, Any]:
    """Mean relative error of random counting queries (DiffPart section 5.1) of a set-valued release."""
    from ..evaluation import evaluate_counting, occurrence_share

    r = _inner(release)
    raw_db, released = _raw_transactions(raw, r.universe), r.to_db()
    result = dict(evaluate_counting(raw_db, released, n_queries=queries, seed=seed))
    result["occurrence"] = occurrence_share(raw_db, released)
    return result


def topk(raw: object, release: Any, *, k: int) -> float:
    """Top-k frequent itemset utility of a set-valued release (DiffPart appendix E): 1 is perfect."""
    from ..evaluation import topk_utility

    r = _inner(release)
    return float(topk_utility(_raw_transactions(raw, r.universe), r.to_db(), k))


def itemsets(raw: object, release: Any, *, k: int, tolerance: float = 0.0) -> dict[str, float]:
    """FNR, recall and median relative error of published top-k itemsets (PrivBasis section 5)."""
    from ..evaluation.itemsets import itemset_metrics

    r = _inner(release)
    return dict(itemset_metrics(_raw_transactions(raw, r.universe), r.itemsets, r.frequencies, k,
                                tolerance=tolerance))


def ranges(raw: object, release: Any, *, schema: object, queries: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Relative error of random range-count queries on a released table (the raw table in any table form)."""
    from ..engine import open_table, unwrap
    from ..evaluation.ranges import evaluate_ranges, make_range_workload, released_boxes, table_data
    from ..relational.rps import table_domain
    from .inputs import schema_of, table_of

    s = schema_of(schema)
    frame = Release_frame(release)
    released = released_boxes(frame, s)
    table = unwrap(open_table(table_of(raw, s), s))
    workload = make_range_workload(table_domain(s), queries, seed=seed)
    return dict(evaluate_ranges(table_data(table), released, workload))


def Release_frame(release: Any) -> Any:  # noqa: N802 - a helper named for what it returns
    from .results import Release

    return release.to_pandas() if isinstance(release, Release) else Release(release).to_pandas()


def degrees(graph: object, release: Any, *, nodes: object = None) -> dict[str, float]:
    """KS, L1 and EMD of a released degree sequence against the graph's true degrees."""
    from ..evaluation.degrees import degree_metrics
    from .inputs import graph_of

    g, _ = graph_of(graph, nodes)
    return dict(degree_metrics(g.degrees(), _inner(release).degrees))


namespace = types.SimpleNamespace(counting=counting, topk=topk, itemsets=itemsets, ranges=ranges, degrees=degrees)


def report(raw: str | os.PathLike[str], release: Any, path: str | os.PathLike[str], *, force: bool = False,
           universe: str | None = None, schema: str | None = None, queries: int | None = None, seed: int = 0,
           k: int | None = None) -> Path:
    """Write the HTML page of ``dprelease report`` about ``release`` (a Release, or the path of a written one)
    to ``path``; ``raw`` is the raw data file. Returns the page's path."""
    from ..data.io import atomic_output
    from ..report import build_report

    out = check_output(path, force=force, inputs=[raw], option="path")
    with tempfile.TemporaryDirectory() as tmp:
        where = release
        if not isinstance(release, (str, os.PathLike)):
            name = "release.csv" if _inner(release).kind in ("itemsets", "table") else "release.dat"
            where = Path(tmp) / name
            _inner(release).write(where)
        page = build_report(raw, where, universe=universe, schema=schema, queries=queries, seed=seed, k=k)
    with atomic_output(out, "w") as fh:
        fh.write(page.html)
    return out
