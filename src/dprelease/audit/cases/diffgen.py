"""Audit cases of DiffGen (Mohammed et al., KDD 2011): numeric splits (eqs. 6-7, lines 4 and 9), candidate
selection (eq. 5, line 7) and the leaf x class counts (line 12).

A small table with one integer attribute (bounds [0, 8)) and one categorical attribute (a two-level
taxonomy), two classes, h = 2. Pairs: a record that moves the best numeric split (Max score), the
same with the information-gain score, and the switchable improvements (recycle + local scores).
Events: the final cut of each attribute (so the numeric split point itself), the whole generalized
table, and each cell's class count (with thresholds).
"""

from __future__ import annotations

import numpy as np

from ..core import AuditCase, register_cases
from ..files import file_level
from ..search import register_space

_SCHEMA = {
    "class": {"name": "cls", "values": ["no", "yes"]},
    "attributes": [
        {"name": "x", "type": "numeric", "bounds": [0, 8], "integer": True},
        {"name": "c", "type": "categorical", "taxonomy": {"Any": [{"A": ["a1", "a2"]}, "b"]}},
    ],
}
# (x, c leaf code, class): x < 4 mostly "no", x >= 4 mostly "yes"; c = b leans "yes".
_ROWS = ([(1, 0, 0)] * 4 + [(2, 1, 0)] * 3 + [(3, 0, 0)] * 3 + [(3, 2, 1)] * 2 + [(4, 2, 1)] * 3
         + [(5, 0, 1)] * 3 + [(6, 1, 1)] * 2 + [(7, 2, 0)] * 2)


def _table(rows, schema):
    from ...data.table import EncodedTable

    arr = np.asarray(rows, dtype=np.int64)
    return EncodedTable(schema, (arr[:, 0].astype(np.float64), arr[:, 1]), arr[:, 2])


def _events(rel) -> list[str]:
    labels = rel.cut_labels()
    names = list(labels)
    out = [f"cut {a} = " + ",".join(labels[a]) for a in names]
    classes = rel.schema.class_attribute.values
    rows = []
    for r in range(rel.cells.shape[0]):
        cell = " ".join(f"{a}={labels[a][rel.cells[r, j]]}" for j, a in enumerate(names))
        for k, cls in enumerate(classes):
            n = int(rel.counts[r, k])
            rows.append(f"{cell} {cls}:{n}")
            out.append(f"{cell} {cls}={n}")
            out += [f"{cell} {cls}>={g}" for g in range(0, 12, 2) if n >= g]
    out.append("table " + ";".join(rows))
    for k, cls in enumerate(classes):  # class totals: the same whatever the cut
        n = int(rel.counts[:, k].sum())
        out += [f"total {cls}={n}"] + [f"total {cls}>={g}" for g in range(4, 24, 2) if n >= g]
    return out


@register_cases("diffgen")
@file_level
def _diffgen_cases(epsilon: float) -> list[AuditCase]:
    from ...data.table import parse_schema
    from ...relational.diffgen import diffgen

    schema = parse_schema(_SCHEMA, "audit schema")
    d = _table(_ROWS, schema)
    cases: list[AuditCase] = []
    variants = [
        ("max", {"score": "max"}, (0, 1, 1)),
        ("infogain", {"score": "infogain"}, (7, 0, 0)),
        ("local-recycle", {"score": "max", "local": True, "recycle": True}, (3, 2, 0)),
    ]
    for tag, params, extra in variants:
        def run(table, noise, params=params):
            return diffgen(table, epsilon, 2, noise=noise, **params)

        cases.append(AuditCase(
            f"diffgen/{tag}-numeric-split", d, _table(_ROWS + [extra], schema), epsilon, run, _events,
            description=f"x integer in [0,8), c in Any{{A{{a1,a2}},b}}, 2 classes, {len(_ROWS)} records, h = 2, "
                        f"{params}; D' adds (x={extra[0]}, c={['a1', 'a2', 'b'][extra[1]]}, "
                        f"{['no', 'yes'][extra[2]]}), which moves the numeric split scores"))
    return cases


# --- search space (dprelease audit diffgen --search): CSV tables, one row ------------------------------------------


@register_space("diffgen")
def _diffgen_space(epsilon: float):
    from ...data.table import parse_schema
    from ...relational.diffgen import diffgen
    from ..spaces import table_space

    schema = parse_schema(_SCHEMA, "audit schema")
    configs = [{"h": 2, "score": "max"}, {"h": 2, "score": "infogain"}, {"h": 1, "score": "max"},
               {"h": 2, "score": "max", "local": True, "recycle": True}]

    def release(table, noise, cfg):
        return diffgen(table, epsilon, cfg["h"], noise=noise, score=cfg["score"], local=cfg.get("local", False),
                       recycle=cfg.get("recycle", False))

    return [table_space("diffgen", schema, configs, release, lambda d, dp, cfg: _events, claim=epsilon)]
