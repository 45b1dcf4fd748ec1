"""PrivBasis (Li, Qardaji, Su, Cao, PVLDB 2012): top-k frequent itemsets under epsilon-DP.

Algorithm 3 with its parts: GetLambda, GetFreqElements (items, then pairs), the lambda_2 heuristic,
ConstructBasisSet (Algorithm 2) and BasisFreq (Algorithm 1). Every data-dependent value leaves
through a mechanism of :mod:`dprelease.privacy`, charged to one :class:`BudgetAccountant`.

Faithful budget split (section 4.4, "Privacy Budget Allocation"; ``PrivBasisParams.faithful()``):

* alpha1 * eps  -- Step 1, GetLambda (Algorithm 3 line 2);
* alpha2 * eps  -- Steps 2 and 3: all of it to the items when lambda <= 12 (line 4); otherwise
  beta1 = alpha2 * lambda / (lambda + lambda2) to the items and beta2 = alpha2 - beta1 to the pairs
  (lines 9-13); when lambda2 = 0 there are no pairs to select and beta1 = alpha2;
* alpha3 * eps  -- Step 5, BasisFreq (lines 5 and 15: (1 - alpha1 - alpha2) * eps).

Defaults alpha = (0.1, 0.4, 0.5), eta = 1.2, a single basis when lambda <= 12, bases of at most 12 items.

The default (``PrivBasisParams()``) adds improvements, each switchable and each a function of public
inputs and of noisy values already paid for (docs/privbasis.md, "The default"); the budget split of every
path is written next to the code in :func:`privbasis`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..engine.base import TransactionData
from ..engine.local import as_transaction_data
from ..errors import ParameterError
from ..privacy import BudgetAccountant, BudgetScope, NoiseSource, check_epsilon
from ..privacy.mechanisms import exponential_mechanism, exponential_top_k, noisy_counts, noisy_values
from ..privacy.uncertainty import Intervals, manifest_section, sum_multiplier
from ..limits import privbasis_range_notes
from ..release import NEIGHBOURS_LINE, add_notes, build_manifest, records_run_start
from ..release.itemsets import ItemsetRelease
from .exact import kth_support, pair_supports

__all__ = [
    "PrivBasisParams",
    "private_quantile",
    "quantile_quality",
    "pair_contributions",
    "pair_contribution_counts",
    "private_quantile_counts",
    "bounded_item_counts",
    "bounded_pair_counts",
    "select_by_threshold",
    "cover_at_least",
    "BasisFreqResult",
    "ItemsetRelease",
    "get_lambda",
    "get_freq_elements",
    "lambda2_heuristic",
    "average_error_variance",
    "construct_basis_set",
    "combine_estimates",
    "basis_bin_counts",
    "basis_freq",
    "select_top_k",
    "privbasis",
]


@dataclass(frozen=True, slots=True)
class PrivBasisParams:
    """Algorithmic parameters of Algorithm 3; all overridable.

    The defaults are the improved PrivBasis of this package; :meth:`faithful` gives the paper's
    configuration (its Algorithm 3 with alpha = (0.1, 0.4, 0.5), eta = 1.2). ``lambda2_rule``:
    ``"sqrt"`` is the heuristic of section 4.4, ``"naive"`` is lambda2 = eta*k - lambda.
    """

    alpha1: float = 0.1
    alpha2: float = 0.4
    alpha3: float = 0.5
    eta: float = 1.2
    single_basis_max: int = 12
    max_basis_length: int = 12
    lambda2_rule: str = "sqrt"
    bin_threshold: float = 0.0  # improvement (off = faithful): zero noisy bins below this many noise scales
    lambda_range: str = "k1"  # GetLambda candidates: "k1" = 1..min(|I|, ceil(eta*k)), "universe" = 1..|I|
    multi_alpha2: float | None = None  # improvement: share of eps for steps 2-3 when lambda > 12 (alpha3 = rest)
    item_share: float | None = None  # improvement: beta1/alpha2 fixed (None = the paper's lambda/(lambda+lambda2))
    # --- improvements on by default (PrivBasisParams.faithful() switches them off) ---
    single_alpha2: float | None = 0.2  # share of eps for the items when lambda <= 12 (alpha3 = rest)
    bounded_selection: bool = True  # lambda > 12: Laplace on contribution-bounded item/pair counts (see privbasis)
    bound_quantile: float = 0.9  # the contribution bounds are private quantiles of the records' contributions
    bound_alpha: float = 0.02  # share of eps for each of the two bound quantiles
    bounded_alpha2: float = 0.55  # share of eps for steps 2-3 when the bounded selection is used (alpha3 = rest)
    bounded_ratio: float = 2.0 / 3.0  # the bounded selection is used when l1 <= bounded_ratio * lambda
    selection_margin: float | None = 20.0  # bounded selection: stop spending once theta >= margin noise scales
    bin_cut: float | None = 1.0  # zero noisy bins below the level that ~bin_cut empty bins in all would pass
    exact_k: bool = True  # at least ceil(log2(k+1)) items and bases covering >= k itemsets: publish k
    dense_bases: bool = True  # long records holding most of F: bases by the items' noisy rank, no pairs

    @classmethod
    def faithful(cls, **overrides: object) -> "PrivBasisParams":
        """The paper's Algorithm 3 (section 4.4 defaults), with any field overridden."""
        base: dict[str, object] = {"single_alpha2": None, "bounded_selection": False, "bin_cut": None,
                                   "exact_k": False, "dense_bases": False}
        base.update(overrides)
        return cls(**base)  # type: ignore[arg-type]

    @property
    def is_faithful(self) -> bool:
        return self == PrivBasisParams.faithful(alpha1=self.alpha1, alpha2=self.alpha2, alpha3=self.alpha3,
                                                eta=self.eta, single_basis_max=self.single_basis_max,
                                                max_basis_length=self.max_basis_length,
                                                lambda2_rule=self.lambda2_rule, lambda_range=self.lambda_range)

    def validate(self) -> None:
        for name in ("alpha1", "alpha2", "alpha3"):
            v = getattr(self, name)
            if not (0.0 < v < 1.0):
                raise ParameterError(f"--{name} must be in (0, 1), got {v}")
        if abs(self.alpha1 + self.alpha2 + self.alpha3 - 1.0) > 1e-9:
            raise ParameterError(f"alpha1 + alpha2 + alpha3 must be 1, got {self.alpha1 + self.alpha2 + self.alpha3:g}")
        if not (self.eta >= 1.0 and math.isfinite(self.eta)):
            raise ParameterError(f"--eta must be a finite number >= 1, got {self.eta}")
        if not (1 <= self.single_basis_max <= 20):
            raise ParameterError(f"--single-basis-max must be between 1 and 20, got {self.single_basis_max}")
        if not (2 <= self.max_basis_length <= 20):
            raise ParameterError(f"--max-basis-length must be between 2 and 20, got {self.max_basis_length}")
        if not (self.bin_threshold >= 0.0 and math.isfinite(self.bin_threshold)):
            raise ParameterError(f"--bin-threshold must be a finite number >= 0, got {self.bin_threshold}")
        if self.multi_alpha2 is not None and not (0.0 < self.multi_alpha2 < 1.0 - self.alpha1):
            raise ParameterError(f"--multi-alpha2 must be in (0, 1 - alpha1), got {self.multi_alpha2}")
        if self.single_alpha2 is not None and not (0.0 < self.single_alpha2 < 1.0 - self.alpha1):
            raise ParameterError(f"--single-alpha2 must be in (0, 1 - alpha1), got {self.single_alpha2}")
        if self.lambda_range not in ("k1", "universe"):
            raise ParameterError(f"lambda range must be 'k1' or 'universe', got {self.lambda_range!r}")
        if self.item_share is not None and not (0.0 < self.item_share < 1.0):
            raise ParameterError(f"--item-share must be in (0, 1), got {self.item_share}")
        if self.lambda2_rule not in ("sqrt", "naive"):
            raise ParameterError(f"lambda2 rule must be 'sqrt' or 'naive', got {self.lambda2_rule!r}")
        if not (0.5 <= self.bound_quantile < 1.0):
            raise ParameterError(f"--bound-quantile must be in [0.5, 1), got {self.bound_quantile}")
        if not (0.0 < self.bounded_alpha2 < 1.0 - self.alpha1):
            raise ParameterError(f"--bounded-alpha2 must be in (0, 1 - alpha1), got {self.bounded_alpha2}")
        steps23 = min(self.multi_alpha2 if self.multi_alpha2 is not None else self.alpha2, self.bounded_alpha2)
        if not (0.0 < self.bound_alpha and 2.0 * self.bound_alpha < 0.5 * steps23):
            raise ParameterError(f"--bound-alpha must be in (0, {steps23 / 4:g}), got {self.bound_alpha}")
        if self.selection_margin is not None and not (0.0 < self.selection_margin and
                                                      math.isfinite(self.selection_margin)):
            raise ParameterError(f"--selection-margin must be a finite number > 0, got {self.selection_margin}")
        if not (0.0 < self.bounded_ratio <= 1.0):
            raise ParameterError(f"--bounded-ratio must be in (0, 1], got {self.bounded_ratio}")
        if self.bin_cut is not None and not (0.0 < self.bin_cut and math.isfinite(self.bin_cut)):
            raise ParameterError(f"--bin-cut must be a finite number > 0, got {self.bin_cut}")


