"""PrivBasis (Li, Qardaji, Su, Cao, PVLDB 2012): top-k frequent itemsets under epsilon-DP.

Algorithm 3 with its parts: GetLambda, GetFreqElements (items, then pairs), the lambda_2 heuristic,
ConstructBasisSet (Algorithm 2) and BasisFreq (Algorithm 1). Every data-dependent value leaves
through a mechanism of :mod:`dprelease.privacy`, charged to one :class:`BudgetAccountant`.

Budget split (section 4.4, "Privacy Budget Allocation"), for a total epsilon:

* alpha1 * eps  -- Step 1, GetLambda (Algorithm 3 line 2);
* alpha2 * eps  -- Steps 2 and 3: all of it to the items when lambda <= 12 (line 4); otherwise
  beta1 = alpha2 * lambda / (lambda + lambda2) to the items and beta2 = alpha2 - beta1 to the pairs
  (lines 9-13); when lambda2 = 0 there are no pairs to select and beta1 = alpha2;
* alpha3 * eps  -- Step 5, BasisFreq (lines 5 and 15: (1 - alpha1 - alpha2) * eps).

Defaults alpha = (0.1, 0.4, 0.5), eta = 1.2, a single basis when lambda <= 12, bases of at most 12 items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..data.transactions import TransactionDB
from ..data.universe import Universe
from ..engine.base import TransactionData
from ..errors import ParameterError
from ..privacy import BudgetAccountant, BudgetScope, NoiseSource, check_epsilon
from ..privacy.mechanisms import exponential_mechanism, exponential_top_k, noisy_counts
from ..release import build_manifest, records_run_start
from .exact import kth_support, pair_supports

__all__ = [
    "PrivBasisParams",
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
    """Algorithmic parameters of Algorithm 3 (paper defaults); all overridable.

    ``lambda2_rule``: ``"sqrt"`` is the heuristic of section 4.4, ``"naive"`` is lambda2 = eta*k - lambda.
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
            raise ParameterError(f"multi_alpha2 must be in (0, 1 - alpha1), got {self.multi_alpha2}")
        if self.lambda_range not in ("k1", "universe"):
            raise ParameterError(f"lambda range must be 'k1' or 'universe', got {self.lambda_range!r}")
        if self.item_share is not None and not (0.0 < self.item_share < 1.0):
            raise ParameterError(f"--item-share must be in (0, 1), got {self.item_share}")
        if self.lambda2_rule not in ("sqrt", "naive"):
            raise ParameterError(f"lambda2 rule must be 'sqrt' or 'naive', got {self.lambda2_rule!r}")


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


@dataclass(frozen=True, eq=False)
class ItemsetRelease:
    """A published list of itemsets (item ids) with noisy counts and frequencies, plus its manifest."""

    itemsets: list[tuple[int, ...]]
    counts: np.ndarray
    frequencies: np.ndarray
    universe: Universe
    manifest: dict[str, object] = field(default_factory=dict)
    trace: dict[str, object] = field(default_factory=dict, repr=False)  # noisy intermediates (tests); never written
    accountant: BudgetAccountant | None = field(default=None, repr=False)


# --- Step 1: GetLambda -----------------------------------------------------------------------------------


def get_lambda(item_counts: np.ndarray, kth_count: int, n_records: int, epsilon: float, *,
               scope: BudgetScope, noise: NoiseSource, max_lambda: int | None = None) -> int:
    """GetLambda (Algorithm 3 lines 18-28): sample lambda in 1..|I| by the exponential mechanism.

    Quality q(D, i) = (1 - |f_{k1} - fitem_i|) * N = N - |c_{k1} - citem_i| (section 4.4, Step 1), where
    citem_i is the i-th largest item count. Adding one record raises N by 1 and c_{k1}, citem_i by 0 or 1,
    so every quality moves the same way (up) by 0, 1 or 2: one-directional with sensitivity 2, hence
    weights exp(eps * q / 2) -- exactly the p[i] of line 24. The text's "sensitivity 1" plus the
    one-direction saving would give exp(eps * q), which is 2*eps-DP (|.| breaks the one-direction
    property of the distance; see docs/privbasis.md, docs/privacy.md and tests/test_neighbours.py).
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


# --- Step 5: BasisFreq (Algorithm 1) ---------------------------------------------------------------------


def combine_estimates(nc1: float, v1: float, nc2: float, v2: float) -> tuple[float, float]:
    """Lines 21-23 of Algorithm 1: (v2*nc1 + v1*nc2)/(v1+v2), with variance v1*v2/(v1+v2)."""
    return (v2 * nc1 + v1 * nc2) / (v1 + v2), v1 * v2 / (v1 + v2)


def basis_bin_counts(db: TransactionDB | TransactionData, bases: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Exact bin counts of every basis (Algorithm 1 lines 7-11): bin m of basis B holds the records whose
    intersection with B is the subset with bit mask m (bit j = the j-th item of B, sorted). Non-private.
    Computed block by block of records (:func:`dprelease.data.passes.basis_bin_counts`)."""
    from ..data.passes import basis_bin_counts as blockwise_basis_bin_counts
    from .exact import unwrap

    db = unwrap(db)
    if isinstance(db, TransactionData):  # another engine: one pass there (dprelease.engine)
        return db.basis_bin_counts(bases)
    return blockwise_basis_bin_counts(db, bases)


