"""``dprelease report``: one self-contained HTML page about a release, for the custodian.

It reads the RAW data, so it is for the custodian only, and says so at the top: its numbers are exact
statistics of the raw data, not differentially private. The page holds the manifest in words
(:mod:`.words`), the utility metrics of the release's kind with plots (:mod:`.setvalued`, :mod:`.itemsets`,
:mod:`.table`, :mod:`.degrees`), and nothing external (:mod:`.page`): it opens offline in any browser.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError, ParameterError, PrivacyLeakWarning
from .page import Page

__all__ = ["KINDS", "DEFAULT_QUERIES", "Report", "build_report", "infer_kind"]

KINDS = ("setvalued", "itemsets", "table", "degrees")  # == dprelease.release.KINDS
# random queries per kind: DiffPart's 50,000 itemset counts; 10,000 range counts over a table's domain (as
# `evaluate ranges`)
DEFAULT_QUERIES = {"setvalued": 50_000, "itemsets": 0, "table": 10_000, "degrees": 0}


@dataclass
class Report:
    html: str
    kind: str
    metrics: dict[str, object] = field(default_factory=dict)
    figures: int = 0


def infer_kind(manifest: dict[str, object]) -> str | None:
    """The kind of release a manifest describes (None when the algorithm is not known to this version)."""
    from ..release import kind_of

    return kind_of(manifest)


def build_report(raw: str | os.PathLike, release: str | os.PathLike, *, kind: str | None = None,
                 universe: str | None = None, schema: str | None = None, queries: int | None = None, seed: int = 0,
                 k: int | None = None) -> Report:
    """Read the release (checked against its manifest) and the raw data; build the page.

    ``queries``: random counting queries (default :data:`DEFAULT_QUERIES` of the kind)."""
    from ..release import read_manifest
    from .words import describe_details, describe_manifest

    release = Path(release)
    manifest = read_manifest(release)  # the pair must match (dprelease.release)
    inferred = infer_kind(manifest)
    algorithm = manifest.get("algorithm", "?")
    if kind is None:
        if inferred is None:
            raise InputError(f"{release}: cannot tell the kind of a {algorithm} release from its manifest; "
                             f"give --kind ({'|'.join(KINDS)})")
        kind = inferred
    elif kind not in KINDS:
        raise ParameterError(f"--kind {kind}: choose from {', '.join(KINDS)}")
    elif inferred is not None and inferred != kind:
        raise ParameterError(f"--kind {kind}: {release} is a {algorithm} release, which is {inferred}")

    queries = DEFAULT_QUERIES[kind] if queries is None else queries
    page = Page(f"dprelease report: {release.name}")
    page.raw(f"<h1>Release report: {_esc(release.name)}</h1>")
    page.raw('<div class="banner"><strong>Custodian only.</strong> This report reads the raw data '
             f"(<code>{_esc(raw)}</code>): its metrics and plots are exact statistics of the raw records, NOT "
             "differentially private. Do not publish it; publish the release and its manifest.</div>")
    glance_at = len(page.parts)
    describe_manifest(page, manifest, str(release))
    if kind == "setvalued":
        metrics = _setvalued(page, raw, release, manifest, universe, queries, seed)
    elif kind == "itemsets":
        metrics = _itemsets(page, raw, release, manifest, universe, k)
    elif kind == "table":
        metrics = _table(page, raw, release, manifest, schema, queries, seed)
    else:
        metrics = _degrees(page, raw, release, manifest)
    from .. import __version__

    glance = Page("")
    glance.heading("At a glance")
    glance.metrics(_glance(kind, manifest, metrics))
    page.parts[glance_at:glance_at] = glance.parts
    describe_details(page, manifest)
    page.paragraph(f"Made by dprelease {__version__} (dprelease report) from {raw} and {release}.", "note")
    return Report(page.html(), kind, metrics, page.n_figures)


def _pct(x: object) -> str:
    return "n/a" if x is None else f"{100 * float(x):.1f} %"  # type: ignore[arg-type]


def _num(x: object, digits: int = 3) -> str:
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "n/a"
    return f"{v:.{digits}g}" if v == v else "n/a"


def _glance(kind: str, manifest: dict[str, object], m: dict[str, object]) -> list[tuple[str, str]]:
    """The headline numbers, above the manifest in words."""
    rng = manifest.get("rng") if isinstance(manifest.get("rng"), dict) else {}
    mode = str(rng.get("mode", "?"))
    eps = manifest.get("epsilon")
    cards = [(f"{manifest.get('algorithm', '?')} release", "ε = " + ("none (not DP)" if eps is None else _num(eps, 6))),
             ("randomness", "secure" if mode == "secure" else ("none" if mode == "none" else
                                                               f"{mode}: NOT for publication"))]
    if kind == "setvalued":
        cards += _glance_setvalued(m)
    elif kind == "itemsets":
        cards += [(f"false negative rate, k = {m['k']} (an empty release: 1)", _num(m["fnr"])),
                  ("median relative error of frequencies (every frequency published as 0: 1)",
                   _num(m["median_relative_error"]))]
    elif kind == "degrees":
        uniform = m.get("uniform") if isinstance(m.get("uniform"), dict) else None
        for key, label in (("ks", "KS distance of the degree distribution"), ("emd", "Earth Mover's distance (degrees)")):
            cards.append((label + (f"; degrees spread evenly over 0..θ {_num(uniform[key])}" if uniform else ""),
                          _num(m[key])))
    elif kind == "table":
        ranges = m["range_queries"]
        cards += [("held-out accuracy, tree trained on the release; trained on raw records "
                   f"{_pct(m['accuracy_raw_baseline'])}, majority class {_pct(m['accuracy_majority'])}",
                   _pct(m["accuracy_release"])),
                  ("range queries holding ≥ 1 % of N: median relative error; empty table "
                   f"{_num(ranges['baselines']['empty']['large_median_relative_error'])}, uniform table "  # type: ignore[index]
                   f"{_num(ranges['baselines']['uniform']['large_median_relative_error'])}",  # type: ignore[index]
                   _num(ranges["large_median_relative_error"]))]  # type: ignore[index]
    return cards


def _glance_setvalued(m: dict[str, object]) -> list[tuple[str, str]]:
    """A set-valued release's headline numbers, each beside its data-independent baselines."""
    top = m.get("topk_utility") or {}
    uniform_top = m.get("topk_utility_uniform") or {}
    k = max(top, key=int) if top else None  # type: ignore[arg-type]
    counting = m["counting"]
    base = counting["baselines"]  # type: ignore[index]
    occ = m.get("occurrence") or {}
    cards = [("released / raw records", f"{m['released_records']:,} / {m['raw_records']:,}"),
             ("frequent-itemset queries: mean relative error; empty release "
              f"{_num(base['empty']['frequent']['mean_relative_error'])}, uniform baskets "
              f"{_num(base['uniform']['frequent']['mean_relative_error'])}",
              _num(counting["frequent"]["mean_relative_error"])),  # type: ignore[index]
             (f"random counting queries: mean relative error; empty release {_num(base['empty']['mean_relative_error'])}"
              f", uniform baskets {_num(base['uniform']['mean_relative_error'])}",
              _num(counting["mean_relative_error"])),  # type: ignore[index]
             (f"top-{k} utility, 1 is perfect; empty release 0, uniform baskets {_num(uniform_top.get(k))}",  # type: ignore[union-attr]
              _num(top[k]) if k else "n/a")]  # type: ignore[index]
    if occ.get("records_exact") is not None:  # type: ignore[union-attr]
        cards.append(("released records equal to a raw record / contained in one (a generalized record)",
                      f"{_pct(occ['records_exact'])} / {_pct(occ['records_contained'])}"))  # type: ignore[index]
    return cards