@dataclass(frozen=True, eq=False)
class BasisFreqResult:
    """Noisy counts of every non-empty subset of every basis (Algorithm 1, lines 12-26).

    ``itemsets[j]`` (sorted item ids) has noisy count ``counts[j]`` with relative error variance
    ``variances[j]`` (in units of one bin's variance, Eq. 4). ``n_estimate`` is the combined noisy count
    of the empty set (the sum of each basis's noisy bins): post-processing, used to turn counts into
    frequencies without touching N.
    """

    itemsets: list[tuple[int, ...]]
    counts: np.ndarray
    variances: np.ndarray
    n_estimate: float


# --- Step 1: GetLambda -----------------------------------------------------------------------------------


def get_lambda(item_counts: np.ndarray, kth_count: int, n_records: int, epsilon: float, *,
               scope: BudgetScope, noise: NoiseSource, max_lambda: int | None = None) -> int:
    """GetLambda (Algorithm 3 lines 18-28): sample lambda in 1..|I| by the exponential mechanism.

    Quality q(D, i) = (1 - |f_{k1} - fitem_i|) * N = N - |c_{k1} - citem_i| (section 4.4, Step 1), where
    citem_i is the i-th largest item count. Adding one record raises N by 1 and c_{k1}, citem_i by 0 or 1,
    so every quality moves the same way (up) by 0, 1 or 2: one-directional with sensitivity 2, hence
    weights exp(eps * q / 2) -- exactly the p[i] of line 24. The text's "sensitivity 1" plus the
    one-direction saving would give exp(eps * q), which is 2*eps-DP (|.| breaks the one-direction
    property of the distance; see docs/privbasis.md, docs/privacy.md and tests/audit/test_neighbours.py).
    Works in log space: N * eps / 2 is never exponentiated.

    ``max_lambda`` (public) restricts the candidates to 1..max_lambda. Section 4.4's text samples from
    {1..k}; with the margin eta that is 1..k1, and it loses nothing: under the tie rule every item of a
    top-k1 itemset is itself a top-k1 itemset, so the true lambda is at most k1.
    """
    order = np.sort(np.asarray(item_counts, dtype=np.int64))[::-1]
    if max_lambda is not None:
        order = order[: max(1, int(max_lambda))]
    quality = float(n_records) - np.abs(float(kth_count) - order.astype(np.float64))
    idx = exponential_mechanism(quality, epsilon, sensitivity=2.0, monotonic=True, scope=scope, noise=noise,
                                label="PrivBasis step 1: GetLambda (alpha1)")
    return idx + 1


# --- Steps 2-3: GetFreqElements --------------------------------------------------------------------------


def get_freq_elements(counts: np.ndarray, how_many: int, epsilon: float, *, scope: BudgetScope,
                      noise: NoiseSource, label: str) -> np.ndarray:
    """GetFreqElements (Algorithm 3 lines 29-40): ``how_many`` elements by the exponential mechanism
    without replacement, each round with eps/how_many and quality = count (sensitivity 1).

    Counts only rise when a record is added, so the one-direction saving applies (section 2.1): weight
    exp((eps/how_many) * count), the paper's e^{f*eps/lambda} with f a count. One-shot Gumbel top-k has
    the same distribution as the sequential rounds. Returns indices into ``counts`` in pick order.
    """
    return exponential_top_k(np.asarray(counts, dtype=np.float64), how_many, epsilon, sensitivity=1.0,
                             monotonic=True, scope=scope, noise=noise, label=label)


def lambda2_heuristic(lam: int, k: int, eta: float, rule: str = "sqrt") -> int:
    """lambda2 = lambda2' / sqrt(max(1, lambda2'/lambda)), lambda2' = eta*k - lambda (section 4.4), floored.

    The paper's pumsb-star example (lambda = 20, k = 100, eta = 1.2) gives 44, so the value is floored.
    Never below 0; the caller caps it at C(lambda, 2).
    """
    prime = eta * k - lam
    if prime <= 0:
        return 0
    if rule == "naive":
        return int(math.floor(prime + 1e-9))
    return int(math.floor(prime / math.sqrt(max(1.0, prime / lam)) + 1e-9))


# --- Improvement: contribution-bounded Laplace selection for sparse data (lambda > 12) -------------------


def private_quantile(values: np.ndarray, q: float, max_value: int, epsilon: float, *, scope: BudgetScope,
                     noise: NoiseSource, label: str) -> int:
    """A value l in 1..max_value near the q-quantile of ``values`` (one value per record), by the
    exponential mechanism (improvement, not in the paper).

    Quality u(l) = -max(0, q*n - A(l)) - max(0, A(l-1) - q*n), A(j) = #{records with value <= j}: 0 exactly
    where A(l-1) <= q*n <= A(l), and falling with every record between l and the quantile on either side (so a
    gap in the values leaves no plateau of equally good l above the quantile). Adding a record of value L moves
    q*n by q and A(j) by 1 for j >= L: for L < l the two terms move by at most 1-q in opposite directions, for
    L = l by at most 1-q and q in the same direction, for L > l by at most q in opposite directions; so u moves
    by at most 1: sensitivity 1, weights exp(eps*u/2).
    ``max_value`` is public. The caller guarantees that each record's value depends on that record only
    (and on public inputs), and that the set of records passed is chosen record by record.
    """
    return private_quantile_counts(values, None, q, max_value, epsilon, scope=scope, noise=noise, label=label)


def private_quantile_counts(values: np.ndarray, counts: np.ndarray | None, q: float, max_value: int, epsilon: float,
                            *, scope: BudgetScope, noise: NoiseSource, label: str) -> int:
    """:func:`private_quantile` of the records given as a histogram: ``counts[i]`` records of value ``values[i]``
    (an engine's grouped count; ``None``: one record per value); the same quality, so the same draw."""
    quality = quantile_quality(values, q, max_value, counts=counts)
    return exponential_mechanism(quality, epsilon, sensitivity=1.0, scope=scope, noise=noise, label=label) + 1


