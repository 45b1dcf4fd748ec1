"""Benchmark (not a test): the defaults on data nobody tuned them on, every figure beside data-independent baselines.

Runs every target of "defaults that hold up on unseen data" through the CLI (``dprelease.cli.main`` in this
process; releases in seeded experiment mode, ``--seed 1..S``) on the shared datasets and on generated ones
(``dprelease.data.generators``: docs/unseen.md), and prints one markdown table per target with the mean over
the seeds. Baselines are computed here with the functions the ``evaluate`` commands call (same workloads).

Targets (``--targets``, comma-separated; default all):

* ``setvalued``: ``diffpart`` (default DiffPart-Prefix and ``--method faithful``) at epsilon 0.5 and 1 on retail,
  MSNBC, mushroom, dense-ties and long-baskets. Per release: mean record length of the release (non-empty
  lines) against the raw mean; the total variation distance TV = 1/2 sum_l |P_raw(l) - P_rel(l)| of the record
  length distributions (an empty release counts as all its mass at length 0, TV = 1); top-100 utility
  (``evaluate topk -k 100``); counting error (``evaluate counting``, its default workload of 50,000 random
  queries, seed 0) and its frequent-itemset workload's error (itemsets of 1-4 items above 1 % of N, with the
  command's own empty and uniform-baskets baselines on it). Baselines: an empty release, and *uniform baskets*:
  N records whose lengths are drawn from
  the raw length distribution (the public size distribution the baseline is granted) with items drawn
  uniformly without repetition from the declared universe.
* ``stream``: ``stream init`` with its defaults (epsilon 1, ``--updates 4``), then 5 appends of the dataset's
  five consecutive fifths. Per append: whether the release holds any record, and its top-100 utility against
  the records appended so far. Baselines: empty (utility 0) and uniform baskets of the whole data.
* ``privbasis``: the default PrivBasis, k = 100, epsilon 1, on retail, MSNBC, mushroom, dense-ties and
  long-baskets: FNR and tie-aware recall (``evaluate itemsets -k 100``, ``--tolerance auto``). Tie-aware
  recall at tau: with c_k the exact support of the k-th most frequent itemset, a published itemset counts as
  correct when its exact support is >= max(1, c_k - tau); recall = min(k, number of distinct correct published
  itemsets) / k. tau is the k-th count's noise sd: ``count_noise_sd_at_k`` of the release's manifest, the
  standard deviation of the noise on the k-th published count (Eq. 4 of the paper times the discrete-Laplace
  variance of the BasisFreq counts), so it differs between runs. Baseline: k distinct itemsets drawn
  uniformly at random among the universe's singletons (and pairs, if |I| < k), scored with the same tau.
  Time: in this process, best of ``--repeat``, seeded noise, as benchmarks/bench_privbasis.py does:
  (read the file + PrivBasis) / (read the file + np.bincount of the items), the ratio the 2.5x target is
  about; beside it the CLI end to end (fresh processes) against a plain Python pass that reads the file and
  counts items (benchmarks/_harness.py), on retail, dense-ties, long-baskets and, unless ``--quick`` or
  ``--no-1m``, a generated 1,000,000 x 41,270 kosarak-like file (``dprelease generate``).
* ``degrees``: ``degrees`` (default: ``recommended``), ``--method rps``, ``hay`` and ``cumulative``, epsilon 1, theta 32, 64, 128 on
  ca-GrQc, ca-HepTh, facebook, hub and near-regular: KS, L1, EMD (``evaluate degrees``) and released node count
  against the true one (the ids of the edge file). Baseline: the true number of nodes with degrees uniform
  on 1..theta.
* ``tables``: ``rps`` with its defaults at epsilon 0.1 and 1 on Adult (examples/adult-schema.yaml), clinic
  (95/5 class) and trips (no class attribute): range-count error (``evaluate ranges``, 10,000 queries, seed 0).
  Baseline: the uniform table over the schema's domain (one row per class value, every attribute at its
  taxonomy root or whole bounds, weight N / #classes), read and scored by the code ``evaluate ranges`` uses.
  A refusal (RPS and ``evaluate ranges`` need a class attribute today) is reported with its message.

Datasets missing from ../shared/datasets are skipped with a message; generated ones are written once into
``--work`` (default /tmp/dprelease-bench-unseen) and reused.

    nice .venv/bin/python benchmarks/bench_unseen.py [--targets setvalued,stream,privbasis,degrees,tables]
        [--datasets retail,dense-ties,...] [--seeds 3] [--quick] [--json PATH] [--work DIR] [--no-1m] [--repeat 3]
    .venv/bin/python benchmarks/bench_unseen.py --render PATH     # the tables of a saved --json run, nothing run

``--quick``: one seed, 5,000 counting and 2,000 range queries, epsilon 1 and theta 64 only, no 1M file, one
timing repeat: a smoke run (its figures are noisier and not comparable with a full run's).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import statistics
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from _harness import dprelease_cmd, measure, plain_pass  # noqa: E402

from dprelease.cli import main as cli_main  # noqa: E402
from dprelease.data import generators as G  # noqa: E402
from dprelease.data.io import atomic_output, read_transactions  # noqa: E402
from dprelease.data.transactions import TransactionDB  # noqa: E402
from dprelease.data.universe import Universe  # noqa: E402

DATASETS = (REPO / ".." / "shared" / "datasets").resolve()
TARGETS = ("setvalued", "stream", "privbasis", "degrees", "tables")
K = 100


# -- datasets ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Txn:
    name: str
    lo: int
    hi: int
    shared: str | None = None  # path under ../shared/datasets
    shape: str | None = None  # dprelease generate --shape
    records: int | None = None

    @property
    def universe(self) -> str:
        return f"{self.lo}..{self.hi}"


TXN = [
    Txn("retail", 0, 16469, shared="retail/retail.dat"),
    Txn("msnbc", 1, 17, shared="msnbc/msnbc.dat"),
    Txn("mushroom", 1, 119, shared="mushroom/mushroom.dat"),
    Txn("dense-ties", 1, 120, shape="dense-ties"),
    Txn("long-baskets", 1, 5000, shape="long-baskets"),
]
KOSARAK_1M = Txn("kosarak-1M", 1, 41270, shape="kosarak", records=1_000_000)
GRAPHS = {"ca-GrQc": "graphs/ca-grqc.txt", "ca-HepTh": "graphs/ca-hepth.txt", "facebook": "graphs/facebook.txt",
          "hub": None, "near-regular": None}
TABLES = {"adult": "adult", "clinic": None, "trips": None}


class Skip(Exception):
    """A dataset that is not here (the message says which file)."""


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.seeds = list(range(1, args.seeds + 1))
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.notes: list[str] = []
        self._dbs: dict[str, TransactionDB] = {}

    # ---- the CLI, in this process ----
    def cli(self, *argv: object) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli_main([str(a) for a in argv])
            except SystemExit as exc:
                rc = int(exc.code) if isinstance(exc.code, int) else 2
            except Exception:  # a defect: keep going, report it
                rc = -1
                err.write(traceback.format_exc(limit=2))
        return rc, out.getvalue(), err.getvalue()

    def cli_json(self, *argv: object) -> dict[str, Any]:
        rc, out, err = self.cli(*argv)
        if rc != 0:
            raise RuntimeError(_first_error(err) or f"exit {rc}")
        return json.loads(out.strip().splitlines()[-1])

    def wanted(self, name: str) -> bool:
        return not self.args.datasets or name in self.args.datasets

    def skip(self, target: str, name: str, why: str) -> None:
        msg = f"{target}: skipped {name}: {why}"
        print(msg, file=sys.stderr)
        self.notes.append(msg)

    # ---- data ----
    def txn_path(self, d: Txn) -> Path:
        if d.shared:
            p = DATASETS / d.shared
            if not p.exists():
                raise Skip(f"{p} not found (the shared datasets are absent)")
            return p
        p = self.work / f"{d.name}-seed0.dat"
        if not p.exists():
            with atomic_output(p, "wb") as fh:
                G.write_transaction_shape(fh, str(d.shape), d.records, seed=0)
        return p

    def txn_db(self, d: Txn) -> TransactionDB:
        if d.name not in self._dbs:
            self._dbs[d.name] = read_transactions(self.txn_path(d), Universe.from_range(d.lo, d.hi))[0]
        return self._dbs[d.name]

    def graph_path(self, name: str) -> Path:
        rel = GRAPHS[name]
        if rel:
            p = DATASETS / rel
            if not p.exists():
                raise Skip(f"{p} not found (the shared datasets are absent)")
            return p
        p = self.work / f"{name}-seed0.txt"
        if not p.exists():
            g = G.hub_graph(seed=0) if name == "hub" else G.near_regular_graph(seed=0)
            G.write_edge_list(g, p)
        return p

    def table_paths(self, name: str) -> tuple[Path, Path]:
        if name == "adult":
            p = DATASETS / "adult"
            if not (p / "adult.data").exists():
                raise Skip(f"{p}/adult.data not found (the shared datasets are absent)")
            return p, REPO / "examples" / "adult-schema.yaml"
        csv, schema = self.work / f"{name}-seed0.csv", self.work / f"{name}-seed0-schema.yaml"
        if not csv.exists() or not schema.exists():
            frame, spec = G.skewed_label_table(seed=0) if name == "clinic" else G.unlabelled_table(seed=0)
            call = "skewed_label_table(seed=0)" if name == "clinic" else "unlabelled_table(seed=0)"
            G.write_table_with_schema(frame, spec, csv, schema, about=f"generated: dprelease.data.generators.{call}")
        return csv, schema

    # ---- targets ----
    def run_setvalued(self) -> None:
        rows = self.results.setdefault("setvalued", [])
        eps_list = (1.0,) if self.args.quick else (0.5, 1.0)
        q = self.args.queries
        from dprelease.evaluation import evaluate_counting, topk_utility

        for d in TXN:
            if not self.wanted(d.name):
                continue
            try:
                raw_path = self.txn_path(d)
            except Skip as exc:
                self.skip("setvalued", d.name, str(exc))
                continue
            raw = self.txn_db(d)
            raw_hist = _length_hist(raw.lengths)
            base = {"empty": [], "uniform": []}
            for seed in self.seeds:
                empty = TransactionDB.from_lists([], raw.n_items)
                uni = uniform_baskets(raw, seed)
                for name, db in (("empty", empty), ("uniform", uni)):
                    base[name].append({
                        "mean_length": float(db.lengths.mean()) if db.n_records else 0.0,
                        "tv_length": _tv(raw_hist, _length_hist(db.lengths)),
                        "top100": float(topk_utility(raw, db, K)),
                        "counting_error": float(evaluate_counting(raw, db, n_queries=q, seed=0)["mean_relative_error"]),
                    })
            frequent_base: dict[str, list[float]] = {"empty": [], "uniform": []}
            for method in ("prefix", "faithful"):
                for eps in eps_list:
                    runs = []
                    for seed in self.seeds:
                        out = self.work / f"sv-{d.name}-{method}-{eps}-{seed}.dat"
                        t0 = time.perf_counter()
                        rc, _, err = self.cli("diffpart", raw_path, "--universe", d.universe, "--epsilon", eps,
                                              "--method", method, "--seed", seed, "-o", out, "--force", "-q")
                        secs = time.perf_counter() - t0
                        if rc != 0:
                            runs.append({"error": _first_error(err)})
                            continue
                        lengths = _release_lengths(out)
                        topk = self.cli_json("evaluate", "topk", raw_path, out, "--universe", d.universe,
                                             "-k", K, "--json", "-q")
                        cnt = self.cli_json("evaluate", "counting", raw_path, out, "--universe", d.universe,
                                            "--queries", q, "--json", "-q")
                        runs.append({"seed": seed, "seconds": secs, "records": int(lengths.size),
                                     "mean_length": float(lengths.mean()) if lengths.size else None,
                                     "tv_length": _tv(raw_hist, _length_hist(lengths)),
                                     "top100": float(topk["utility"]),
                                     "counting_error": float(cnt["mean_relative_error"]),
                                     "frequent_error": float(cnt["frequent"]["mean_relative_error"])})
                        for b in frequent_base:  # the command's own baselines on the same frequent itemsets
                            frequent_base[b].append(float(cnt["baselines"][b]["frequent"]["mean_relative_error"]))
                    baselines = {k: _means(v) for k, v in base.items()}
                    for b, values in frequent_base.items():
                        if values:
                            baselines[b]["frequent_error"] = float(np.mean(values))
                    rows.append({"dataset": d.name, "method": method, "epsilon": eps, "raw_n": raw.n_records,
                                 "raw_mean_length": float(raw.lengths.mean()), "runs": runs,
                                 "mean": _means(runs), "baselines": baselines})
                    _progress(rows[-1])

    def run_stream(self) -> None:
        rows = self.results.setdefault("stream", [])
        from dprelease.evaluation import topk_utility

        for d in TXN:
            if not self.wanted(d.name):
                continue
            try:
                raw_path = self.txn_path(d)
            except Skip as exc:
                self.skip("stream", d.name, str(exc))
                continue
            raw = self.txn_db(d)
            batches, prefixes = self._stream_files(d, raw_path)
            uni = statistics.fmean(topk_utility(raw, uniform_baskets(raw, s), K) for s in self.seeds)
            runs = []
            for seed in self.seeds:
                state = self.work / f"st-{d.name}-{seed}.db"
                for p in (state, *state.parent.glob(state.name + "*")):
                    p.unlink(missing_ok=True)
                rc, _, err = self.cli("stream", "init", state, "--epsilon", 1, "--updates", 4,
                                      "--universe", d.universe, "--seed", seed, "-q")
                if rc != 0:
                    runs.append({"error": _first_error(err)})
                    continue
                released, utils = [], []
                for i, (batch, prefix) in enumerate(zip(batches, prefixes)):
                    out = self.work / f"st-{d.name}-{seed}-rel.dat"
                    rc, _, err = self.cli("stream", "append", state, batch, "-o", out, "--force", "-q")
                    if rc != 0:
                        released.append(False)
                        utils.append(float("nan"))
                        self.notes.append(f"stream {d.name} seed {seed} append {i + 1}: {_first_error(err)}")
                        continue
                    n_rel = _release_lengths(out).size
                    released.append(n_rel > 0)
                    utils.append(float(self.cli_json("evaluate", "topk", prefix, out, "--universe", d.universe,
                                                     "-k", K, "--json", "-q")["utility"]))
                runs.append({"seed": seed, "appends_released": int(sum(released)), "top100_by_append": utils,
                             "top100_last": utils[-1], "top100_mean": float(np.nanmean(utils))})
            rows.append({"dataset": d.name, "runs": runs, "mean": _means(runs),
                         "top100_by_append": [float(np.nanmean([r["top100_by_append"][i] for r in runs
                                                                if "error" not in r] or [np.nan]))
                                              for i in range(5)],
                         "baselines": {"empty": {"top100": 0.0}, "uniform": {"top100": float(uni)}}})
            _progress(rows[-1])

    def _stream_files(self, d: Txn, raw_path: Path) -> tuple[list[Path], list[Path]]:
        """The five consecutive fifths of the file (batches) and the first 1..5 fifths (what the stream holds)."""
        lines = [ln for ln in raw_path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        cuts = np.linspace(0, len(lines), 6).round().astype(int)
        batches, prefixes = [], []
        for i in range(5):
            b, p = self.work / f"st-{d.name}-batch{i + 1}.dat", self.work / f"st-{d.name}-first{i + 1}.dat"
            if not b.exists():
                b.write_text("\n".join(lines[cuts[i]:cuts[i + 1]]) + "\n")
            if not p.exists():
                p.write_text("\n".join(lines[: cuts[i + 1]]) + "\n")
            batches.append(b)
            prefixes.append(p)
        return batches, prefixes

    def run_privbasis(self) -> None:
        rows = self.results.setdefault("privbasis", [])
        from dprelease.evaluation.itemsets import itemset_metrics
        from dprelease.itemsets.exact import top_k_itemsets

        for d in TXN:
            if not self.wanted(d.name):
                continue
            try:
                raw_path = self.txn_path(d)
            except Skip as exc:
                self.skip("privbasis", d.name, str(exc))
                continue
            raw = self.txn_db(d)
            true_top = top_k_itemsets(raw, K)
            runs, base = [], []
            for seed in self.seeds:
                out = self.work / f"pb-{d.name}-{seed}.csv"
                rc, _, err = self.cli("privbasis", raw_path, "-k", K, "--epsilon", 1, "--universe", d.universe,
                                      "--seed", seed, "-o", out, "--force", "-q")
                if rc != 0:
                    runs.append({"error": _first_error(err)})
                    continue
                m = self.cli_json("evaluate", "itemsets", raw_path, out, "-k", K, "--universe", d.universe,
                                  "--json", "-q")
                runs.append({"seed": seed, "fnr": m["fnr"], "tie_aware_recall": m["tie_aware_recall"],
                             "tau": m["tolerance"], "published": m["published"]})
                picks = random_itemsets(raw.n_items, K, seed)
                b = itemset_metrics(raw, picks, np.zeros(len(picks)), K, true_top, tolerance=float(m["tolerance"]))
                base.append({"fnr": b["fnr"], "tie_aware_recall": b["tie_aware_recall"]})
            s = np.array([c for _, c in true_top])
            rows.append({"dataset": d.name, "N": raw.n_records, "c_1": int(s[0]), "c_k": int(s[-1]),
                         "median_gap": float(np.median(-np.diff(s))), "runs": runs, "mean": _means(runs),
                         "baselines": {"random": _means(base)}})
            _progress(rows[-1])
        self._privbasis_time()

    def _privbasis_time(self) -> None:
        rows = self.results.setdefault("privbasis_time", [])
        sets = [d for d in TXN if d.name in ("retail", "dense-ties", "long-baskets")]
        if not (self.args.quick or self.args.no_1m):
            sets.append(KOSARAK_1M)
        for d in sets:
            if not self.wanted(d.name):
                continue
            try:
                path = self.txn_path(d)
            except Skip as exc:
                self.skip("privbasis time", d.name, str(exc))
                continue
            rep = self.args.repeat
            n, read_s, count_s, pb_s = _time_privbasis(path, Universe.from_range(d.lo, d.hi), rep)
            out = self.work / f"pbt-{d.name}.csv"
            cli_s = min(measure([*dprelease_cmd(), "privbasis", str(path), "-k", str(K), "--epsilon", "1",
                                 "--universe", d.universe, "--seed", "1", "-o", str(out), "--force", "-q"])["seconds"]
                        for _ in range(rep))
            plain_s = min(plain_pass(path)["seconds"] for _ in range(rep))
            rows.append({"dataset": d.name, "N": n, "read_s": read_s, "count_s": count_s,
                         "privbasis_s": pb_s, "ratio": (read_s + pb_s) / (read_s + count_s),
                         "cli_s": cli_s, "plain_pass_s": plain_s, "cli_ratio": cli_s / plain_s})
            _progress(rows[-1])

    def run_degrees(self) -> None:
        rows = self.results.setdefault("degrees", [])
        from dprelease.data.graphs import read_edge_list
        from dprelease.evaluation.degrees import degree_metrics

        thetas = (64,) if self.args.quick else (32, 64, 128)
        for name in GRAPHS:
            if not self.wanted(name):
                continue
            try:
                path = self.graph_path(name)
            except Skip as exc:
                self.skip("degrees", name, str(exc))
                continue
            true = read_edge_list(path).degrees()
            for theta in thetas:
                base = []
                for seed in self.seeds:
                    rng = np.random.default_rng([seed, theta])
                    base.append(degree_metrics(true, rng.integers(1, theta + 1, true.size)))
                for method in ("recommended", "rps", "hay", "cumulative"):
                    runs = []
                    for seed in self.seeds:
                        out = self.work / f"deg-{name}-{method}-{theta}-{seed}.txt"
                        rc, _, err = self.cli("degrees", path, "--epsilon", 1, "--theta", theta, "--method", method,
                                              "--seed", seed, "-o", out, "--force", "-q")
                        if rc != 0:
                            runs.append({"error": _first_error(err)})
                            continue
                        m = self.cli_json("evaluate", "degrees", path, out, "--json", "-q")
                        nodes = sum(1 for ln in out.read_text().splitlines() if ln.strip())
                        runs.append({"seed": seed, **{k: float(m[k]) for k in ("ks", "l1", "emd")},
                                     "nodes": nodes, "nodes_ratio": nodes / true.size})
                    rows.append({"graph": name, "theta": theta, "method": method, "true_nodes": int(true.size),
                                 "true_max_degree": int(true.max()), "runs": runs, "mean": _means(runs),
                                 "baselines": {"uniform": _means(base)}})
                    _progress(rows[-1])

    def run_tables(self) -> None:
        rows = self.results.setdefault("tables", [])
        eps_list = (1.0,) if self.args.quick else (0.1, 1.0)
        for name in TABLES:
            if not self.wanted(name):
                continue
            try:
                raw, schema = self.table_paths(name)
            except Skip as exc:
                self.skip("tables", name, str(exc))
                continue
            try:
                uniform = uniform_table_error(raw, schema, self.work / f"uniform-{name}.csv", self.args.range_queries)
            except Exception as exc:  # the schema is refused (no class attribute): report it
                uniform = {"error": _first_error(str(exc))}
            for eps in eps_list:
                runs = []
                for seed in self.seeds:
                    out = self.work / f"rps-{name}-{eps}-{seed}.csv"
                    rc, _, err = self.cli("rps", raw, "--schema", schema, "--epsilon", eps, "--seed", seed,
                                          "-o", out, "--force", "-q")
                    if rc != 0:
                        runs.append({"error": _first_error(err)})
                        continue
                    m = self.cli_json("evaluate", "ranges", raw, out, "--schema", schema,
                                      "--queries", self.args.range_queries, "--json", "-q")
                    runs.append({"seed": seed, "range_error": float(m["mean_relative_error"])})
                rows.append({"table": name, "epsilon": eps, "runs": runs, "mean": _means(runs),
                             "baselines": {"uniform": uniform}})
                _progress(rows[-1])


# -- baselines --------------------------------------------------------------------------------------------------

def uniform_baskets(raw: TransactionDB, seed: int) -> TransactionDB:
    """N records, lengths drawn from the raw length distribution, items uniform without repetition over the
    universe (a record longer than |I| holds all of it)."""
    rng = np.random.default_rng([seed, 7])
    n, n_items = raw.n_records, raw.n_items
    lengths = np.minimum(rng.choice(raw.lengths, size=n, replace=True), n_items).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    # draw with repetition, then top up the records that lost items to duplicates until each has its length
    items = rng.integers(0, n_items, rows.size)
    db = TransactionDB.from_pairs(rows, items, n, n_items)
    for _ in range(50):
        short = np.flatnonzero(db.lengths < lengths)
        if short.size == 0:
            break
        need = (lengths - db.lengths)[short]
        extra_rows = np.repeat(short, need)
        pairs_r = np.concatenate([np.repeat(np.arange(n), db.lengths), extra_rows])
        pairs_i = np.concatenate([db.items, rng.integers(0, n_items, extra_rows.size)])
        db = TransactionDB.from_pairs(pairs_r, pairs_i, n, n_items)
    return db


def random_itemsets(n_items: int, k: int, seed: int) -> list[tuple[int, ...]]:
    """k distinct itemsets drawn uniformly among the singletons, then (if |I| < k) the pairs."""
    rng = np.random.default_rng([seed, 11])
    if n_items >= k:
        return [(int(i),) for i in np.sort(rng.choice(n_items, k, replace=False))]
    pairs = [(a, b) for a in range(n_items) for b in range(a + 1, n_items)]
    pick = rng.choice(len(pairs), min(k - n_items, len(pairs)), replace=False)
    return [(i,) for i in range(n_items)] + [pairs[j] for j in sorted(pick.tolist())]


def uniform_table_error(raw: Path, schema_path: Path, out: Path, queries: int) -> dict[str, float]:
    """Range-count error of the uniform table over the schema's domain on ``evaluate ranges``' workload: the
    library's baseline (``evaluation.ranges.range_baselines``, which ``evaluate ranges`` prints beside a release).
    ``out`` is unused (kept for the call site): nothing is written."""
    from dprelease.data.table import load_schema, read_table
    from dprelease.evaluation.ranges import make_range_workload, range_baselines, table_data
    from dprelease.relational.rps import table_domain

    schema = load_schema(schema_path, require_class=False)  # a class attribute is optional for a table release
    table = table_data(read_table(raw, schema))
    domain = table_domain(schema)
    workload = make_range_workload(domain, queries, seed=0)
    return {"range_error": float(range_baselines(table, domain, workload)["uniform"]["mean_relative_error"])}


# -- helpers ----------------------------------------------------------------------------------------------------

def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower() or "refus" in ln.lower():
            return ln[:300]
    return (lines[-1] if lines else "")[:300]


def _release_lengths(path: Path) -> np.ndarray:
    """Record lengths of a set-valued release as the readers see it (blank and # lines are not records)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            s = line.strip()
            if s and not s.startswith("#"):
                out.append(len(s.split()))
    return np.asarray(out, dtype=np.int64)


def _length_hist(lengths: np.ndarray) -> np.ndarray:
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size == 0:
        return np.array([1.0])  # an empty release: all its mass at length 0
    return np.bincount(lengths) / lengths.size


def _tv(p: np.ndarray, q: np.ndarray) -> float:
    m = max(p.size, q.size)
    return 0.5 * float(np.abs(np.pad(p, (0, m - p.size)) - np.pad(q, (0, m - q.size))).sum())


def _means(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over the runs that did not fail; a value that is None in a run (the mean record length of an empty
    release) is left out of its mean, and ``n_<key>`` says over how many runs each mean is."""
    ok = [r for r in runs if "error" not in r]
    out: dict[str, Any] = {"n": len(ok)}
    if len(ok) < len(runs):
        out["errors"] = sorted({r["error"] for r in runs if "error" in r})
    for key in (ok[0] if ok else {}):
        vals = [r.get(key) for r in ok]
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if key == "seed" or len(nums) + vals.count(None) < len(vals):
            continue
        out[key] = statistics.fmean(nums) if nums else None
        if vals.count(None):
            out[f"n_{key}"] = len(nums)
    return out


def _time_privbasis(path: Path, universe: Universe, repeat: int) -> tuple[int, float, float, float]:
    """N and the best-of-``repeat`` seconds of reading the file, counting its items and running PrivBasis."""
    from dprelease.itemsets.privbasis import privbasis
    from dprelease.privacy import make_noise

    read_s, db = _best(lambda: read_transactions(path, universe)[0], repeat)
    count_s, _ = _best(lambda: np.bincount(db.items, minlength=db.n_items), repeat)
    pb_s, _ = _best(lambda: privbasis(db, universe, K, 1.0, noise=make_noise(1)), repeat)
    return db.n_records, read_s, count_s, pb_s


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, value = math.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def _progress(row: dict[str, Any]) -> None:
    label = " ".join(f"{k}={row[k]}" for k in ("dataset", "graph", "table", "method", "epsilon", "theta") if k in row)
    print(f"  done: {label}", file=sys.stderr, flush=True)


def _f(x: Any, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def _err(mean: dict[str, Any]) -> str | None:
    if mean.get("n", 0) == 0:
        return "refused: " + "; ".join(mean.get("errors", ["no run"]))
    return None


# -- tables -----------------------------------------------------------------------------------------------------

def render(results: dict[str, list[dict[str, Any]]], seeds: int) -> str:
    out: list[str] = []
    if results.get("setvalued"):
        out += [f"### Set-valued releases (`diffpart`; mean of {seeds} seeds; counting workload of `evaluate counting`)",
                "",
                "| dataset | method | ε | mean len raw / rel / unif | TV len rel / empty / unif | top-100 rel / empty / unif "
                "| counting err rel / empty / unif | frequent-itemset err rel / empty / unif |",
                "|---|---|---|---|---|---|---|---|"]
        for r in results["setvalued"]:
            m, e, u = _means(r["runs"]), r["baselines"]["empty"], r["baselines"]["uniform"]
            bad = _err(m)
            if bad:
                out.append(f"| {r['dataset']} | {r['method']} | {r['epsilon']:g} | {bad} | | | | |")
                continue
            empties = sum(1 for x in r["runs"] if x.get("records") == 0)
            rel_len = "empty" if m["mean_length"] is None else f"{m['mean_length']:.2f}"
            if empties and m["mean_length"] is not None:
                rel_len += f" ({empties} of {m['n']} empty)"
            out.append(f"| {r['dataset']} | {r['method']} | {r['epsilon']:g} | {r['raw_mean_length']:.2f} / "
                       f"{rel_len} / {u['mean_length']:.2f} | {_f(m['tv_length'])} / {_f(e['tv_length'])} / "
                       f"{_f(u['tv_length'])} | {_f(m['top100'])} / {_f(e['top100'])} / {_f(u['top100'])} | "
                       f"{_f(m['counting_error'], 4)} / {_f(e['counting_error'], 4)} / {_f(u['counting_error'], 4)} | "
                       f"{_f(m.get('frequent_error'), 3)} / {_f(e.get('frequent_error'), 3)} / "
                       f"{_f(u.get('frequent_error'), 3)} |")
        out.append("")
    if results.get("stream"):
        out += [f"### Stream (`stream init` defaults, ε = 1, 5 appends; mean of {seeds} seeds)", "",
                "| dataset | appends with records (of 5) | top-100 at appends 1–5 | top-100 last / empty / unif |",
                "|---|---|---|---|"]
        for r in results["stream"]:
            m = _means(r["runs"])
            bad = _err(m)
            if bad:
                out.append(f"| {r['dataset']} | {bad} | | |")
                continue
            by = " · ".join(_f(x) for x in r["top100_by_append"])
            out.append(f"| {r['dataset']} | {m['appends_released']:.1f} | {by} | {_f(m['top100_last'])} / 0.000 / "
                       f"{_f(r['baselines']['uniform']['top100'])} |")
        out.append("")
    if results.get("privbasis"):
        out += [f"### PrivBasis (default, k = 100, ε = 1; mean of {seeds} seeds; τ = the k-th count's noise sd)", "",
                "| dataset | N | c_1 / c_k (median gap) | τ (mean) | FNR rel / random | tie-aware recall at τ rel / random |",
                "|---|---|---|---|---|---|"]
        for r in results["privbasis"]:
            m, b = _means(r["runs"]), r["baselines"]["random"]
            bad = _err(m)
            if bad:
                out.append(f"| {r['dataset']} | {r['N']} | | {bad} | | |")
                continue
            out.append(f"| {r['dataset']} | {r['N']:,} | {r['c_1']:,} / {r['c_k']:,} ({r['median_gap']:g}) | "
                       f"{m['tau']:.1f} | {_f(m['fnr'])} / {_f(b['fnr'])} | {_f(m['tie_aware_recall'])} / "
                       f"{_f(b['tie_aware_recall'])} |")
        out.append("")
    if results.get("privbasis_time"):
        out += ["### PrivBasis time (k = 100, ε = 1, seeded; best of the repeats)", "",
                "| dataset | N | read | item count | PrivBasis | (read + PB) / (read + count) | CLI end to end | "
                "plain Python pass | CLI / plain |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in results["privbasis_time"]:
            out.append(f"| {r['dataset']} | {r['N']:,} | {r['read_s']:.3f} s | {r['count_s']:.4f} s | "
                       f"{r['privbasis_s']:.3f} s | {r['ratio']:.2f}× | {r['cli_s']:.2f} s | {r['plain_pass_s']:.2f} s | "
                       f"{r['cli_ratio']:.2f}× |")
        out.append("")
    if results.get("degrees"):
        out += [f"### Degree sequences (`degrees`, ε = 1; mean of {seeds} seeds; baseline: uniform on 1..θ, true n)", "",
                "| graph (n, max deg) | θ | method | KS rel / unif | L1 rel / unif | EMD rel / unif | nodes rel / true |",
                "|---|---|---|---|---|---|---|"]
        for r in results["degrees"]:
            m, u = _means(r["runs"]), r["baselines"]["uniform"]
            bad = _err(m)
            head = f"| {r['graph']} ({r['true_nodes']:,}, {r['true_max_degree']}) | {r['theta']} | {r['method']} |"
            if bad:
                out.append(f"{head} {bad} | | | |")
                continue
            out.append(f"{head} {_f(m['ks'])} / {_f(u['ks'])} | {_f(m['l1'])} / {_f(u['l1'])} | "
                       f"{_f(m['emd'], 2)} / {_f(u['emd'], 2)} | {m['nodes']:,.0f} / {r['true_nodes']:,} "
                       f"({m['nodes_ratio']:.2f}×) |")
        out.append("")
    if results.get("tables"):
        out += [f"### RPS tables (defaults; mean of {seeds} seeds; `evaluate ranges` workload)", "",
                "| table | ε | range-count error rel | uniform table | rel / uniform |", "|---|---|---|---|---|"]
        for r in results["tables"]:
            m, u = _means(r["runs"]), r["baselines"]["uniform"]
            ue = _f(u.get("range_error")) if "range_error" in u else "n/a: " + u.get("error", "")
            bad = _err(m)
            if bad:
                out.append(f"| {r['table']} | {r['epsilon']:g} | {bad} | {ue} | |")
                continue
            ratio = m["range_error"] / u["range_error"] if "range_error" in u else float("nan")
            out.append(f"| {r['table']} | {r['epsilon']:g} | {_f(m['range_error'])} | {ue} | {_f(ratio, 2)} |")
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help=f"comma-separated targets (default all: {','.join(TARGETS)})")
    ap.add_argument("--datasets", default="",
                    help="comma-separated dataset names to keep (default all): retail, msnbc, mushroom, dense-ties, "
                         "long-baskets, kosarak-1M (PrivBasis time only), ca-GrQc, ca-HepTh, facebook, hub, "
                         "near-regular, adult, clinic, trips")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 1..S of the releases (default 3)")
    ap.add_argument("--quick", action="store_true", help="one seed, smaller workloads, eps 1 and theta 64 only")
    ap.add_argument("--json", metavar="PATH", help="also write every run and mean as JSON")
    ap.add_argument("--work", default="/tmp/dprelease-bench-unseen", help="generated data and releases")
    ap.add_argument("--no-1m", action="store_true", help="skip the 1M-record timing file")
    ap.add_argument("--repeat", type=int, default=3, help="timing repeats (best of; default 3)")
    ap.add_argument("--render", metavar="PATH", help="run nothing: print the tables of a JSON written by --json")
    args = ap.parse_args()
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        print(render(saved["results"], saved["seeds"]))
        for note in saved.get("notes", []):
            print(f"- {note}")
        print("\nrun time: " + ", ".join(f"{t} {v:.0f} s" for t, v in saved.get("seconds", {}).items()))
        return 0
    targets = [t for t in args.targets.split(",") if t]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        ap.error(f"unknown target(s) {unknown}; choose from {', '.join(TARGETS)}")
    args.datasets = [d for d in args.datasets.split(",") if d]
    known = [d.name for d in TXN] + [KOSARAK_1M.name] + list(GRAPHS) + list(TABLES)
    if [d for d in args.datasets if d not in known]:
        ap.error(f"unknown dataset(s) {[d for d in args.datasets if d not in known]}; choose from {', '.join(known)}")
    if args.quick:
        args.seeds, args.repeat = 1, 1
    args.queries = 5_000 if args.quick else 50_000
    args.range_queries = 2_000 if args.quick else 10_000
    bench = Bench(args)
    seconds: dict[str, float] = {}
    t_all = time.perf_counter()
    for t in targets:
        print(f"{t} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        getattr(bench, f"run_{t}")()
        seconds[t] = time.perf_counter() - t0
    total = time.perf_counter() - t_all
    print(render(bench.results, args.seeds))
    for note in bench.notes:
        print(f"- {note}")
    print("\nrun time: " + ", ".join(f"{t} {s:.0f} s" for t, s in seconds.items()) + f"; total {total:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"seeds": args.seeds, "quick": args.quick, "seconds": seconds,
                                               "notes": bench.notes, "results": bench.results}, indent=1,
                                              default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