def _esc(text: object) -> str:
    from .page import esc

    return esc(text)


def _universe(spec: str | None, manifest: dict[str, object]):
    """The declared universe: --universe, else the one the manifest records (a range, or a file that still
    exists); None means derive it from the raw data (as the release did)."""
    from ..data.universe import parse_universe_spec

    if spec:
        return parse_universe_spec(spec)
    domain = manifest.get("domain") if isinstance(manifest.get("domain"), dict) else {}
    source, recorded = domain.get("source"), domain.get("spec")
    if source == "declared-range" and recorded:
        return parse_universe_spec(str(recorded))
    if source == "declared-file" and recorded and Path(str(recorded)).is_file():
        return parse_universe_spec(str(recorded))
    if source == "derived-from-data":
        return None
    raise ParameterError("--universe is required: the release's manifest names no universe this report can read")


def _read_raw_transactions(raw, universe):
    from ..data.io import read_transactions

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # custodian side: derived as the release did
        return read_transactions(raw, universe, derive=universe is None)  # None: the release derived it


def _setvalued(page: Page, raw, release: Path, manifest, universe_spec, queries: int, seed: int) -> dict:
    from ..release import SetValuedRelease
    from .setvalued import setvalued_section

    from .uncertainty import setvalued_bars

    raw_db, universe = _read_raw_transactions(raw, _universe(universe_spec, manifest))
    back = SetValuedRelease.read(release, universe)
    result = setvalued_section(page, raw_db, back.to_db(), universe, queries=queries, seed=seed)
    return setvalued_bars(page, raw_db, back, result)