def quantile_quality(values: np.ndarray, q: float, max_value: int, counts: np.ndarray | None = None) -> np.ndarray:
    """The quality of :func:`private_quantile` for l = 1..max_value (docstring there); with ``counts``, value
    ``values[i]`` stands for ``counts[i]`` records."""
    max_value = max(1, int(max_value))
    # A value above the range counts as max_value (a per-record clip, so the sensitivity proof is unchanged):
    # when the q-quantile lies above the range, max_value is the one candidate of quality 0. Without the clip
    # every candidate had A(l) = 0 and the same quality, and the draw was uniform on 1..max_value (dense data,
    # where every record is longer than lambda, drew l1 = 1 as often as l1 = lambda).
    v = np.minimum(np.asarray(values, dtype=np.int64), max_value)
    if counts is None:
        hist, n = np.bincount(v, minlength=max_value + 2), v.size
    else:
        counts = np.asarray(counts, dtype=np.int64)
        hist = np.zeros(max_value + 2, dtype=np.int64)
        np.add.at(hist, v, counts)
        n = int(counts.sum())
    at_most = np.cumsum(hist).astype(np.float64)  # at_most[j] = A(j)
    target = q * float(n)
    below = np.maximum(0.0, target - at_most[1 : max_value + 1])  # A(l) short of q*n
    above = np.maximum(0.0, at_most[0:max_value] - target)  # A(l - 1) already past q*n
    return -(below + above)


def bounded_item_counts(db: TransactionDB | TransactionData, ell: int) -> np.ndarray:
    """Item counts where record t adds min(1, ell/|t|) to each of its items: L1 contribution <= ell. Summed
    exactly and rounded once (:meth:`TransactionData.bounded_item_sums`), so every engine gives the same bits."""
    from ..engine.local import as_transaction_data

    return as_transaction_data(db).bounded_item_sums(ell)


def pair_contribution_counts(db: TransactionDB | TransactionData, items_sorted: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
    """The values C(|t & F|, 2) >= 1 of the records t with at least two items of F, as (value, records) pairs."""
    from ..engine.local import as_transaction_data

    m, counts = as_transaction_data(db).projected_length_histogram(items_sorted)
    keep = m >= 2
    return m[keep] * (m[keep] - 1) // 2, counts[keep]


def pair_contributions(db: TransactionDB | TransactionData, items_sorted: np.ndarray) -> np.ndarray:
    """C(|t & F|, 2) for every record t with at least two items of F (its number of pairs of F), in ascending
    order."""
    values, counts = pair_contribution_counts(db, items_sorted)
    return np.repeat(values, counts)


def bounded_pair_counts(db: TransactionDB | TransactionData, items_sorted: np.ndarray, ell: int) -> np.ndarray:
    """Counts of the pairs of F (``np.triu_indices`` order) where record t adds min(1, ell/C(|t & F|, 2)) to
    each of its pairs: L1 contribution <= ell. Exact sums, as :func:`bounded_item_counts`."""
    from ..engine.local import as_transaction_data

    return as_transaction_data(db).bounded_pair_sums(np.asarray(items_sorted, dtype=np.int64), ell)


def select_by_threshold(noisy: np.ndarray, threshold: float, cap: int) -> np.ndarray:
    """Indices of the noisy values >= ``threshold``, largest first (ties by index), at most ``cap``."""
    noisy = np.asarray(noisy, dtype=np.float64)
    idx = np.flatnonzero(noisy >= threshold)
    idx = idx[np.argsort(-noisy[idx], kind="stable")]
    return idx[: max(0, int(cap))]


def count_covered(bases: list[tuple[int, ...]]) -> int:
    """Number of distinct non-empty itemsets that are subsets of some basis (a public function of the bases)."""
    seen: set[tuple[int, ...]] = set()
    for basis in bases:
        b = sorted(basis)
        for mask in range(1, 1 << len(b)):
            seen.add(tuple(b[j] for j in range(len(b)) if (mask >> j) & 1))
    return len(seen)


def cover_at_least(bases: list[tuple[int, ...]], k: int, cap: int) -> list[tuple[int, ...]]:
    """Merge the two smallest bases (union within ``cap`` items) until the bases cover >= k itemsets.

    Post-processing of public bases, so BasisFreq can estimate k itemsets (the release has exactly k rows
    whenever this succeeds). Returns the bases unchanged when they already cover k.
    """
    bases = [tuple(sorted(b)) for b in bases]
    while True:
        if max((len(b) for b in bases), default=0) >= 63 or (1 << max((len(b) for b in bases), default=0)) - 1 >= k:
            return bases
        if count_covered(bases) >= k or len(bases) < 2:
            return bases
        order = sorted(range(len(bases)), key=lambda i: (len(bases[i]), bases[i]))
        merged = None
        for a_pos in range(len(order)):
            for b_pos in range(a_pos + 1, len(order)):
                i, j = order[a_pos], order[b_pos]
                union = tuple(sorted(set(bases[i]) | set(bases[j])))
                if len(union) <= cap:
                    merged = (i, j, union)
                    break
            if merged:
                break
        if merged is None:
            return bases
        i, j, union = merged
        bases = [b for t, b in enumerate(bases) if t not in (i, j)] + [union]


# --- Step 4: ConstructBasisSet (Algorithm 2) -------------------------------------------------------------


def _queries(F: list[int], P: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, int]]:
    local = {item: j for j, item in enumerate(F)}
    qa = [local[i] for i in F] + [local[a] for a, _ in P]
    qb = [local[i] for i in F] + [local[b] for _, b in P]
    qlen = [1] * len(F) + [2] * len(P)
    return np.asarray(qa), np.asarray(qb), np.asarray(qlen, dtype=np.float64), local


def _membership(bases: list[tuple[int, ...]], local: dict[int, int], n: int) -> np.ndarray:
    A = np.zeros((n, len(bases)), dtype=bool)
    for b, basis in enumerate(bases):
        for item in basis:
            A[local[item], b] = True
    return A


def average_error_variance(bases: list[tuple[int, ...]], F: list[int], P: list[tuple[int, int]]) -> float:
    """Average-case EV of items F and pairs P under ``bases`` (section 4.2, Eq. 4), up to 2/(eps N)^2.

    One basis covering X gives w^2 * 2^{|B|-|X|}; several are combined by inverse-variance weighting
    (lines 21-23). Infinite if some element is not covered.
    """
    if not F:
        return 0.0
    qa, qb, qlen, local = _queries(F, P)
    A = _membership(bases, local, len(F))
    sizes = A.sum(axis=0).astype(np.float64)
    cov = A[qa] & A[qb]
    prec = np.where(cov, np.exp2(qlen[:, None] - sizes[None, :]), 0.0).sum(axis=1)
    if (prec <= 0).any():
        return math.inf
    return float(len(bases) ** 2 * np.mean(1.0 / prec))


