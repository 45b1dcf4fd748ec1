"""dprelease.limits: work bounds from public quantities (issue 9 section 2, issue 8 defect 7 first half).

The estimates are checked against exact enumeration (DiffGen's largest table) and seeded Monte Carlo
(discrete Laplace tails; tolerance 5 standard errors, false-failure rate below 1e-6). The CLI cases
themselves (exit 2, one line, nothing allocated or written) are in tests/test_bad_input.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import REPO

from dprelease import limits
from dprelease.data import Universe, read_transactions
from dprelease.data.table import load_schema
from dprelease.privacy import SeededNoise, make_noise


def test_parse_size():
    assert limits.parse_size("4G") == 4 * 2**30
    assert limits.parse_size("512M") == 512 * 2**20
    assert limits.parse_size("1.5GiB") == int(1.5 * 2**30)
    assert limits.parse_size("1000") == 1000
    for bad in ("lots", "-1G", "0", "nan"):
        with pytest.raises(ValueError):
            limits.parse_size(bad)


@pytest.mark.parametrize("eps", [0.1, 0.5, 2.0])
def test_positive_part_of_discrete_laplace(eps: float):
    """E[max(X, 0)] = t/(1 - t^2) and P(X >= k) = t^k/(1 + t) for X ~ DLap(1/eps), t = exp(-eps)."""
    x = SeededNoise(7).discrete_laplace(1.0 / eps, 400_000)
    pos = np.maximum(x, 0)
    se = pos.std() / math.sqrt(x.size)
    assert abs(pos.mean() - limits._dlap_positive_mean(eps)) < 5 * se
    for k in (1, 2, 5):
        p = limits._dlap_tail(eps, k)
        assert abs((x >= k).mean() - p) < 5 * math.sqrt(p * (1 - p) / x.size)


def test_basic_estimate_is_the_zero_cell_release():
    records, cells, memory = limits.basic_estimate(12, 1e-6)
    assert records == pytest.approx(4095 * 0.5e6, rel=1e-5)  # t/(1-t^2) ~ 1/(2 eps)
    assert limits.basic_estimate(17, 0.01)[0] == pytest.approx(131071 * math.exp(-0.01) / -math.expm1(-0.02))
    with limits.limits_set(max_output_records=10**10):
        limits.check_basic(12, 1e-6)  # raised limit: allowed
    with pytest.raises(limits.WorkLimitError, match=r"basic --epsilon 1e-06 over 12 items: about 2,047,5\d\d,\d\d\d"):
        limits.check_basic(12, 1e-6)
    limits.check_basic(17, 1.0)  # the MSNBC setting passes
    assert limits.basic_estimate(2000, 1.0)[0] == math.inf  # no overflow for absurd universes


def test_diffpart_estimate_matches_a_simulated_leaf_operation():
    """Expected empty cells passing one leaf-level operation: simulate DLap on 2^l - 1 zero cells."""
    eps, c1, n_items = 1.0, 1.5, 12
    _, cells, _, height1 = limits.diffpart_estimate(n_items, 12, eps, c1)
    assert height1 == 1
    noise = SeededNoise(3)
    sims = []
    for eps_op in (eps / 2, eps):
        k = max(1, math.ceil(math.sqrt(2) * c1 / eps_op - 1e-12))
        draws = noise.discrete_laplace(1 / eps_op, 4095 * 200).reshape(200, 4095)
        sims.append((draws >= k).sum(axis=1).mean())
    assert cells == pytest.approx(min(sims), rel=0.05)
    # the spurious bound caps it
    _, capped, _, _ = limits.diffpart_estimate(n_items, 12, eps, c1, spurious_bound=10)
    assert capped <= 10


def test_diffpart_fanout_bounds():
    limits.check_diffpart(17, 10, 1.0, 1.5)  # MSNBC defaults
    limits.check_diffpart(16470, 10, 1.0, 1.5)  # retail defaults
    limits.check_diffpart(12, 52, 1.0, 1.5)  # a large fan-out over a small universe is a 12-wide leaf level
    for f in (25, 32, 40, 52):
        with pytest.raises(limits.WorkLimitError, match=rf"--fanout {f} over 119 items"):
            limits.check_diffpart(119, f, 1.0, 1.5)
    limits.check_diffpart(119, 32, 1.0, 1.5, spurious_bound=10)  # bounded per operation: allowed


def test_work_meter_stops_diffpart_from_noisy_counts():
    from dprelease.setvalued import diffpart

    db, universe = read_transactions(REPO / "examples" / "baskets.dat", Universe.from_range(1, 12))
    with limits.limits_set(max_output_records=100):
        with pytest.raises(limits.WorkLimitError, match="the release grew past 100 records"):
            diffpart(db, universe, 1.0, noise=make_noise(1))
    with limits.limits_set(max_memory=1000):
        with pytest.raises(limits.WorkLimitError, match="over the limit of 1000 bytes"):
            diffpart(db, universe, 1.0, noise=make_noise(1))
    assert diffpart(db, universe, 1.0, noise=make_noise(1)).n_records > 100  # default limits: runs


def _brute_max_leaves(schema, h: int) -> int:
    """Largest product of cut sizes over every sequence of h specializations (exhaustive)."""
    def start():
        return tuple(("num", 1) if a.kind == "numeric" else ("cat", frozenset([0])) for a in schema.attributes)

    def moves(state):
        for j, (a, (kind, cut)) in enumerate(zip(schema.attributes, state)):
            if kind == "num":
                if not a.integer or cut < a.hi - a.lo:
                    yield state[:j] + (("num", cut + 1),) + state[j + 1:]
            else:
                for node in cut:
                    kids = a.taxonomy.children[node]
                    if kids:
                        yield state[:j] + (("cat", (cut - {node}) | frozenset(kids)),) + state[j + 1:]

    def size(state):
        return math.prod(cut if kind == "num" else len(cut) for kind, cut in state)

    frontier = {start()}
    best = size(start())
    for _ in range(h):
        frontier = {m for s in frontier for m in moves(s)}
        if not frontier:
            break
        best = max(size(s) for s in frontier)
    return best


@pytest.mark.parametrize("schema_file, hs", [("table1-schema.yaml", range(0, 6)), ("adult-schema.yaml", range(0, 4))])
def test_diffgen_max_leaves_is_exact(schema_file: str, hs):
    schema = load_schema(REPO / "examples" / schema_file)
    for h in hs:
        assert limits.diffgen_max_leaves(schema, h) == pytest.approx(_brute_max_leaves(schema, h)), h


def test_diffgen_bound_for_huge_h_is_immediate():
    """Past every possible specialization the table stops growing; a huge h costs no work to bound."""
    table1 = load_schema(REPO / "examples" / "table1-schema.yaml")
    assert limits.diffgen_max_leaves(table1, 10**9) == pytest.approx(4 * 47)  # 4 jobs x 47 ages
    adult = load_schema(REPO / "examples" / "adult-schema.yaml")
    assert limits.diffgen_max_leaves(adult, 10**12) == math.inf or limits.diffgen_max_leaves(adult, 10**12) > 1e30
    assert limits.diffgen_max_leaves(adult, 3000) >= limits.diffgen_max_leaves(adult, 2000)


def test_diffgen_bounds_on_adult():
    schema = load_schema(REPO / "examples" / "adult-schema.yaml")
    for h in (10, 16):  # the paper's Figure 3 range passes
        limits.check_diffgen(schema, h)
    for h in (30, 1000):
        with pytest.raises(limits.WorkLimitError, match=rf"diffgen -H {h}: about"):
            limits.check_diffgen(schema, h)


def test_universe_size_is_bounded_before_allocation():
    with pytest.raises(limits.WorkLimitError, match=r"--universe 1\.\.1000000000: about 112 GiB"):
        Universe.from_range(1, 10**9, "1..1000000000")
    with limits.limits_set(max_memory=10**6):
        with pytest.raises(limits.WorkLimitError):
            Universe.from_range(1, 10**5)
    assert Universe.from_range(1, 10**5).size == 10**5


def test_limits_are_scoped():
    base = limits.current()
    with limits.limits_set(max_output_records=5, max_memory=7) as inner:
        assert limits.current() == inner and inner.max_output_records == 5 and inner.max_memory == 7
    assert limits.current() == base and base.max_output_records == limits.DEFAULT_MAX_OUTPUT_RECORDS
