"""dprelease.limits: work bounds from public quantities.

The estimates are checked against exact enumeration (DiffGen's largest table) and seeded Monte Carlo
(discrete Laplace tails; tolerance 5 standard errors, false-failure rate below 1e-6). The CLI cases
themselves (exit 2, one line, nothing allocated or written) are in tests/commands/test_bad_input.py.
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


# --- size parameters bounded before the data is read; messages name only the command's options ------------

SMALL = "1 2 3\n2 3\n1 4\n3 4 5\n1 2\n2 5 6\n7 8\n9 10 11 12\n" * 250  # 2,000 records


def _cli(capsys, *argv) -> tuple[int, str]:
    from dprelease.cli import main

    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err


@pytest.fixture
def lw(tmp_path):
    (tmp_path / "small.dat").write_text(SMALL)
    return tmp_path


@pytest.fixture
def no_reading(monkeypatch):
    """Any attempt to read a transaction file fails the test: the refusal must come first."""
    import dprelease.data.io as io

    def refuse(*_a, **_k):
        raise AssertionError("the data was read before the work bound was checked")

    monkeypatch.setattr(io, "read_transactions", refuse)
    monkeypatch.setattr(io, "read_fimi", refuse)


def test_privbasis_huge_k_is_refused_before_reading(lw, capsys, no_reading):
    """Before: no bound on k; -k 100000000 on 2,000 records grew to 23 GB until the kernel killed it."""
    import time

    start = time.perf_counter()
    code, err = _cli(capsys, "privbasis", lw / "small.dat", "--universe", "1..12", "-k", "100000000", "-e", "1",
                     "-o", lw / "o.csv")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "privbasis -k 100000000: about 100,000,000 output records expected" in err
    assert "--max-output-records" in err and not (lw / "o.csv").exists()
    assert time.perf_counter() - start < 30  # a bound, not a benchmark: it used to run for minutes
    code, err = _cli(capsys, "privbasis", lw / "small.dat", "--universe", "1..12", "-k", "100000000", "-e", "1",
                     "-o", lw / "o.csv", "--max-output-records", "1000000000")
    assert code == 2 and "about 168 GiB of memory needed" in err and "--max-memory" in err


LIMIT_CASES = {  # command -> an argv refused by a work bound (public inputs only; {w} is a folder with small.dat)
    "privbasis": ["privbasis", "{w}/small.dat", "--universe", "1..12", "-k", "100000000", "-e", "1", "-o", "{w}/o"],
    "tf": ["tf", "{w}/small.dat", "--universe", "1..12", "-k", "100000000", "-m", "2", "-e", "1", "-o", "{w}/o"],
    "tf-m": ["tf", "{w}/small.dat", "--universe", "1..1000", "-k", "10", "-m", "4", "-e", "1", "-o", "{w}/o"],
    "stats-k": ["stats", "{w}/small.dat", "--universe", "1..12", "-k", "100000000"],
    "stats-universe": ["stats", "{w}/small.dat", "--universe", "1..1000000000"],
    "evaluate-counting": ["evaluate", "counting", "{w}/small.dat", "{w}/r.dat", "--universe", "1..12", "--queries",
                          "100000000"],
    "evaluate-topk": ["evaluate", "topk", "{w}/small.dat", "{w}/r.dat", "--universe", "1..12", "-k", "100000000"],
    "evaluate-itemsets": ["evaluate", "itemsets", "{w}/small.dat", "{w}/r.csv", "--universe", "1..12", "-k",
                          "100000000"],
    "experiment-diffpart-runs": ["experiment", "diffpart", "--dataset", "{w}/small.dat", "--universe", "1..12",
                                 "--out", "{w}/exp", "--runs", "1000000000"],
    "experiment-diffpart-queries": ["experiment", "diffpart", "--dataset", "{w}/small.dat", "--universe", "1..12",
                                    "--out", "{w}/exp", "--queries", "100000000"],
    "experiment-privbasis-runs": ["experiment", "privbasis", "--datasets", "{w}", "--out", "{w}/exp", "--runs",
                                  "1000000000"],
    "experiment-diffgen-runs": ["experiment", "diffgen-classification", "--data", "{w}/small.dat", "--schema",
                                str(REPO / "examples" / "table1-schema.yaml"), "-e", "1", "-H", "2", "--runs",
                                "1000000000"],
    "experiment-rps-classification-runs": ["experiment", "rps-classification", "--data", "{w}/small.dat", "--schema",
                                           str(REPO / "examples" / "table1-schema.yaml"), "-e", "1", "-H", "2",
                                           "--runs", "1000000000"],
    "evaluate-ranges": ["evaluate", "ranges", "{w}/small.dat", "{w}/r.csv", "--schema",
                        str(REPO / "examples" / "table1-schema.yaml"), "--queries", "100000000"],
    "basic": ["basic", "{w}/small.dat", "--universe", "1..12", "-e", "1e-6", "-o", "{w}/o"],
    "diffpart-fanout": ["diffpart", "{w}/small.dat", "--universe", "1..119", "-e", "1", "-o", "{w}/o", "--fanout",
                        "40"],
    "stream-init-fanout": ["stream", "init", "{w}/s.db", "-e", "1", "-U", "2", "--universe", "1..119", "--fanout",
                           "40"],
    "diffgen": ["diffgen", "{w}/small.dat", "--schema", str(REPO / "examples" / "adult-schema.yaml"), "-e", "1",
                "-H", "30", "-o", "{w}/o"],
    "generate": ["generate", "{w}/g.dat", "--records", "1000000000000"],
}


@pytest.mark.parametrize("name", sorted(LIMIT_CASES))
def test_a_limit_message_names_only_options_the_command_has(name, lw, capsys, no_reading):
    """Before: privbasis pointed to --max-memory, which it did not have, and `stream init --fanout 40` to
    --spurious-bound, which it does not have. Each case is refused before any data is read."""
    import re

    from dprelease.cli import build_parser, command_options

    argv = [a.replace("{w}", str(lw)) for a in LIMIT_CASES[name]]
    code, err = _cli(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert re.search(r"over the limit of|infeasible beyond", lines[0]), lines[0]
    parser = build_parser()
    args = parser.parse_args(argv)
    named = set(re.findall(r"(?<![\w-])--?[a-zA-Z][a-z-]*(?![\w-])", lines[0]))  # --max-memory, -m
    assert named, lines[0]
    assert named <= command_options(parser, args), (named - command_options(parser, args), lines[0])


def test_limit_messages_follow_the_running_commands_options():
    with limits.limits_set(options={"--fanout", "--max-memory"}):
        assert limits.fixes(("lower --fanout", "--fanout"), ("set --spurious-bound", "--spurious-bound"),
                            ("raise --max-output-records", "--max-output-records")) == "lower --fanout"
        with pytest.raises(limits.WorkLimitError) as exc:
            limits.check_diffpart(119, 40, 1.0, 1.5, what="stream init")
        assert "lower --fanout" in str(exc.value) and "--spurious-bound" not in str(exc.value)
        assert "--max-output-records" not in str(exc.value)
    with pytest.raises(limits.WorkLimitError, match="lower --fanout or set --spurious-bound.*--max-output-records"):
        limits.check_diffpart(119, 40, 1.0, 1.5)  # the API: every remedy is named


def test_out_of_memory_names_max_memory_only_where_it_exists(lw, capsys, monkeypatch):
    import dprelease.commands.common as common

    def boom(_args):
        raise MemoryError

    monkeypatch.setattr(common, "run_charged", boom)
    code, err = _cli(capsys, "stream", "status", lw / "s.db")
    assert code == 2 and "out of memory" in err and "--max-memory" not in err
    code, err = _cli(capsys, "diffpart", lw / "small.dat", "--universe", "1..12", "-e", "1", "-o", lw / "o")
    assert code == 2 and "--max-memory bounds what dprelease attempts" in err


def test_topk_estimate():
    assert limits.topk_estimate(100, eta=1.2) == 120 * limits.TOPK_BYTES_PER_ITEMSET
    limits.check_topk("privbasis -k 200", 200, eta=1.2)  # the paper's settings pass
    limits.check_topk("evaluate topk -k 100000", 100_000, released=False)
    with pytest.raises(limits.WorkLimitError, match=r"about 10,000,000 output records"):
        limits.check_topk("tf -k 10000000", 10_000_000)
    with pytest.raises(limits.WorkLimitError, match=r"GiB of memory"):
        limits.check_topk("stats -k 10000000", 10_000_000, released=False)


def test_range_rules_are_quiet_at_the_defaults():
    assert limits.diffpart_range_notes(119, 10, 1.0, 1.5, 1.5) == []
    assert limits.diffpart_range_notes(12, 52, 1.0, 1.5, 1.5) == []  # a 12-wide leaf level: 4x the default's
    assert len(limits.diffpart_range_notes(119, 20, 1.0, 1.5, 1.5)) == 1
    assert limits.prefix_range_notes(0.15, 0.5, 0.15, 0.5) == []
    assert limits.prefix_range_notes(0.5, 0.6, 0.15, 0.5) == []  # refused by the method itself, not warned
    assert limits.privbasis_range_notes(200, 17) == [] and limits.privbasis_range_notes(200, None) == []
    adult = load_schema(REPO / "examples" / "adult-schema.yaml")
    assert limits.diffgen_range_notes(adult, 16) == []