def _split_long(clique: list[int], cap: int) -> list[tuple[int, ...]]:
    """A clique longer than the cap is cut into consecutive chunks of at most ``cap`` items (the paper is silent)."""
    clique = sorted(clique)
    n_parts = -(-len(clique) // cap)
    return [tuple(part.tolist()) for part in np.array_split(np.asarray(clique), n_parts)]


def construct_basis_set(F: list[int], P: list[tuple[int, int]], *, max_length: int = 12) -> list[tuple[int, ...]]:
    """ConstructBasisSet (Algorithm 2): maximal cliques of (F, P) (networkx Bron-Kerbosch), greedy
    EV-reducing merges of those cliques, then redistribution of the small bases of items outside P.

    Lines 2-3: B1 = maximal cliques of size >= 2; B2 = the items of F in no pair of P, in groups of 3.
    Line 4: repeatedly merge the two bases of B1 whose merge lowers the average EV most (merges longer
    than ``max_length`` are not considered). Line 5: repeatedly drop the basis of B2 whose items, moved
    one at a time to the currently smallest basis, lower the EV most. Deterministic: items and cliques
    are sorted; ties go to the lowest index.
    """
    F = [int(i) for i in F]
    P = [tuple(sorted((int(a), int(b)))) for a, b in P]
    import networkx as nx  # imported here: it is slow to import and only this step needs it

    graph = nx.Graph()
    graph.add_edges_from(P)
    B1: list[tuple[int, ...]] = []
    for clique in sorted((sorted(c) for c in nx.find_cliques(graph)), key=lambda c: (-len(c), c)):
        if len(clique) >= 2:
            B1.extend(_split_long(clique, max_length) if len(clique) > max_length else [tuple(clique)])
    in_pairs = {i for pair in P for i in pair}
    singles = sorted(i for i in F if i not in in_pairs)
    B2 = [tuple(singles[j : j + 3]) for j in range(0, len(singles), 3)]
    if not F:
        return B1 + B2
    B1 = _greedy_merge(B1, B2, F, P, max_length)
    return _redistribute(B1, B2, F, P, max_length)


def _greedy_merge(B1: list[tuple[int, ...]], B2: list[tuple[int, ...]], F: list[int], P: list[tuple[int, int]],
                  cap: int) -> list[tuple[int, ...]]:
    qa, qb, qlen, local = _queries(F, P)
    while len(B1) >= 2:
        bases = B1 + B2
        w = len(bases)
        A = _membership(bases, local, len(F))
        sizes = A.sum(axis=0).astype(np.float64)
        prec_each = np.where(A[qa] & A[qb], np.exp2(qlen[:, None] - sizes[None, :]), 0.0)
        total = prec_each.sum(axis=1)
        with np.errstate(divide="ignore"):  # an element left uncovered by a split clique counts as infinite EV
            current = w**2 * float(np.mean(1.0 / total))
        n1 = len(B1)
        A1 = A[:, :n1]
        inter = A1.T.astype(np.int64) @ A1.astype(np.int64)
        union = sizes[:n1, None] + sizes[None, :n1] - inter
        Aa, Ab = A1[qa], A1[qb]
        ev = np.empty((n1, n1), dtype=np.float64)
        step = max(1, int(2e7 // max(1, qa.size * n1)))  # bound the (|Q|, rows, n1) block in memory
        for lo in range(0, n1, step):
            hi = min(n1, lo + step)
            cov_u = (Aa[:, lo:hi, None] | Aa[:, None, :]) & (Ab[:, lo:hi, None] | Ab[:, None, :])  # q in B_i u B_j
            merged = np.where(cov_u, np.exp2(qlen[:, None, None] - union[None, lo:hi, :]), 0.0)
            new_total = (total[:, None, None] - prec_each[:, lo:hi, None] - prec_each[:, None, :n1]) + merged
            with np.errstate(divide="ignore"):
                ev[lo:hi] = (w - 1) ** 2 * np.mean(1.0 / new_total, axis=0)
        valid = np.triu(np.ones((n1, n1), dtype=bool), 1) & (union <= cap)
        ev = np.where(valid, ev, np.inf)
        flat = int(np.argmin(ev))
        i, j = divmod(flat, n1)
        if not (ev[i, j] < current * (1.0 - 1e-12)):
            break
        new_basis = tuple(sorted(set(B1[i]) | set(B1[j])))
        B1 = [b for t, b in enumerate(B1) if t not in (i, j)] + [new_basis]
    return B1


def _move_items(bases: list[tuple[int, ...]], items: tuple[int, ...], cap: int) -> list[tuple[int, ...]] | None:
    sets = [list(b) for b in bases]
    for item in items:
        sizes = [len(s) if len(s) < cap else math.inf for s in sets]
        if not sets or min(sizes) == math.inf:
            return None
        target = int(np.argmin(sizes))
        sets[target].append(item)
    return [tuple(sorted(s)) for s in sets]


def _redistribute(B1: list[tuple[int, ...]], B2: list[tuple[int, ...]], F: list[int], P: list[tuple[int, int]],
                  cap: int) -> list[tuple[int, ...]]:
    n1 = len(B1)
    bases = B1 + B2
    while len(bases) - n1 >= 1:
        current = average_error_variance(bases, F, P)
        best, best_ev = None, current * (1.0 - 1e-12)
        for r in range(n1, len(bases)):
            rest = bases[:r] + bases[r + 1 :]
            moved = _move_items(rest, bases[r], cap)
            if moved is None:
                continue
            ev = average_error_variance(moved, F, P)
            if ev < best_ev:
                best, best_ev = moved, ev
        if best is None:
            break
        bases = best  # one basis of B2 fewer; items moved into bases of B1 keep B1's length n1
    return bases


# --- Step 5: BasisFreq (Algorithm 1)

BIN_CUT_Z = 2.0  # _cut_empty_bins: mass below the level larger than this many standard deviations is real ---------------------------------------------------------------------


def combine_estimates(nc1: float, v1: float, nc2: float, v2: float) -> tuple[float, float]:
    """Lines 21-23 of Algorithm 1: (v2*nc1 + v1*nc2)/(v1+v2), with variance v1*v2/(v1+v2)."""
    return (v2 * nc1 + v1 * nc2) / (v1 + v2), v1 * v2 / (v1 + v2)


def basis_bin_counts(db: TransactionDB | TransactionData, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Exact bin counts of every basis (Algorithm 1 lines 7-11): bin m of basis B holds the records whose
    intersection with B is the subset with bit mask m (bit j = the j-th item of B, sorted). Non-private.
    One engine pass (in memory: block by block, :func:`dprelease.data.passes.basis_bin_counts`, or from the
    records' projection onto F when the engine still holds it)."""
    from ..engine.local import as_transaction_data

    return as_transaction_data(db).basis_bin_counts(bases)


def _cut_empty_bins(noisy: np.ndarray, sizes: list[int], scale: float, expected: float,
                    z: float = BIN_CUT_Z) -> np.ndarray:
    """Zero the noisy bins of a basis below the empty-bin level, unless that would drop real mass.

    Level = scale * ln(n_bins / expected) over all bins of all bases. For each basis, the noisy bins below
    the level sum to S; if the bins there were all empty, S would be noise with standard deviation
    sd = sqrt(n_below * Var(DLap(scale))). The cut is applied when S <= z * sd (no evidence of real records
    hidden under the level), and skipped for that basis otherwise (its small bins hold real mass, e.g. MSNBC).
    Post-processing of the noisy bins: no privacy cost.
    """
    out = np.asarray(noisy).copy()
    level = scale * math.log(max(1.0, out.size / expected))
    var = _dlap_variance(scale)
    start = 0
    for size in sizes:
        block = out[start : start + size]
        below = block < level
        mass = float(block[below].sum())
        if mass <= z * math.sqrt(float(below.sum()) * var):
            block[below] = 0
        start += size
    return out


def _superset_sums(bins: np.ndarray, length: int) -> np.ndarray:
    """nc[X] = sum of bins of supersets Y of X within the basis (line 15), by a zeta transform."""
    table = np.asarray(bins, dtype=np.float64).copy()
    for bit in range(length):
        view = table.reshape(-1, 2, 1 << bit)
        view[:, 0, :] += view[:, 1, :]
    return table


def basis_freq(db: TransactionDB | TransactionData, bases: list[tuple[int, ...]], epsilon: float, *,
               scope: BudgetScope, noise: NoiseSource, bin_threshold: float = 0.0,
               bin_cut: float | None = None) -> BasisFreqResult:
    """BasisFreq (Algorithm 1) up to line 26: noisy counts of every subset of every basis.

    Lines 2-11: one noisy count per bin, all bins of all w bases in one vector with L1 sensitivity w
    (a record falls in exactly one bin per basis; Theorem 1), so noise DLap(w/eps) -- the integer
    analogue of the paper's Lap(w/eps). Lines 12-26 (post-processing): superset sums, then the
    inverse-variance combination of estimates from different bases (lines 21-23), with the relative
    variance 2^{|B|-|X|} of Eq. 4.

    ``bin_threshold`` > 0 (an improvement, not in the paper): noisy bins below ``bin_threshold * w/eps``
    are set to 0 before the superset sums (post-processing). Most bins of a long basis are empty, and
    their noise otherwise piles up in every superset sum.

    ``bin_cut`` (improvement, on by default): noisy bins below (w/eps) * ln(n_bins / bin_cut) are set to 0,
    the level that about ``bin_cut`` of the n_bins bins (all bins of all bases) would pass if all were empty
    (P(DLap(b) >= x) <= exp(-x/b)). Only the few bins that hold real records survive, so the superset sums
    no longer add the noise of thousands of empty bins. Post-processing of the noisy bins.
    """
    bases = [tuple(sorted(int(i) for i in b)) for b in bases]
    w = len(bases)
    if w == 0:
        raise ParameterError("BasisFreq needs at least one basis")
    exact = basis_bin_counts(db, bases)
    sizes = [b.size for b in exact]
    noisy = noisy_counts(np.concatenate(exact), epsilon, scope=scope, noise=noise, sensitivity=w,
                         label="PrivBasis step 5: BasisFreq bins (alpha3)")
    del exact
    if bin_threshold > 0.0:
        noisy = np.where(noisy < bin_threshold * w / epsilon, 0, noisy)
    if bin_cut is not None:
        noisy = _cut_empty_bins(noisy, sizes, w / epsilon, bin_cut)
    groups = _subset_groups(bases)
    ncs = []
    start = 0
    for basis, size in zip(bases, sizes):
        ncs.append(_superset_sums(noisy[start : start + size], len(basis)))
        start += size
    nc = np.concatenate(ncs)
    # Group the estimates of the same itemset; inverse-variance weighting equals repeated lines 21-23.
    inverse, v = groups.inverse, groups.entry_variance
    prec = np.bincount(inverse, weights=1.0 / v, minlength=groups.n_groups)
    comb = np.bincount(inverse, weights=nc / v, minlength=groups.n_groups) / prec
    comb_v = 1.0 / prec
    n_estimate = float(comb[groups.empty_group])
    return BasisFreqResult(groups.itemsets, comb[groups.nonempty], comb_v[groups.nonempty], n_estimate)


@dataclass(frozen=True, eq=False)
class _SubsetGroups:
    """The subsets of all bases, concatenated basis by basis in mask order, grouped into distinct itemsets.

    ``inverse[e]`` is the group of entry e; ``entry_variance[e]`` = 2^{|B|-|X|} (Eq. 4); ``itemsets`` lists the
    non-empty groups (``nonempty``) in a fixed order of bit keys over the sorted union of basis items.
    """

    inverse: np.ndarray
    entry_variance: np.ndarray
    n_groups: int
    empty_group: int
    nonempty: np.ndarray
    itemsets: list[tuple[int, ...]]


def _subset_groups(bases: list[tuple[int, ...]]) -> _SubsetGroups:
    union = sorted({i for b in bases for i in b})
    gidx = {item: j for j, item in enumerate(union)}
    words = max(1, -(-len(union) // 63))
    keys, vs, lens = [], [], []
    for basis in bases:
        L = len(basis)
        masks = np.arange(1 << L, dtype=np.int64)
        popcount = np.zeros(masks.size, dtype=np.int64)
        key = np.zeros((masks.size, words), dtype=np.int64)
        for j, item in enumerate(basis):
            bit = (masks >> j) & 1
            popcount += bit
            g = gidx[item]
            key[:, g // 63] |= bit << (g % 63)
        keys.append(key)
        vs.append(np.exp2(L - popcount).astype(np.float64))
        lens.append(popcount)
    key = np.concatenate(keys)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    glen = np.zeros(uniq.shape[0], dtype=np.int64)
    glen[inverse] = np.concatenate(lens)
    empty = glen == 0
    nonempty = np.flatnonzero(~empty)
    # each group's items: the set bits of its key, word by word (row-major nonzero: ascending within a group)
    shifts = np.arange(63, dtype=np.int64)
    held = np.concatenate([(uniq[nonempty, w_][:, None] >> shifts) & 1 for w_ in range(words)], axis=1)
    held = held[:, : len(union)].astype(bool)
    rows, cols = np.nonzero(held)
    labels = np.asarray(union, dtype=np.int64)[cols].tolist()
    ends = np.cumsum(np.bincount(rows, minlength=nonempty.size)).tolist()
    itemsets: list[tuple[int, ...]] = []
    begin = 0
    for end in ends:
        itemsets.append(tuple(labels[begin:end]))
        begin = end
    return _SubsetGroups(inverse, np.concatenate(vs), int(uniq.shape[0]), int(np.flatnonzero(empty)[0]), nonempty,
                         itemsets)


def relative_variances(bases: list[tuple[int, ...]]) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every itemset BasisFreq estimates and its relative variance (Eq. 4 combined over the bases holding it,
    lines 21-23), in units of one noisy bin's variance. A public function of the bases."""
    groups = _subset_groups([tuple(sorted(int(i) for i in b)) for b in bases])
    prec = np.bincount(groups.inverse, weights=1.0 / groups.entry_variance, minlength=groups.n_groups)
    return groups.itemsets, 1.0 / prec[groups.nonempty]


def select_top_k(result: BasisFreqResult, k: int) -> list[int]:
    """Line 27: the k itemsets with the highest combined noisy counts (ties: shorter first, then a fixed
    order of the itemsets' bit keys over the sorted union of basis items)."""
    lengths = np.fromiter((len(s) for s in result.itemsets), dtype=np.int64, count=len(result.itemsets))
    order = np.lexsort((lengths, -result.counts))  # primary: count desc; then length asc; then key order (stable)
    return order[: min(k, order.size)].tolist()


# --- Algorithm 3 -----------------------------------------------------------------------------------------


@records_run_start
def privbasis(db: TransactionDB | TransactionData, universe: Universe, k: int, epsilon: float, *, noise: NoiseSource,
              params: PrivBasisParams = PrivBasisParams()) -> ItemsetRelease:
    """PrivBasisMain (Algorithm 3): the top-k itemsets of ``db`` with noisy counts, under ``epsilon``-DP.

    Budget split (every branch sums to exactly ``epsilon``; each share is a public parameter or a function of
    the noisy lambda and of the noisy bound l1, both already paid for):

    * alpha1*eps: lambda (GetLambda, line 2).
    * lambda <= 12 (one basis): a2*eps to the items (line 4), a2 = single_alpha2 (default 0.2) or alpha2
      (faithful 0.4); BasisFreq gets (1 - alpha1 - a2)*eps (line 5).
    * lambda > 12: a23*eps to steps 2-3 and (1 - alpha1 - a23)*eps to BasisFreq (line 15), where
      - faithful: a23 = multi_alpha2 or alpha2; beta1 = a23*lambda/(lambda+lambda2) to the items and
        beta2 = a23 - beta1 to the pairs (lines 9-13);
      - bounded selection (default): bound_alpha*eps for l1 (private quantile of |t|). Short records
        (l1 <= bounded_ratio*lambda): a23 = bounded_alpha2 (0.55): bound_alpha*eps more for l2 (private
        quantile of C(|t & F|, 2)), and r = a23 - 2*bound_alpha split item_share (0.6) to the items' Laplace
        vector and the rest to the pairs' Laplace vector. Long records: a23 = multi_alpha2 or alpha2 (0.4) and
        the paper's steps 2-3 with r = a23 - bound_alpha.
    """
    eps = check_epsilon(epsilon)
    params.validate()
    db = as_transaction_data(db)  # the data passes below are the engine's (dprelease.engine)
    if db.n_items != universe.size:
        raise ParameterError("the database and the universe disagree on the number of items")
    if int(k) < 1:
        raise ParameterError(f"-k must be a whole number > 0, got {k}")
    k = int(k)
    accountant = BudgetAccountant(eps)
    scope = accountant.root()
    trace: dict[str, object] = {}
    split: dict[str, object] = {}
    with db.focused(focus_items(db.item_supports(), _k1(k, params))):
        bases, eps5 = _steps_1_to_4(db, k, eps, params, scope, noise, split, trace)
        # Step 5: BasisFreq (or the direct bounded counts) and the top-k selection.
        result, count_sd = _step_5(db, bases, eps5, params, scope, noise, split)
    top = select_top_k(result, k)
    counts = result.counts[top]
    n_hat = result.n_estimate
    # post-processing: a frequency is a share of the (noisy) records, so it lies in [0, 1]
    freqs = np.clip(counts / n_hat, 0.0, 1.0) if n_hat > 0 else np.full(counts.size, np.nan)
    trace["n_estimate"] = n_hat
    sd = count_sd[top]
    release_info: dict[str, object] = {"rows": len(top), "requested_k": k,
                                       "count_noise_sd_at_k": float(sd[-1]) if sd.size else None}
    notes = _short_release(release_info, len(top), len(result.itemsets), k, db.n_items, params)
    manifest_parts = build_manifest(  # the API's release carries the full manifest (RNG mode included)
        "PrivBasis", epsilon=eps, noise=noise, accountant=accountant, domain=universe.describe(),
        parameters=_manifest_parameters(k, params), release=release_info, notes=notes,
        # The split depends on the noisy lambda and the noisy bound l1 only (post-processing of DP outputs).
        budget_split={**split, "reference": "PrivBasis sec. 4.4 and Algorithm 3 (alpha1, alpha2 -> beta1/beta2, "
                                            "alpha3); improvements: docs/privbasis.md"},
        privacy_unit="record", neighbours=NEIGHBOURS_LINE,
    )
    # k past its useful range (public rules of dprelease.limits; the CLI also says them on stderr)
    add_notes(manifest_parts, privbasis_range_notes(k, universe.size))
    errors = _count_errors(counts, sd)
    manifest_parts["uncertainty"] = manifest_section(
        accounts_for=errors.label, columns=("sd", "low", "high"),
        formula="sd = sqrt(relative variance (Eq. 4, combined over the bases) x Var(DLap(w/eps5))); "
                "[max(0, count - z sd), count + z sd], z = ln(20)/sqrt(2) = 2.12 (a sum of Laplace terms)",
        ignores="the empty-bin cut (bins set to 0) and the top-k selection (the k highest noisy counts are "
                "biased upward); coverage measured in docs/accuracy.md")
    return ItemsetRelease([result.itemsets[t] for t in top], counts, freqs, universe, manifest=manifest_parts,
                          trace=trace, accountant=accountant, errors=errors)


def _k1(k: int, params: PrivBasisParams) -> int:
    """k1 = ceil(k * eta) (Algorithm 3, line 20): the rank whose exact support step 1 compares lambda with."""
    return int(math.ceil(k * params.eta - 1e-9))


FOCUS_FACTOR = 2  # the passes of steps 1-5 are focused on the items down to the (FOCUS_FACTOR * k1)-th support


def focus_items(item_counts: np.ndarray, k1: int) -> np.ndarray:
    """The items that the passes of steps 1-5 mostly touch: those at least as frequent as the
    (``FOCUS_FACTOR`` * k1)-th item (:meth:`~dprelease.engine.base.TransactionData.focused`; speed only, every
    count is the same). Step 1's miner counts pairs of items above the k1-th support, all among them; F and
    the bases, picked by noisy counts, usually are, and a pass over an item outside them reads the whole data."""
    present = item_counts[item_counts > 0]
    n = FOCUS_FACTOR * int(k1)
    if present.size <= n:
        return np.flatnonzero(item_counts > 0)
    cut = np.partition(present, present.size - n)[present.size - n]
    return np.flatnonzero(item_counts >= cut)


def _steps_1_to_4(db: TransactionData, k: int, eps: float, params: PrivBasisParams, scope: BudgetScope,
                  noise: NoiseSource, split: dict[str, object], trace: dict[str, object]
                  ) -> tuple[list[tuple[int, ...]], float]:
    """Steps 1-4 of Algorithm 3: lambda, the frequent items (and pairs), the bases; returns the bases and the
    budget left for step 5 (the whole minus what steps 1-3 spent, fixed in advance on every path)."""
    item_counts = db.item_supports()
    # Step 1 (alpha1 * eps): lambda. k1 = ceil(k * eta) (line 20); its count is non-private and stays inside.
    k1 = _k1(k, params)
    c_k1 = kth_support(db, k1)
    max_lambda = k1 if params.lambda_range == "k1" else None
    lam = get_lambda(item_counts, c_k1, db.n_records, params.alpha1 * eps, scope=scope, noise=noise,
                     max_lambda=max_lambda)
    trace["lambda_drawn"] = lam
    split["step1_lambda"] = params.alpha1 * eps
    if params.exact_k:
        # Post-processing (public k): a single basis of lambda items holds 2^lambda - 1 itemsets, so at least
        # ceil(log2(k+1)) items are needed to publish k (a dense dataset can draw lambda = 1).
        lam = max(lam, min(db.n_items, int(math.ceil(math.log2(k + 1)))))
    lam = min(lam, db.n_items)  # never more items than the universe holds
    trace["lambda"] = lam
    trace["regime"] = "single"
    if lam <= params.single_basis_max:
        # Lines 3-5: one basis of the lambda most frequent items; a2 of eps to the items.
        a2 = params.alpha2 if params.single_alpha2 is None else params.single_alpha2
        F = get_freq_elements(item_counts, lam, a2 * eps, scope=scope, noise=noise,
                              label="PrivBasis step 2: frequent items (alpha2)")
        bases = [tuple(sorted(F.tolist()))]
        split["step2_items"] = a2 * eps
        eps5 = (1.0 - params.alpha1 - a2) * eps
        trace.update(lambda2=0, items=F.tolist(), pairs=[])
    else:
        F, P, a23 = _steps_2_3(db, item_counts, lam, k, k1, eps, params, scope, noise, split, trace)
        eps5 = (1.0 - params.alpha1 - a23) * eps
        if trace["regime"] == "multi-dense-ranked":
            bases = rank_bases(F.tolist(), params.max_basis_length)
        else:
            bases = construct_basis_set(F.tolist(), P, max_length=params.max_basis_length)
    if params.exact_k:
        bases = cover_at_least(bases, k, params.max_basis_length)
    trace["bases"] = bases
    return bases, eps5


def _manifest_parameters(k: int, params: PrivBasisParams) -> dict[str, object]:
    return {"k": k, "alpha1": params.alpha1, "alpha2": params.alpha2, "alpha3": params.alpha3,
            "eta": params.eta, "single_basis_max": params.single_basis_max,
            "max_basis_length": params.max_basis_length, "lambda2_rule": params.lambda2_rule,
            "bin_threshold": params.bin_threshold, "item_share": params.item_share,
            "lambda_range": params.lambda_range, "multi_alpha2": params.multi_alpha2,
            "single_alpha2": params.single_alpha2, "bounded_selection": params.bounded_selection,
            "bound_quantile": params.bound_quantile, "bound_alpha": params.bound_alpha,
            "bounded_alpha2": params.bounded_alpha2, "bounded_ratio": params.bounded_ratio,
            "selection_margin": params.selection_margin, "bin_cut": params.bin_cut,
            "exact_k": params.exact_k, "faithful": params.is_faithful}


def _short_release(release_info: dict[str, object], rows: int, covered: int, k: int, n_items: int,
                   params: PrivBasisParams) -> list[str] | None:
    """When fewer than k rows are published, the reason (public: the number of itemsets the public bases cover,
    and |I|) in ``release_info`` and as a note."""
    if rows >= k:
        return None
    reason = f"the bases cover only {covered} itemsets"
    if n_items < 63 and (1 << n_items) - 1 < k:
        reason = f"the universe has {n_items} items, so only {(1 << n_items) - 1} itemsets exist"
    elif not params.exact_k:
        reason += " (--no-exact-k or --faithful: the drawn lambda and bases are kept)"
    release_info["short_reason"] = reason
    return [f"privbasis released {rows} itemsets, fewer than the {k} requested: {reason}"]


def _count_errors(counts: np.ndarray, sd: np.ndarray) -> Intervals:
    """Each count's 95 % interval from its noise sd (post-processing of public scales: no privacy cost)."""
    half = sum_multiplier() * np.asarray(sd, dtype=np.float64)
    values = np.asarray(counts, dtype=np.float64)
    return Intervals(values, np.asarray(sd, dtype=np.float64), np.maximum(values - half, 0.0), values + half,
                     label="the discrete Laplace noise of the BasisFreq bins summed into each count")


def _step_5(db: TransactionDB, bases: list[tuple[int, ...]], eps5: float, params: PrivBasisParams,
            scope: BudgetScope, noise: NoiseSource, split: dict[str, object]) -> tuple[BasisFreqResult, np.ndarray]:
    """Step 5 with eps5: BasisFreq; returns the estimates and each count's noise standard deviation, a public
    function of the bases and eps5 (Eq. 4 and the DLap scale w/eps5)."""
    split["step5_basisfreq"] = eps5
    result = basis_freq(db, bases, eps5, scope=scope, noise=noise, bin_threshold=params.bin_threshold,
                        bin_cut=params.bin_cut)
    return result, np.sqrt(result.variances * _dlap_variance(len(bases) / eps5))


def _dlap_variance(scale: float) -> float:
    """Variance of the discrete Laplace with scale b: 2t/(1-t)^2, t = exp(-1/b)."""
    t = math.exp(-1.0 / scale)
    return 2.0 * t / (1.0 - t) ** 2


def _steps_2_3(db: TransactionDB | TransactionData, item_counts: np.ndarray, lam: int, k: int, k1: int, eps: float,
               params: PrivBasisParams, scope: BudgetScope, noise: NoiseSource, split: dict[str, object],
               trace: dict[str, object]) -> tuple[np.ndarray, list[tuple[int, int]], float]:
    """Steps 2-3 when lambda > 12; returns F, P and a23: they spent exactly a23 * eps (split in
    :func:`privbasis`'s docstring). ``trace["regime"]`` says which bases step 4 builds."""
    a23 = params.alpha2 if params.multi_alpha2 is None else params.multi_alpha2  # chosen after the noisy lambda
    if not params.bounded_selection:
        trace["regime"] = "multi"
        return _paper_steps(db, item_counts, lam, k, a23, eps, params, scope, noise, split, trace)
    # l1: private quantile of the record lengths (bound_alpha * eps). Sparse records (l1 < lambda): a Laplace
    # vector of all item counts, each record adding at most l1 in all, is less noisy than lambda rounds of
    # the exponential mechanism (scale l1/eps against lambda/eps).
    eps_b = params.bound_alpha * eps
    # Candidates 1..lambda (public after step 1): any l1 above 2/3 lambda leads to the same choice.
    lengths, n_of_length = db.length_histogram()  # one engine pass (the quality needs only the histogram)
    ell1 = private_quantile_counts(lengths, n_of_length, params.bound_quantile, lam, eps_b, scope=scope,
                                   noise=noise, label="PrivBasis step 2a: item contribution bound l1 (bound_alpha)")
    split["step2a_item_bound"] = eps_b
    trace["ell1"] = ell1
    if ell1 <= params.bounded_ratio * lam:
        rest = params.bounded_alpha2 - params.bound_alpha  # chosen after the noisy lambda and the noisy l1
        F, P, used = _bounded_steps(db, lam, k1, ell1, rest, eps, params, scope, noise, split, trace)
        return F, P, params.bound_alpha + used
    trace["regime"] = "multi-dense"
    F, P, used = _paper_steps(db, item_counts, lam, k, a23 - params.bound_alpha, eps, params, scope, noise, split,
                              trace, ell1=ell1 if params.dense_bases else None)
    return F, P, params.bound_alpha + used


def _paper_steps(db: TransactionDB | TransactionData, item_counts: np.ndarray, lam: int, k: int, rest: float,
                 eps: float, params: PrivBasisParams, scope: BudgetScope, noise: NoiseSource,
                 split: dict[str, object], trace: dict[str, object], ell1: int | None = None
                 ) -> tuple[np.ndarray, list[tuple[int, int]], float]:
    """Lines 7-14 with at most ``rest * eps``: lambda2 by the heuristic (capped at C(lambda, 2)), the items by
    the exponential mechanism with beta1, the pairs with beta2; returns F, P and the share spent.

    With ``ell1`` (long records, the default): bound_alpha of ``rest`` goes to a density test after the items
    (:func:`_dense_over`). Where records hold most of F, every pair of F is frequent and the pairs' budget
    would only pick among near ties (random cliques, bases that miss the top itemsets): it is not spent (it
    goes to BasisFreq), and step 4 builds the bases from the items' noisy rank (:func:`rank_bases`; regime
    "multi-dense-ranked"). A Laplace re-count of the items with that budget was measured too: higher recall
    by 0.02, FNR no better, and a larger noise sd at the k-th count."""
    if ell1 is not None:
        rest -= params.bound_alpha  # the density test
    lam2 = min(lambda2_heuristic(lam, k, params.eta, params.lambda2_rule), lam * (lam - 1) // 2)
    share = lam / (lam + lam2) if (params.item_share is None or lam2 == 0) else params.item_share
    beta1 = rest * share
    beta2 = rest - beta1
    F = get_freq_elements(item_counts, lam, beta1 * eps, scope=scope, noise=noise,
                          label="PrivBasis step 2: frequent items (beta1)")
    F_sorted = np.sort(F)
    split["step2_items"] = beta1 * eps
    if ell1 is not None and _dense_over(db, F_sorted, lam, eps, params, scope, noise, split, trace):
        # F in the exponential mechanism's pick order is F by noisy rank (post-processing); the pairs' budget
        # is not spent and goes to BasisFreq.
        trace.update(regime="multi-dense-ranked", lambda2=0, items=F.tolist(), pairs=[])
        return F, [], rest - beta2 + params.bound_alpha
    P: list[tuple[int, int]] = []
    if lam2 > 0:
        pc = pair_supports(db, F_sorted)
        iu, ju = np.triu_indices(F_sorted.size, 1)
        picked = get_freq_elements(pc[iu, ju], lam2, beta2 * eps, scope=scope, noise=noise,
                                   label="PrivBasis step 3: frequent pairs (beta2)")
        P = [(int(F_sorted[iu[t]]), int(F_sorted[ju[t]])) for t in picked.tolist()]
    split["step3_pairs"] = beta2 * eps
    trace.update(lambda2=lam2, items=F.tolist(), pairs=P)
    return F, P, rest + (params.bound_alpha if ell1 is not None else 0.0)


DENSE_QUANTILE = 0.5  # long records: F counts as dense when the private median of |t & F| exceeds 2/3 lambda


def _dense_over(db: TransactionDB | TransactionData, F_sorted: np.ndarray, lam: int, eps: float,
                params: PrivBasisParams, scope: BudgetScope, noise: NoiseSource, split: dict[str, object],
                trace: dict[str, object]) -> bool:
    """Whether a typical record holds most of F: m = a private median of |t & F| over 1..lambda
    (bound_alpha * eps, :func:`private_quantile`), dense when m > bounded_ratio * lambda. Where it holds, the
    top itemsets are combinations of F's most frequent items (an itemset's support is at most its rarest
    item's, and every pair of F is frequent), not cliques of a few pairs picked among near ties."""
    m_values, m_records = as_transaction_data(db).projected_length_histogram(F_sorted)
    eps_b = params.bound_alpha * eps
    m = private_quantile_counts(m_values, m_records, DENSE_QUANTILE, lam, eps_b, scope=scope, noise=noise,
                                label="PrivBasis step 2b: records' share of F, density test (bound_alpha)")
    split["step2b_density"] = eps_b
    trace["f_median"] = m
    return m > params.bounded_ratio * lam


def rank_bases(ranked: list[int], cap: int) -> list[tuple[int, ...]]:
    """Bases for data dense over F, from F in noisy rank order (post-processing of the exponential
    mechanism's pick order): the ``cap`` first items form one basis; the others, in chunks, each join the
    cap // 2 first items (so an item past the cap is counted with the most frequent ones, its likely
    partners in a top itemset)."""
    ranked = [int(i) for i in ranked]
    bases = [tuple(sorted(ranked[:cap]))]
    hub = ranked[: cap // 2]
    width = cap - len(hub)
    rest = ranked[cap:]
    for lo in range(0, len(rest), width):
        bases.append(tuple(sorted(hub + rest[lo : lo + width])))
    return bases


FIRST_SHARE = 0.1  # adaptive bounded selection: share of the items' budget for the first count
BOUNDED_ITEM_SHARE = 0.6  # bounded selection: share of the items' and pairs' budget that goes to the items


def _bounded_steps(db: TransactionData, lam: int, k1: int, ell1: int, rest: float, eps: float,
                   params: PrivBasisParams, scope: BudgetScope, noise: NoiseSource, split: dict[str, object],
                   trace: dict[str, object]) -> tuple[np.ndarray, list[tuple[int, int]], float]:
    """Steps 2-3 for short records, with at most ``rest * eps``; returns F, P and the share actually spent.

    F = the lambda largest noisy bounded item counts; theta = the smallest of them (a noisy stand-in for
    c_{k1}: lambda was drawn where the lambda-th item count is near c_{k1}); P = the pairs of F whose noisy
    bounded count reaches theta (at most k1), so lambda2 = |P| comes from the noisy pair counts instead of
    a formula in lambda.

    Adaptive budget (``adaptive_selection``): the items are first counted with ``first_share`` of their budget;
    when the noisy theta is at least ``margin`` noise scales (theta >= margin * l1/eps_1), the selection is
    already clear and the rest of the items' budget is not spent; otherwise a second, independent count with
    the rest is averaged in (inverse-variance weights). The pairs get only what makes their noise scale
    theta/margin (never more than their share). What is not spent goes to BasisFreq. Every choice is a
    function of noisy values already paid for; the total is fixed in advance (the leftover is spent in
    step 5), so sequential composition holds on every path.
    """
    eps_b = params.bound_alpha * eps
    rest -= params.bound_alpha
    item_share = BOUNDED_ITEM_SHARE if params.item_share is None else params.item_share
    eps_items = rest * item_share * eps
    eps_pairs = rest * eps - eps_items
    counts = bounded_item_counts(db, ell1)
    margin = params.selection_margin
    if margin is not None:
        eps_1 = eps_items * FIRST_SHARE
        noisy_items = noisy_values(counts, eps_1, sensitivity=float(ell1), scope=scope, noise=noise,
                                   label="PrivBasis step 2: frequent items, bounded Laplace (first count)")
        theta = float(np.sort(noisy_items)[::-1][lam - 1])
        if theta >= margin * ell1 / eps_1:
            eps_items_used = eps_1
        else:
            eps_2 = eps_items - eps_1
            second = noisy_values(counts, eps_2, sensitivity=float(ell1), scope=scope, noise=noise,
                                  label="PrivBasis step 2: frequent items, bounded Laplace (second count)")
            noisy_items = (eps_1**2 * noisy_items + eps_2**2 * second) / (eps_1**2 + eps_2**2)
            eps_items_used = eps_items
    else:
        noisy_items = noisy_values(counts, eps_items, sensitivity=float(ell1), scope=scope, noise=noise,
                                   label="PrivBasis step 2: frequent items, bounded Laplace")
        eps_items_used = eps_items
    F = np.argsort(-noisy_items, kind="stable")[:lam]
    theta = float(noisy_items[F[-1]])
    F_sorted = np.sort(F)
    n_pairs = F_sorted.size * (F_sorted.size - 1) // 2
    contributions, n_of_contribution = pair_contribution_counts(db, F_sorted)
    ell2 = private_quantile_counts(contributions, n_of_contribution, params.bound_quantile,
                                   max(1, min(n_pairs, k1)), eps_b, scope=scope, noise=noise,
                                   label="PrivBasis step 3a: pair contribution bound l2 (bound_alpha)")
    if margin is not None and theta > 0:
        eps_pairs = min(eps_pairs, margin * ell2 / theta)
    noisy_pairs = noisy_values(bounded_pair_counts(db, F_sorted, ell2), eps_pairs, sensitivity=float(ell2),
                               scope=scope, noise=noise, label="PrivBasis step 3: frequent pairs, bounded Laplace")
    picked = select_by_threshold(noisy_pairs, theta, min(n_pairs, k1))
    iu, ju = np.triu_indices(F_sorted.size, 1)
    P = [(int(F_sorted[iu[t]]), int(F_sorted[ju[t]])) for t in picked.tolist()]
    split.update(step2_items=eps_items_used, step3a_pair_bound=eps_b, step3_pairs=eps_pairs)
    trace.update(regime="multi-bounded", ell2=ell2, theta=theta, lambda2=len(P), items=F.tolist(), pairs=P)
    used = params.bound_alpha + (eps_items_used + eps_pairs) / eps
    return F, P, used