def _superset_sums(bins: np.ndarray, length: int) -> np.ndarray:
    """nc[X] = sum of bins of supersets Y of X within the basis (line 15), by a zeta transform."""
    table = np.asarray(bins, dtype=np.float64).copy()
    for bit in range(length):
        view = table.reshape(-1, 2, 1 << bit)
        view[:, 0, :] += view[:, 1, :]
    return table


def basis_freq(db: TransactionDB | TransactionData, bases: list[tuple[int, ...]], epsilon: float, *, scope: BudgetScope,
               noise: NoiseSource, bin_threshold: float = 0.0) -> BasisFreqResult:
    """BasisFreq (Algorithm 1) up to line 26: noisy counts of every subset of every basis.

    Lines 2-11: one noisy count per bin, all bins of all w bases in one vector with L1 sensitivity w
    (a record falls in exactly one bin per basis; Theorem 1), so noise DLap(w/eps) -- the integer
    analogue of the paper's Lap(w/eps). Lines 12-26 (post-processing): superset sums, then the
    inverse-variance combination of estimates from different bases (lines 21-23), with the relative
    variance 2^{|B|-|X|} of Eq. 4.

    ``bin_threshold`` > 0 (an improvement, not in the paper): noisy bins below ``bin_threshold * w/eps``
    are set to 0 before the superset sums (post-processing). Most bins of a long basis are empty, and
    their noise otherwise piles up in every superset sum.
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
    union = sorted({i for b in bases for i in b})
    gidx = {item: j for j, item in enumerate(union)}
    words = max(1, -(-len(union) // 63))
    keys, ncs, vs, lens = [], [], [], []
    start = 0
    for basis, size in zip(bases, sizes):
        L = len(basis)
        nc = _superset_sums(noisy[start : start + size], L)
        start += size
        masks = np.arange(1 << L, dtype=np.int64)
        popcount = np.zeros(masks.size, dtype=np.int64)
        key = np.zeros((masks.size, words), dtype=np.int64)
        for j, item in enumerate(basis):
            bit = (masks >> j) & 1
            popcount += bit
            g = gidx[item]
            key[:, g // 63] |= bit << (g % 63)
        keys.append(key)
        ncs.append(nc)
        vs.append(np.exp2(L - popcount).astype(np.float64))
        lens.append(popcount)
    key = np.concatenate(keys)
    nc = np.concatenate(ncs)
    v = np.concatenate(vs)
    length = np.concatenate(lens)
    # Group the estimates of the same itemset; inverse-variance weighting equals repeated lines 21-23.
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    prec = np.bincount(inverse, weights=1.0 / v, minlength=uniq.shape[0])
    comb = np.bincount(inverse, weights=nc / v, minlength=uniq.shape[0]) / prec
    comb_v = 1.0 / prec
    glen = np.zeros(uniq.shape[0], dtype=np.int64)
    glen[inverse] = length
    empty = glen == 0
    n_estimate = float(comb[empty][0])
    itemsets: list[tuple[int, ...]] = []
    nonempty = np.flatnonzero(~empty)
    for g in nonempty.tolist():
        row = uniq[g]
        members = [union[w_ * 63 + b] for w_ in range(words) for b in range(63)
                   if w_ * 63 + b < len(union) and (int(row[w_]) >> b) & 1]
        itemsets.append(tuple(members))
    return BasisFreqResult(itemsets, comb[nonempty], comb_v[nonempty], n_estimate)


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
    """PrivBasisMain (Algorithm 3): the top-k itemsets of ``db`` with noisy counts, under ``epsilon``-DP."""
    from ..engine.local import as_transaction_data

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
    n = db.n_records
    item_counts = db.item_supports()

    # Step 1 (alpha1 * eps): lambda. k1 = ceil(k * eta) (line 20); its count is non-private and stays inside.
    k1 = int(math.ceil(k * params.eta - 1e-9))
    c_k1 = kth_support(db, k1)
    max_lambda = k1 if params.lambda_range == "k1" else None
    lam = get_lambda(item_counts, c_k1, n, params.alpha1 * eps, scope=scope, noise=noise, max_lambda=max_lambda)
    trace: dict[str, object] = {"lambda": lam}
    split: dict[str, object] = {"step1_lambda": params.alpha1 * eps}

    if lam <= params.single_basis_max:
        # Lines 3-5: one basis of the lambda most frequent items; all of alpha2 to the items.
        F = get_freq_elements(item_counts, lam, params.alpha2 * eps, scope=scope, noise=noise,
                              label="PrivBasis step 2: frequent items (alpha2)")
        bases = [tuple(sorted(F.tolist()))]
        split["step2_items"] = params.alpha2 * eps
        trace.update(lambda2=0, items=F.tolist(), pairs=[])
    else:
        # Lines 7-14: lambda2 by the heuristic, capped at C(lambda, 2); budget beta1/beta2 of alpha2.
        lam2 = min(lambda2_heuristic(lam, k, params.eta, params.lambda2_rule), lam * (lam - 1) // 2)
        share = lam / (lam + lam2) if (params.item_share is None or lam2 == 0) else params.item_share
        alpha2 = params.alpha2 if params.multi_alpha2 is None else params.multi_alpha2  # chosen after the noisy lambda
        beta1 = alpha2 * share
        beta2 = alpha2 - beta1
        F = get_freq_elements(item_counts, lam, beta1 * eps, scope=scope, noise=noise,
                              label="PrivBasis step 2: frequent items (beta1)")
        F_sorted = np.sort(F)
        P: list[tuple[int, int]] = []
        if lam2 > 0:
            pc = pair_supports(db, F_sorted)
            iu, ju = np.triu_indices(F_sorted.size, 1)
            picked = get_freq_elements(pc[iu, ju], lam2, beta2 * eps, scope=scope, noise=noise,
                                       label="PrivBasis step 3: frequent pairs (beta2)")
            P = [(int(F_sorted[iu[t]]), int(F_sorted[ju[t]])) for t in picked.tolist()]
        split["step2_items"] = beta1 * eps
        split["step3_pairs"] = beta2 * eps
        bases = construct_basis_set(F.tolist(), P, max_length=params.max_basis_length)
        trace.update(lambda2=lam2, items=F.tolist(), pairs=P)
    trace["bases"] = bases

    # Step 5 (alpha3 * eps): BasisFreq and the top-k selection.
    eps5 = params.alpha3 * eps
    if lam > params.single_basis_max and params.multi_alpha2 is not None:
        eps5 = (1.0 - params.alpha1 - params.multi_alpha2) * eps
    split["step5_basisfreq"] = eps5
    result = basis_freq(db, bases, eps5, scope=scope, noise=noise, bin_threshold=params.bin_threshold)
    top = select_top_k(result, k)
    counts = result.counts[top]
    n_hat = result.n_estimate
    # post-processing: a frequency is a share of the (noisy) records, so it lies in [0, 1]
    freqs = np.clip(counts / n_hat, 0.0, 1.0) if n_hat > 0 else np.full(counts.size, np.nan)
    trace["n_estimate"] = n_hat
    manifest_parts = build_manifest(  # the API's release carries the full manifest (RNG mode included)
        "PrivBasis", epsilon=eps, noise=noise, accountant=accountant, domain=universe.describe(),
        parameters={"k": k, "alpha1": params.alpha1, "alpha2": params.alpha2, "alpha3": params.alpha3,
                    "eta": params.eta, "single_basis_max": params.single_basis_max,
                    "max_basis_length": params.max_basis_length, "lambda2_rule": params.lambda2_rule,
                    "bin_threshold": params.bin_threshold, "item_share": params.item_share,
                    "lambda_range": params.lambda_range, "multi_alpha2": params.multi_alpha2},
        release={"rows": len(top)},
        # The split depends on the noisy lambda only (post-processing of a DP output).
        budget_split={**split, "reference": "PrivBasis sec. 4.4 and Algorithm 3 (alpha1, alpha2 -> beta1/beta2, alpha3)"},
    )
    return ItemsetRelease([result.itemsets[t] for t in top], counts, freqs, universe, manifest=manifest_parts,
                          trace=trace, accountant=accountant)
