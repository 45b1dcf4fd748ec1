"""The object every Python release returns: the release of :mod:`dprelease.release` it wraps, plus what a
data scientist reaches for -- ``.manifest`` (a dict), ``.write(path)``, ``.to_pandas()`` and a notebook view.

Everything here is post-processing of the released values and of the manifest (public facts): it costs no
privacy budget.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any

from ..errors import ParameterError

__all__ = ["Release", "wrap"]

_PREVIEW_ROWS = 8


class Release:
    """A release (set-valued, itemsets, table or degrees) as the Python API returns it.

    ``release``: the object of :mod:`dprelease.release` (``SetValuedRelease``, ``ItemsetRelease``,
    ``GeneralizedTable``, ``SyntheticTable``, ``DegreeRelease``); its attributes are reachable here too
    (``r.itemsets``, ``r.degrees``, ...).
    """

    def __init__(self, release: Any, *, ledger: object = None) -> None:
        self.release = release
        self.ledger = ledger

    # -- what every release has --------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return str(self.release.kind)

    @property
    def manifest(self) -> dict[str, Any]:
        """Every public fact about the release (what the manifest file holds, before the writer adds the
        file's name and sha256)."""
        return dict(self.release.manifest)

    @property
    def epsilon(self) -> float | None:
        eps = self.release.manifest.get("epsilon")
        return float(eps) if isinstance(eps, (int, float)) else None

    def write(self, path: str | os.PathLike[str], *, force: bool = False, **kwargs: Any) -> Any:
        """Write the release and its manifest (``PATH.manifest.json``) as one unit; an existing file is replaced
        only with ``force=True`` (as ``--force``). ``kwargs`` go to the release's writer (a table's
        ``records=True`` also writes the record form). Returns the files written."""
        from ._core import check_output

        companions = []
        if kwargs.get("records"):
            from ..release.table import records_path

            companions.append(records_path(path))
        check_output(path, force=force, companions=companions, option="path")
        return self.release.write(path, **kwargs)

    def to_pandas(self) -> Any:
        """The released values as a DataFrame (one row per released record, itemset, cell or node)."""
        import numpy as np
        import pandas as pd

        r = self.release
        if self.kind == "setvalued":
            labels = r.universe.labels
            return self._with_errors(pd.DataFrame({"itemset": [tuple(labels[i] for i in s.tolist()) for s in r.itemsets],
                                                   "count": np.asarray(r.counts, dtype=np.int64)}))
        if self.kind == "itemsets":
            labels = r.universe.labels
            return self._with_errors(pd.DataFrame({"itemset": [tuple(labels[i] for i in s) for s in r.itemsets],
                                                   "count": np.asarray(r.counts, dtype=np.float64),
                                                   "frequency": np.asarray(r.frequencies, dtype=np.float64)}))
        if self.kind == "table":
            return r.frame() if hasattr(r, "frame") else r.arrow().to_pandas()
        if hasattr(r, "edges"):  # a graph regenerated from a degree sequence
            return pd.DataFrame(np.asarray(r.edges, dtype=np.int64).reshape(-1, 2), columns=["u", "v"])
        return self._with_errors(pd.DataFrame({"degree": np.asarray(r.degrees, dtype=np.int64)}))

    def _with_errors(self, frame: Any) -> Any:
        """``frame`` with the columns sd, low, high where the release carries one interval per row (the noise of
        each released value, post-processing of public scales; ``manifest["uncertainty"]`` says what it covers)."""
        intervals = getattr(self.release, "intervals", None)
        errors = intervals() if callable(intervals) else None
        if errors is None or len(errors.sd) != len(frame):
            return frame
        return frame.assign(sd=errors.sd, low=errors.low, high=errors.high)

    def graph(self, model: str = "configuration", *, seed: int | None = None) -> Release:
        """A graph regenerated from this degree release (post-processing, as ``degrees --graph-out``): nodes
        0..n-1 with the released degrees, wired by ``model`` ("configuration" or "havel-hakimi"); ``seed``
        makes the wiring reproducible (experiment mode, recorded in the manifest), else it is drawn securely."""
        from ..graphs.regenerate import regenerated_graph
        from ..privacy import SecureNoise, SeededNoise
        from ._core import check_seed

        if self.kind != "degrees" or not hasattr(self.release, "degrees"):
            raise ParameterError(f"graph(): a {self.kind} release is not a degree sequence")
        seed = check_seed(seed)
        noise = SecureNoise() if seed is None else SeededNoise(seed)
        return wrap(regenerated_graph(self.release, model, noise, derived_from="(python: the degree release)"),
                    ledger=self.ledger)

    def count(self, *args: Any, **kwargs: Any) -> Any:
        """The release's estimate of a count with its interval, where the release kind answers counts."""
        method = getattr(self.release, "count", None)
        if method is None:
            raise NotImplementedError(f"a {self.kind} release of this version does not answer counts")
        return method(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "release":
            raise AttributeError(name)
        return getattr(self.release, name)

    # -- how it shows -------------------------------------------------------------------------------------
    def _facts(self) -> list[tuple[str, str]]:
        m = self.release.manifest
        privacy = m.get("privacy") if isinstance(m.get("privacy"), dict) else {}
        rng = m.get("rng") if isinstance(m.get("rng"), dict) else {}
        mode = str(rng.get("mode", "?")) + (f" (seed {rng.get('seed')}: NOT for publication)"
                                             if rng.get("mode") == "seeded" else "")
        release = m.get("release") if isinstance(m.get("release"), dict) else {}
        size = ", ".join(f"{k} {v}" for k, v in release.items() if isinstance(v, (int, float)))
        facts = [("released", f"{self.kind} release by {m.get('algorithm')}"),
                 ("epsilon", f"{m.get('epsilon')} (spent {privacy.get('epsilon_spent', '?')})"),
                 ("privacy unit", str(m.get("privacy_unit", "record"))), ("RNG", mode), ("size", size or "?")]
        facts += [("note", str(n)) for n in (m.get("notes") or [])[:4]]
        return facts

    def __repr__(self) -> str:
        m = self.release.manifest
        return (f"<dprelease {self.kind} release: {m.get('algorithm')}, epsilon {m.get('epsilon')}, "
                f"rng {(m.get('rng') or {}).get('mode')}>")

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                       f"{html.escape(v)}</td></tr>" for k, v in self._facts())
        try:
            frame = self.to_pandas()
            preview = frame.head(_PREVIEW_ROWS).to_html(index=False)
            more = f"<p>{len(frame):,} rows; the first {min(len(frame), _PREVIEW_ROWS)} shown</p>"
        except Exception as exc:  # noqa: BLE001 - the view must not fail where the release exists
            preview, more = "", f"<p>(no preview: {html.escape(str(exc))})</p>"
        return f"<div><table>{rows}</table>{more}{preview}</div>"

    def manifest_json(self) -> str:
        return json.dumps(self.release.manifest, indent=2, allow_nan=False, default=str)


def wrap(release: Any, *, ledger: object = None) -> Release:
    return Release(release, ledger=ledger)