def _itemsets(page: Page, raw, release: Path, manifest, universe_spec, k: int | None) -> dict:
    from ..release.itemsets import ItemsetRelease
    from .itemsets import itemsets_section

    raw_db, universe = _read_raw_transactions(raw, _universe(universe_spec, manifest))
    back = ItemsetRelease.read(release, universe)
    published, counts, freqs = back.itemsets, back.counts, back.frequencies
    params = manifest.get("parameters") if isinstance(manifest.get("parameters"), dict) else {}
    k = k or int(params.get("k") or 0) or max(len(published), 1)
    from .uncertainty import itemset_bars

    return itemset_bars(page, raw_db, back, itemsets_section(page, raw_db, universe, published, counts, freqs, k))


def _schema(spec: str | None, manifest: dict[str, object]):
    from ..data.table import load_schema

    if spec:
        return load_schema(spec)
    domain = manifest.get("domain") if isinstance(manifest.get("domain"), dict) else {}
    source = domain.get("source")
    if source and Path(str(source)).is_file():
        return load_schema(str(source))
    raise ParameterError("--schema is required: the release's manifest names no schema file that exists here")


def _table(page: Page, raw, release: Path, manifest, schema_spec, queries: int, seed: int) -> dict:
    from ..data.table import read_table
    from ..release.table import read_table_release
    from .table import table_section

    schema = _schema(schema_spec, manifest)
    released = read_table_release(release, schema)
    table = read_table(raw, schema)
    from .uncertainty import table_bars

    return table_bars(page, table, released, table_section(page, table, released, release, queries=queries,
                                                           seed=seed))


def _degrees(page: Page, raw, release: Path, manifest) -> dict:
    from ..data.graphs import read_edge_list
    from ..release.degrees import DegreeRelease, read_degrees_release
    from .degrees import degrees_section

    domain = manifest.get("domain") if isinstance(manifest.get("domain"), dict) else {}
    node_list = domain.get("node_list")  # a declared node list: the raw side counts its isolated nodes
    nodes = str(node_list) if node_list and Path(str(node_list)).is_file() else None
    true = read_edge_list(raw, nodes=nodes).degrees()
    back = read_degrees_release(release)
    graph = not isinstance(back, DegreeRelease)  # a graph regenerated from a released sequence
    released = back.degrees if isinstance(back, DegreeRelease) else back.degrees()
    params = manifest.get("parameters") if isinstance(manifest.get("parameters"), dict) else {}
    theta = params.get("theta")
    model = domain.get("neighbour_model")
    result = degrees_section(page, true, released, theta=None if theta is None else int(theta), graph=graph,
                             model=str(model) if model else None)
    if graph:
        return result
    from .uncertainty import degree_bars

    return degree_bars(page, true, back, None if theta is None else int(theta), result)
