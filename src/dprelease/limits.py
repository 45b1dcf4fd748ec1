"""Work bounds: estimate output size and memory from public quantities and refuse, before starting, past a limit.

A command that could fill the disk or the memory (``basic`` at a tiny epsilon, ``diffgen`` with a
large h, a universe of 10^9 items, DiffPart with a large fan-out) estimates its work from public
inputs only -- epsilon, the universe size, the fan-out, h, the schema's domains -- *before it reads
the data*, and refuses with :class:`WorkLimitError` (one line with the estimate; the CLI exits 2)
past :attr:`Limits.max_output_records` or :attr:`Limits.max_memory`. ``--max-output-records`` and
``--max-memory`` raise them (:func:`limits_set`).

Where the work depends on the data (how many partitions DiffPart's noisy counts let through), a
:class:`WorkMeter` follows the *noisy* quantities as the run goes and stops it past the same
limits: a refusal that depends only on noisy values is post-processing, so it is still a
function of public inputs and noisy values (rule 1). Nothing here looks at raw data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np

from .errors import ParameterError

__all__ = [
    "Limits", "WorkLimitError", "WorkMeter", "current", "limits_set", "parse_size", "format_size", "fixes",
    "DEFAULT_MAX_OUTPUT_RECORDS", "DEFAULT_MAX_MEMORY", "UNIVERSE_BYTES_PER_ITEM",
    "check", "check_universe", "basic_estimate", "diffpart_estimate", "diffgen_max_leaves", "diffgen_estimate",
    "generate_estimate", "TOPK_BYTES_PER_ITEMSET", "QUERY_BYTES", "RUN_ROW_BYTES", "topk_estimate", "check_topk",
    "check_queries", "check_runs", "diffpart_range_notes", "prefix_range_notes", "privbasis_range_notes",
    "diffgen_range_notes", "diffgen_max_specializations", "PRIVBASIS_USEFUL_K", "FILL_BYTES_PER_ITEM",
]

DEFAULT_MAX_OUTPUT_RECORDS = 5_000_000  # about 5 x MSNBC's 989,818 records; ~100 MB of text
DEFAULT_MAX_MEMORY = 4 * 2**30  # 4 GiB
UNIVERSE_BYTES_PER_ITEM = 120  # a label string, its tuple slot and the int64 label (measured: ~114)
TAXONOMY_BYTES_PER_ITEM = 160  # DiffPart's context-free taxonomy arrays, built from Python lists (measured: ~150)
_RELEASED_CELL_BYTES = 160  # one released itemset held in memory: a small numpy array plus list slots
# DiffPart-Prefix's fill (setvalued/shape.py): memory per item of the filled records, its draws, their keys and
# the release's flat arrays (measured: ~35 bytes per item on 1M kosarak-like records of 7.4 items, 45-58 when
# identical records were grouped by hashing; the margin covers other shapes)
FILL_BYTES_PER_ITEM = 64
_PARTITION_BYTES = 200  # one queued DiffPart partition (dataclass, tuple cut, empty rows array)


class WorkLimitError(ParameterError):
    """The estimated output or memory of a run exceeds a limit (the message gives the estimate)."""


@dataclass(frozen=True, slots=True)
class Limits:
    max_output_records: int = DEFAULT_MAX_OUTPUT_RECORDS
    max_memory: int = DEFAULT_MAX_MEMORY  # bytes
    # The options of the running command (set by the CLI): a message names only options the command has, so
    # it never points to one the user cannot pass. None (the API): every option may be named.
    options: frozenset[str] | None = None

    def has(self, option: str) -> bool:
        return self.options is None or option in self.options


_CURRENT: ContextVar[Limits] = ContextVar("dprelease_limits", default=Limits())


def current() -> Limits:
    return _CURRENT.get()


@contextmanager
def limits_set(max_output_records: int | None = None, max_memory: int | None = None,
               options: Iterable[str] | None = None) -> Iterator[Limits]:
    """Run a block under other limits (the CLI's ``--max-output-records`` / ``--max-memory``); ``options``: the
    option strings of the running command (messages name only those)."""
    new = current()
    if max_output_records is not None:
        new = replace(new, max_output_records=int(max_output_records))
    if max_memory is not None:
        new = replace(new, max_memory=int(max_memory))
    if options is not None:
        new = replace(new, options=frozenset(options))
    token = _CURRENT.set(new)
    try:
        yield new
    finally:
        _CURRENT.reset(token)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``4G``, ``512M``, ``1.5GiB``, ``800000000`` -> bytes (K/M/G/T are powers of 1024)."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"expected a size such as 4G, 512M or a number of bytes, got {text!r}")
    value = float(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())
    if not (math.isfinite(value) and value >= 1):
        raise ValueError(f"expected a size of at least 1 byte, got {text!r}")
    return int(value)


def format_size(n: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} bytes"


def _count(x: float) -> str:
    return f"{x:,.0f}" if x < 1e12 else f"{x:.3g}"


def fixes(*steps: tuple[str, str]) -> str:
    """The remedies (text, option) whose option the running command has, joined: "lower --fanout, set
    --spurious-bound or raise --max-output-records"; "" when none is available."""
    lim = current()
    texts = [text for text, option in steps if lim.has(option)]
    if len(texts) <= 1:
        return "".join(texts)
    return ", ".join(texts[:-1]) + " or " + texts[-1]


def _raise_limit(option: str) -> str:
    return f", or raise the limit with {option}" if current().has(option) else ""


def check(what: str, *, records: float | None = None, memory: float | None = None, why: str = "") -> None:
    """Raise :class:`WorkLimitError` if the expected ``records`` or ``memory`` (bytes) pass the limits."""
    lim = current()
    detail = f" ({why})" if why else ""
    if records is not None and not records <= lim.max_output_records:
        raise WorkLimitError(
            f"{what}: about {_count(records)} output records expected{detail}, over the limit of "
            f"{lim.max_output_records:,}; change the parameters{_raise_limit('--max-output-records')}")
    if memory is not None and not memory <= lim.max_memory:
        raise WorkLimitError(
            f"{what}: about {format_size(memory)} of memory needed{detail}, over the limit of "
            f"{format_size(lim.max_memory)}; change the parameters{_raise_limit('--max-memory')}")


def check_universe(n_items: int, spec: str) -> None:
    """A universe of ``n_items`` labels must fit in memory (``--universe 1..1000000000`` does not)."""
    check(f"--universe {spec}", memory=float(n_items) * UNIVERSE_BYTES_PER_ITEM,
          why=f"{_count(n_items)} items at ~{UNIVERSE_BYTES_PER_ITEM} bytes each")


# --- expected numbers of released cells under discrete Laplace noise -------------------------------------


def _dlap_tail(epsilon: float, k: int) -> float:
    """P(X >= k) for X ~ DLap(1/epsilon) and an integer k >= 1: t^k / (1 + t), t = exp(-epsilon)."""
    t = math.exp(-epsilon)
    return math.exp(k * -epsilon) / (1.0 + t)


def _dlap_positive_mean(epsilon: float) -> float:
    """E[max(X, 0)] for X ~ DLap(1/epsilon): sum_{k>=1} P(X >= k) = t / (1 - t^2)."""
    t = math.exp(-epsilon)
    return t / -math.expm1(-2.0 * epsilon)


def basic_estimate(n_items: int, epsilon: float) -> tuple[float, float, float]:
    """Basic (DiffPart section 4.1): (expected released records of the empty cells, expected released
    cells, memory in bytes). Every one of the 2^|I| - 1 cells gets DLap(1/B) noise; an empty cell
    releases max(0, X) copies, so the records released by empty cells alone are (2^|I| - 1) t/(1 - t^2)
    with t = exp(-B) (a lower bound of the release size: public, whatever the data)."""
    cells = math.ldexp(1.0, int(n_items)) - 1.0 if n_items < 1024 else math.inf
    records = cells * _dlap_positive_mean(epsilon)
    passing = cells * _dlap_tail(epsilon, 1)
    memory = cells * 8.0 * 5 + passing * _RELEASED_CELL_BYTES
    return records, passing, memory


def check_basic(n_items: int, epsilon: float) -> None:
    records, _, memory = basic_estimate(n_items, epsilon)
    why = f"2^{n_items} - 1 cells with noise of scale 1/{epsilon:g}"
    check(f"basic --epsilon {epsilon:g} over {n_items} items", records=records, memory=memory, why=why)


def _threshold_k(threshold: float) -> int:
    return max(1, math.ceil(threshold - 1e-12))


def diffpart_estimate(n_items: int, fanout: int, epsilon: float, c1: float,
                      spurious_bound: float | None = None) -> tuple[float, float, float, int]:
    """DiffPart: expected *empty* cells released per leaf-level partition operation, public inputs only.

    A leaf-level operation tests all 2^l - 1 combinations of the l <= f children of a height-1
    node with budget B/2 + unused in [B/2, B] and threshold sqrt(2) C1 / budget (Algorithm 1
    lines 12-13); each empty combination passes with P(DLap >= ceil(threshold)). We take the
    smaller of the two ends of the budget range (a lower bound of the expectation), and the
    threshold raised by ``spurious_bound`` where set. Returns (expected records per operation, expected
    cells per operation, memory per operation in bytes, number of height-1 taxonomy nodes).
    """
    leaf_width = min(int(fanout), int(n_items))
    combos = math.ldexp(1.0, leaf_width) - 1.0
    cells = math.inf
    records = math.inf
    for eps_op in (epsilon / 2.0, epsilon):
        threshold = math.sqrt(2.0) * c1 / eps_op
        if spurious_bound is not None:
            threshold = max(threshold, math.log(combos / spurious_bound) / eps_op)
        k = _threshold_k(threshold)
        p = _dlap_tail(eps_op, k)
        c = combos * p
        mean_value = k + math.exp(-eps_op) / -math.expm1(-eps_op)  # k + E[Geometric]: memoryless tail
        if c < cells:
            cells, records = c, c * mean_value
    height1 = max(1, math.ceil(n_items / fanout)) if n_items > fanout else 1
    return records, cells, cells * _RELEASED_CELL_BYTES, height1


def check_diffpart(n_items: int, fanout: int, epsilon: float, c1: float, spurious_bound: float | None = None,
                   what: str = "diffpart") -> None:
    """Refuse settings whose leaf operations alone would release too many empty cells (the output would be mostly noise)."""
    records, cells, memory, height1 = diffpart_estimate(n_items, fanout, epsilon, c1, spurious_bound)
    leaf_width = min(int(fanout), int(n_items))
    fix = fixes(("lower --fanout", "--fanout"), ("set --spurious-bound", "--spurious-bound"))
    why = (f"{_count(records)} spurious records from the 2^{leaf_width} - 1 combinations of each of the "
           f"{_count(height1)} lowest taxonomy nodes" + (f"; {fix}" if fix else ""))
    check(f"{what} --fanout {fanout} over {n_items} items", records=records * height1,
          memory=memory * height1 + float(n_items) * TAXONOMY_BYTES_PER_ITEM, why=why)


class WorkMeter:
    """Follows noisy quantities during a run (released records and cells, queued partitions) and
    stops it past the limits. Every value it sees is noisy or public, so its refusal is too."""

    def __init__(self, what: str):
        self.what = what
        self.limits = current()
        self.records = 0
        self.cells = 0

    def released(self, cells: int, records: int) -> None:
        self.cells += int(cells)
        self.records += int(records)
        if self.records > self.limits.max_output_records:
            fix = fixes(("lower --fanout", "--fanout"), ("set --spurious-bound", "--spurious-bound"),
                        ("raise --max-output-records", "--max-output-records"))
            raise WorkLimitError(
                f"{self.what}: the release grew past {self.limits.max_output_records:,} records (noisy count) and "
                f"was stopped" + (f"; {fix}" if fix else ""))
        self._memory(0)

    def queued(self, partitions: int) -> None:
        self._memory(partitions)

    def _memory(self, partitions: int) -> None:
        need = self.cells * _RELEASED_CELL_BYTES + partitions * _PARTITION_BYTES
        if need > self.limits.max_memory:
            fix = fixes(("lower --fanout", "--fanout"), ("set --spurious-bound", "--spurious-bound"),
                        ("raise --max-memory", "--max-memory"))
            raise WorkLimitError(
                f"{self.what}: {self.cells:,} released cells and {partitions:,} queued partitions (noisy counts) "
                f"need about {format_size(need)}, over the limit of {format_size(self.limits.max_memory)}; "
                f"the run was stopped" + (f"; {fix}" if fix else ""))


# --- DiffGen: the largest contingency table h specializations can make ---------------------------------


def _maxplus(a: np.ndarray, b: np.ndarray, size: int) -> np.ndarray:
    """c[t] = max_{i+j=t} a[i] + b[j] for t < size (log-space products)."""
    out = np.full(size, -np.inf)
    for i in np.flatnonzero(np.isfinite(a[:size])).tolist():
        span = min(size - i, b.size)
        np.maximum(out[i:i + span], a[i] + b[:span], out=out[i:i + span])
    return out


def _taxonomy_cut_sizes(taxonomy, budget: int) -> np.ndarray:
    """log of the largest cut of a taxonomy after s top-down specializations, for s = 0..budget."""
    memo: dict[int, np.ndarray] = {}

    def best(u: int) -> np.ndarray:  # plain (not log) cut sizes of the subtree of u, as floats
        if u in memo:
            return memo[u]
        out = np.full(budget + 1, -np.inf)
        out[0] = 1.0
        kids = taxonomy.children[u]
        if kids and budget >= 1:
            comb = np.full(budget + 1, -np.inf)
            comb[0] = 0.0
            for c in kids:
                bc = best(c)
                new = np.full(budget + 1, -np.inf)
                for i in np.flatnonzero(np.isfinite(comb)).tolist():
                    span = budget + 1 - i
                    np.maximum(new[i:], comb[i] + bc[:span], out=new[i:])
                comb = new
            out[1:] = np.maximum(out[1:], comb[:-1])
        memo[u] = out
        return out

    sizes = best(0)
    sizes = np.maximum.accumulate(np.where(np.isfinite(sizes), sizes, 0.0))
    return np.log(np.maximum(sizes, 1.0))


def diffgen_max_leaves(schema, h: int) -> float:
    """The largest number of leaf partitions (cells per class) any h specializations can produce.

    Each attribute's cut grows by (children - 1) per categorical specialization and by 1 per numeric
    split (at most width - 1 splits for an integer attribute); the table has the product of the cut
    sizes as its cells (DiffGen releases every one, empty or not). A max-plus knapsack over the
    attributes gives the exact maximum: a function of the schema and h only.
    """
    h = int(h)
    caps = []  # the most specializations each attribute can take (a real-valued attribute: no limit)
    for a in schema.attributes:
        if a.kind == "numeric":
            caps.append(max(0, int(a.hi - a.lo) - 1) if a.integer else math.inf)
        else:
            caps.append(sum(1 for kids in a.taxonomy.children if kids))
    h = int(min(h, sum(caps)))  # past that, DiffGen stops: nothing is left to specialize
    if h > _DP_MAX_H:
        # The exact knapsack costs O(h^2) per attribute. Past _DP_MAX_H use the AM-GM bound: a cut grows by at
        # most (children - 1) per specialization, so the product is <= (1 + h (c_max - 1) / d)^d.
        c_max = max([2] + [max((len(k) for k in a.taxonomy.children), default=1) for a in schema.attributes
                           if a.kind != "numeric"])
        d = len(schema.attributes)
        log_bound = d * math.log1p(h * (c_max - 1) / d)
        return math.exp(log_bound) if log_bound < 700 else math.inf
    total = np.full(h + 1, -np.inf)
    total[0] = 0.0
    for a in schema.attributes:
        if a.kind == "numeric":
            s = np.arange(h + 1, dtype=np.float64)
            if a.integer:
                s = np.minimum(s, max(0.0, a.hi - a.lo - 1))
            g = np.log1p(s)
        else:
            internal = sum(1 for kids in a.taxonomy.children if kids)
            g_small = _taxonomy_cut_sizes(a.taxonomy, min(h, internal))
            g = np.concatenate([g_small, np.full(h + 1 - g_small.size, g_small[-1])])
        total = _maxplus(total, g, h + 1)
    best = float(np.max(total[np.isfinite(total)]))
    return math.exp(best) if best < 700 else math.inf


_DP_MAX_H = 2000


def diffgen_estimate(schema, h: int) -> tuple[float, float]:
    """(largest possible released rows = leaves x classes, memory in bytes) of DiffGen with h specializations."""
    leaves = diffgen_max_leaves(schema, h)
    rows = leaves * schema.n_classes
    d = len(schema.attributes)
    # every partition ever made (<= 2 x leaves) keeps a generalized record (d int64) and 4 more arrays;
    # the released table holds a row per (leaf, class).
    memory = 2.0 * leaves * 8.0 * (d + 5) + rows * 64.0
    return rows, memory


def check_diffgen(schema, h: int, what: str = "diffgen") -> None:
    rows, memory = diffgen_estimate(schema, h)
    why = f"h = {h} specializations can make up to {_count(rows)} leaf x class cells"
    check(f"{what} -H {h}", records=rows, memory=memory, why=why)


def generate_estimate(records: int, items: int, mean_length: float) -> float:
    """Memory (bytes) of ``generate``: it streams chunks of 2^18 records (``data.generators.kosarak_like_chunks``),
    so item and row ids (int64) plus temporaries per item occurrence of one chunk, the record lengths of the
    whole file (int16), and the item tables."""
    chunk = float(min(records, 1 << 18))
    return chunk * float(mean_length) * 48.0 + chunk * 24.0 + float(records) * 2.0 + float(items) * 32.0


def check_generate(records: int, items: int, mean_length: float) -> None:
    check(f"generate --records {records} --items {items} --mean-length {mean_length:g}",
          memory=generate_estimate(records, items, mean_length), why="item and record ids of the generated data")


# --- top-k itemsets, query workloads, experiment runs ------------------------------------------------------

# Memory per itemset of an exact top-k list (itemsets.exact.top_k_itemsets: the tuples, their supports and the
# level-wise generators' bit columns). Measured: 1.9 KB per k on 300 mushroom records, 2.8 KB on 8,124
# (`kth_support` at k = 100,000 and 400,000); the smaller, a lower bound, is used.
TOPK_BYTES_PER_ITEMSET = 1_500
QUERY_BYTES = 400  # one random counting query held with its answers (evaluate counting: measured ~430)
RUN_ROW_BYTES = 1_000  # one result row of an experiment, kept until the CSV is written


def topk_estimate(k: int, eta: float = 1.0) -> float:
    """Memory (bytes) of mining the exact top ceil(eta k) itemsets: a function of k alone."""
    return math.ceil(float(eta) * float(k) - 1e-9) * float(TOPK_BYTES_PER_ITEMSET)


def check_topk(what: str, k: int, *, eta: float = 1.0, released: bool = True) -> None:
    """Refuse a top-k request past the limits before the data is read: k output rows (when the itemsets are
    released) and the exact mining of ceil(eta k) itemsets (PrivBasis's k1, TF's c_k, evaluation's top k)."""
    mined = math.ceil(float(eta) * float(k) - 1e-9)
    check(what, records=float(k) if released else None, memory=topk_estimate(k, eta),
          why=f"a row per itemset, and the exact top {_count(mined)} itemsets mined at "
              f"~{TOPK_BYTES_PER_ITEMSET:,} bytes each")


def check_queries(what: str, queries: int) -> None:
    """A counting-query workload of ``queries`` queries must fit in memory."""
    check(what, memory=float(queries) * QUERY_BYTES, why=f"{_count(queries)} queries at ~{QUERY_BYTES} bytes each")


def check_runs(what: str, runs: int, settings: int) -> None:
    """An experiment keeps a result row per run and setting until it writes them."""
    rows = float(runs) * float(max(1, settings))
    check(what, memory=rows * RUN_ROW_BYTES,
          why=f"{_count(rows)} result rows ({_count(runs)} runs x {_count(settings)} settings) at "
              f"~{RUN_ROW_BYTES:,} bytes each")


# --- parameters past their useful range: a warning on stderr and a note in the manifest ---------------------
# Each rule is a function of public inputs only (the parameters and the declared domain), so the warning and
# the note are too; docs/robustness.md lists them.

_DEFAULT_FANOUT = 10  # == setvalued.diffpart.DEFAULT_FANOUT (not imported: this module stays light)
_DEFAULT_C = 1.5  # == DEFAULT_C1 == DEFAULT_C2
_FANOUT_FACTOR = 10.0  # warn when a leaf operation is expected to release this many times the default's records
_C_RANGE = (0.1, 10.0)  # warn outside this multiple of the default C1, C2
PRIVBASIS_USEFUL_K = 1_000  # PrivBasis's basis construction takes minutes past a few hundred itemsets


def diffpart_range_notes(n_items: int, fanout: int, epsilon: float, c1: float, c2: float,
                         spurious_bound: float | None = None) -> list[str]:
    """DiffPart (faithful): a fan-out whose leaf operations release far more empty combinations than the default's,
    and threshold constants far from the default."""
    notes: list[str] = []
    if fanout > _DEFAULT_FANOUT and n_items > _DEFAULT_FANOUT:
        here = diffpart_estimate(n_items, fanout, epsilon, c1, spurious_bound)[0]
        base = diffpart_estimate(n_items, _DEFAULT_FANOUT, epsilon, c1, spurious_bound)[0]
        if here > _FANOUT_FACTOR * base:
            notes.append(f"--fanout {fanout} is past its useful range: each leaf-level operation tests "
                         f"2^{min(fanout, n_items)} - 1 combinations and is expected to release about "
                         f"{_count(here)} records of empty combinations, {here / base:,.0f}x as many as at the default "
                         f"{_DEFAULT_FANOUT} (the paper's setting)")
    for name, value in (("--c1", c1), ("--c2", c2)):
        lo, hi = _C_RANGE[0] * _DEFAULT_C, _C_RANGE[1] * _DEFAULT_C
        if value < lo:
            notes.append(f"{name} {value:g} is past its useful range: its threshold is {value:g} noise standard "
                         f"deviations (default {_DEFAULT_C:g}), so noise alone passes it often")
        elif value > hi:
            notes.append(f"{name} {value:g} is past its useful range: its threshold is {value:g} noise standard "
                         f"deviations (default {_DEFAULT_C:g}), so only very large counts pass it")
    return notes


def prefix_range_notes(selection_share: float, structure_share: float, default_selection: float,
                       default_structure: float, shape_share: float = 0.0, default_shape: float = 0.0) -> list[str]:
    """DiffPart-Prefix: a budget share below a tenth of its default, or less than a tenth of epsilon left for the
    released counts (after the selection, the structure and, when given, the shape statistics)."""
    notes: list[str] = []
    rest = 1.0 - selection_share - structure_share - shape_share
    if rest <= 0.0 or selection_share >= 1.0 or structure_share >= 1.0:
        return notes  # refused by the method's own checks
    for name, value, default in (("--selection-share", selection_share, default_selection),
                                 ("--structure-share", structure_share, default_structure)):
        if value < default / 10.0:
            notes.append(f"{name} {value:g} is past its useful range: below a tenth of the default {default:g}, "
                         f"its noise drowns what it decides")
    if rest < 0.1:
        shape = f" + --shape-share {shape_share:g}" if shape_share else ""
        notes.append(f"--selection-share {selection_share:g} + --structure-share {structure_share:g}{shape} leave "
                     f"{rest:.3g} of epsilon to the released counts (default "
                     f"{1.0 - default_selection - default_structure - default_shape:.3g}): the counts are mostly "
                     "noise")
    return notes


def privbasis_range_notes(k: int, n_items: int | None) -> list[str]:
    """PrivBasis: more itemsets than the universe holds, or far more than the method is made for."""
    notes: list[str] = []
    if n_items is not None and n_items < 63 and k > (1 << n_items) - 1:
        notes.append(f"-k {k} is past its useful range: a universe of {n_items} items holds only "
                     f"{(1 << n_items) - 1:,} itemsets")
    if k > PRIVBASIS_USEFUL_K:
        notes.append(f"-k {k} is past its useful range: PrivBasis is made for tens to hundreds of itemsets (the "
                     f"paper's k <= 200); its basis construction's time grows about with the cube of k (k = 400 took "
                     f"111 s on 2,000 records), and the k counts share one budget")
    return notes


def diffgen_max_specializations(schema) -> float:
    """The most specializations a schema allows: the internal taxonomy nodes of the categorical attributes plus
    width - 1 splits of each integer attribute (a real-valued attribute: no limit)."""
    total = 0.0
    for a in schema.attributes:
        if a.kind == "numeric":
            total += max(0, int(a.hi - a.lo) - 1) if a.integer else math.inf
        else:
            total += sum(1 for kids in a.taxonomy.children if kids)
    return total


def diffgen_range_notes(schema, h: int | None) -> list[str]:
    """DiffGen: more specializations than the schema allows (the run stops there, and the budget per
    specialization was split h ways)."""
    if h is None:
        return []
    most = diffgen_max_specializations(schema)
    if h > most:
        return [f"-H {h} is past its useful range: the schema allows only {most:,.0f} specializations, so DiffGen "
                f"stops there, having split the selection budget {h} ways"]
    return []
