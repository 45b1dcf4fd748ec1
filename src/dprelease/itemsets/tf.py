"""TF: the truncated-frequency method of Bhaskar et al. (KDD 2010), as PrivBasis section 3 describes it.

Candidates U are all itemsets of length <= m over the declared universe, |U| = sum_{i<=m} C(|I|, i) (Eq. 2).
Budget: eps/2 to select k itemsets, eps/2 to release their counts (section 3).

* Truncated counts c^(X) = max(c(X), c_k - gamma*N) with gamma = (4k/(eps N))(ln(k/rho) + ln|U|) (Eq. 3);
  everything is in counts, where gamma*N = (4k/eps)(ln(k/rho) + ln|U|) needs no N.
* Selection, variant ``laplace``: Lap(4k/eps) on every truncated count (= Lap(4k/(eps N)) on frequencies),
  keep the k largest. Variant ``exponential``: k rounds of the exponential mechanism without replacement
  with weights exp(eps * c^(X) / (4k)). Both are eps/2-DP (section 3).
* Only itemsets with count above max(c_k - gamma*N, 0) are enumerated; the others share one truncated
  score and are handled without enumeration: the mechanism draws the top order statistics of their noisy
  scores, and each implicit pick is a uniformly random itemset of U outside the enumerated set.
* Release: Lap(2k/eps) on the k selected counts (eps/2, sensitivity k). To publish frequencies without a
  public N, N is released in the same vector (sensitivity k + 1, so Lap(2(k+1)/eps)); the paper treats N
  as known. When gamma*N >= c_k the truncation prunes nothing ("degenerate", section 3.1): enumeration
  then covers every itemset of U that occurs at all. Whether that happens depends on the data, so the refusal
  is decided from public inputs alone: m >= 3 with |U| > MAX_DEGENERATE_CANDIDATES is always refused.
* One exact pass finds both c_k and the enumerated candidates (:func:`_plan_and_candidates`): for m <= 2,
  c_k comes from item and pair supports and the candidates keep their historical order (seeded releases
  unchanged); for m >= 3 one mining at a lower bound of the threshold serves both, and the candidates are
  in canonical order (length, then item ids) rather than the miner's internal order.
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
from ..privacy import BudgetAccountant, NoiseSource, check_epsilon, uniform_choice
from ..privacy.mechanisms import exponential_top_k_implicit, laplace_top_k_implicit, noisy_values
from ..release import NEIGHBOURS_LINE, add_notes, build_manifest, records_run_start, release_size_note
from .exact import itemset_supports, mine_frequent, pair_supports, top_k_itemsets
from ..release.itemsets import ItemsetRelease

__all__ = ["TFPlan", "candidate_space_size", "tf_gamma_count", "tf_plan", "explicit_candidates", "tf",
           "MAX_DEGENERATE_CANDIDATES", "kth_support_upto_pairs"]

# TF refuses m >= 3 over more candidates than this (public inputs only): when the truncation prunes nothing
# (gamma*N >= f_k*N, data-dependent) every candidate that occurs would have to be enumerated.
MAX_DEGENERATE_CANDIDATES = 5_000_000


def candidate_space_size(n_items: int, m: int) -> int:
    """|U| = sum_{i=1..m} C(|I|, i) (Eq. 2), exact."""
    return sum(math.comb(int(n_items), i) for i in range(1, int(m) + 1))


def tf_gamma_count(k: int, epsilon: float, n_candidates: int, rho: float = 0.9) -> float:
    """gamma * N = (4k/eps)(ln(k/rho) + ln|U|) (Eq. 3, in counts)."""
    return 4.0 * k / epsilon * (math.log(k / rho) + math.log(n_candidates))


@dataclass(frozen=True, slots=True)
class TFPlan:
    """Non-private facts of one TF run (custodian only; never published)."""

    n_candidates: int
    fk_count: int
    gamma_count: float
    floor: float  # truncated score of every non-enumerated candidate: max(c_k - gamma*N, 0)

    @property
    def degenerate(self) -> bool:
        """gamma >= f_k: the truncation prunes nothing (PrivBasis section 3.1)."""
        return self.gamma_count >= self.fk_count


def tf_plan(db: TransactionDB | TransactionData, k: int, epsilon: float, m: int, rho: float = 0.9) -> TFPlan:
    """The plan from the exact top k (by mining; :func:`tf` itself mines once, see :func:`_plan_and_candidates`)."""
    n_cand = candidate_space_size(db.n_items, m)
    top = top_k_itemsets(db, k, max_length=m)
    fk = int(top[-1][1]) if len(top) >= k else 0
    gamma = tf_gamma_count(k, epsilon, n_cand, rho)
    return TFPlan(n_cand, fk, gamma, max(fk - gamma, 0.0))


def _kth_largest(values: np.ndarray, k: int) -> int:
    """The k-th largest of the positive ``values`` (0 if fewer than k are positive)."""
    values = values[values > 0]
    return int(np.partition(values, values.size - k)[values.size - k]) if values.size >= k else 0


def kth_support_upto_pairs(db: TransactionDB | TransactionData, k: int) -> int:
    """c_k over itemsets of length <= 2, exactly, without mining: item supports and one pass of pair supports.

    A pair with support >= c_k has both items at or above the k-th largest item support (c_k is at least
    that), so only those items' pairs are counted.
    """
    db = as_transaction_data(db)
    supports = db.item_supports()
    item_floor = max(_kth_largest(supports, k), 1)
    cand = np.flatnonzero(supports >= item_floor)
    if cand.size < 2:
        return _kth_largest(supports, k)
    if cand.size <= 3000:
        pairs = pair_supports(db, cand)[np.triu_indices(cand.size, 1)]
    else:
        pairs = db.pair_counts(cand)[2]  # the supports of the pairs that occur (an order statistic follows)
    return _kth_largest(np.concatenate([supports, pairs]), k)


def _plan_and_candidates(db: TransactionDB | TransactionData, k: int, epsilon: float, m: int, rho: float
                         ) -> tuple[TFPlan, list[tuple[int, ...]], np.ndarray]:
    """The plan (c_k = f_k*N) and the explicit candidates, with one exact-mining pass.

    m <= 2: c_k from item and pair supports (no mining), then :func:`explicit_candidates` at
    max(c_k - gamma*N, 0) + 1, as always. m >= 3: one mining at a lower bound of that threshold, taken
    from c_k over lengths <= 2 (c_k can only grow with m); c_k is read off the mined itemsets, and the
    candidates are those at or above the threshold, in canonical order (length, then item ids).
    """
    n_cand = candidate_space_size(db.n_items, m)
    gamma = tf_gamma_count(k, epsilon, n_cand, rho)

    def plan_of(fk: int) -> TFPlan:
        return TFPlan(n_cand, fk, gamma, max(fk - gamma, 0.0))

    def threshold(fk: int) -> int:
        return int(math.floor(max(fk - gamma, 0.0))) + 1

    if m <= 2:
        plan = plan_of(kth_support_upto_pairs(db, k) if m == 2 else _kth_largest(db.item_supports(), k))
        return (plan, *explicit_candidates(db, m, threshold(plan.fk_count)))
    c2 = kth_support_upto_pairs(db, k)
    lower = min(threshold(c2), max(c2, 1))  # <= the final threshold, and <= c_k so the top k get mined
    mined = mine_frequent(db, lower, max_length=m)
    counts = np.fromiter((c for _, c in mined), dtype=np.int64, count=len(mined))
    plan = plan_of(_kth_largest(counts, k))
    keep = counts >= threshold(plan.fk_count)
    found = sorted(((s, c) for (s, c), ok in zip(mined, keep.tolist()) if ok), key=lambda p: (len(p[0]), p[0]))
    sets = [s for s, _ in found]
    return plan, sets, np.fromiter((c for _, c in found), dtype=np.int64, count=len(found))


def _refuse_degenerate(n_cand: int, m: int) -> None:
    """Refuse m >= 3 over more than MAX_DEGENERATE_CANDIDATES candidates, whatever the data (public inputs only)."""
    raise ParameterError(
        f"-m {m}: |U| = {n_cand:.3g} itemsets of length <= {m}; when gamma*N >= f_k*N (which depends on the data, "
        f"so it is not checked) TF must enumerate every one that occurs, infeasible beyond "
        f"{MAX_DEGENERATE_CANDIDATES:,} candidates: use -m 2 or less, or a smaller universe"
    )


def explicit_candidates(db: TransactionDB | TransactionData, m: int, min_count: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every itemset of length <= m with support >= ``min_count`` (>= 1), with its support.

    m = 1: item counts; m = 2: one sparse product for the pairs; m >= 3: pyfim.
    """
    min_count = max(1, int(min_count))
    db = as_transaction_data(db)
    supports = db.item_supports()
    items = np.flatnonzero(supports >= min_count)
    sets: list[tuple[int, ...]] = [(int(i),) for i in items.tolist()]
    counts = [supports[items]]
    if m == 2 and items.size >= 2:
        # the pairs in canonical order (by item ids), whatever the order of the records (so that every
        # engine makes the same candidates in the same order; the order of a sparse product's entries is not fixed)
        a, b, c = db.pair_counts(items)
        good = c >= min_count
        sets.extend(zip(items[a[good]].tolist(), items[b[good]].tolist()))
        counts.append(c[good].astype(np.int64))
    elif m >= 3:
        found = [(s, c) for s, c in mine_frequent(db, min_count, max_length=m) if len(s) >= 2]
        sets.extend(s for s, _ in found)
        counts.append(np.fromiter((c for _, c in found), dtype=np.int64, count=len(found)))
    return sets, np.concatenate(counts).astype(np.int64)


def _uniform_below(total: int, noise: NoiseSource) -> int:
    if total < 2**62:
        return uniform_choice(total, noise)
    hi = uniform_choice(2**31, noise)
    lo = uniform_choice(2**31, noise)
    return int(((hi << 31) | lo) * total >> 62)


def _sample_implicit(n_pick: int, n_items: int, m: int, excluded: set[tuple[int, ...]], noise: NoiseSource,
                     max_tries: int = 100_000) -> list[tuple[int, ...]]:
    """``n_pick`` distinct itemsets drawn uniformly from U minus ``excluded`` (data-independent randomness)."""
    sizes = [math.comb(n_items, length) for length in range(1, m + 1)]
    total = sum(sizes)
    out: list[tuple[int, ...]] = []
    seen = set(excluded)
    tries = 0
    while len(out) < n_pick:
        tries += 1
        if tries > max_tries:
            raise RuntimeError("could not sample the implicit TF candidates (the noise source is degenerate)")
        r = _uniform_below(total, noise)
        length = 1
        for length, size in enumerate(sizes, start=1):
            if r < size:
                break
            r -= size
        chosen: set[int] = set()
        inner = 0
        while len(chosen) < length and inner < 10 * length + 100:
            chosen.add(uniform_choice(n_items, noise))
            inner += 1
        cand = tuple(sorted(chosen))
        if len(cand) != length or cand in seen:
            continue
        seen.add(cand)
        out.append(cand)
    return out


@records_run_start
def tf(db: TransactionDB | TransactionData, universe: Universe, k: int, epsilon: float, m: int, *, noise: NoiseSource,
       variant: str = "laplace", rho: float = 0.9) -> ItemsetRelease:
    """TF (PrivBasis section 3): top-k itemsets of length <= m with noisy counts, under ``epsilon``-DP."""
    eps = check_epsilon(epsilon)
    if variant not in ("laplace", "exponential"):
        raise ParameterError(f"--variant must be 'laplace' or 'exponential', got {variant!r}")
    if not (0.0 < rho < 1.0):
        raise ParameterError(f"--rho must be in (0, 1), got {rho}")
    if int(m) < 1:
        raise ParameterError(f"-m must be a whole number >= 1, got {m}")
    if int(k) < 1:
        raise ParameterError(f"-k must be a whole number > 0, got {k}")
    db = as_transaction_data(db)  # the data passes are the engine's (dprelease.engine)
    if db.n_items != universe.size:
        raise ParameterError("the database and the universe disagree on the number of items")
    m = int(min(m, db.n_items))
    n_cand = candidate_space_size(db.n_items, m)
    requested = int(k)
    k = int(min(k, n_cand))
    if m >= 3 and n_cand > MAX_DEGENERATE_CANDIDATES:
        # Decided from public inputs only: whether the enumeration is feasible depends on
        # f_k*N vs gamma*N, and a refusal that depended on f_k would release it.
        _refuse_degenerate(n_cand, m)
    plan, sets, counts = _plan_and_candidates(db, k, eps, m, rho)
    n_implicit = n_cand - len(sets)

    accountant = BudgetAccountant(eps)
    scope = accountant.root()
    eps_sel = eps / 2.0  # section 3: "The privacy budget is evenly divided between these two steps"
    truncated = np.maximum(counts.astype(np.float64), plan.floor)
    if variant == "laplace":
        # Lap(4k/(eps N)) on frequencies = Lap(4k/eps) on counts = sensitivity 2k at eps/2.
        picked, n_imp = laplace_top_k_implicit(truncated, n_implicit, plan.floor, k, eps_sel, sensitivity=2.0 * k,
                                               scope=scope, noise=noise, label="TF selection (Laplace, eps/2)")
    else:
        # exp(eps N f^/(4k)) = exp((eps/2)/k * c^ / 2): k rounds of eps/(2k), sensitivity 1.
        picked, n_imp = exponential_top_k_implicit(truncated, n_implicit, plan.floor, k, eps_sel, sensitivity=1.0,
                                                   scope=scope, noise=noise,
                                                   label="TF selection (exponential mechanism, eps/2)")
    chosen = [sets[i] for i in picked.tolist()]
    if n_imp:
        extra = _sample_implicit(n_imp, db.n_items, m, set(sets), noise)
        chosen.extend(extra)
    true = np.concatenate([counts[picked], itemset_supports(db, chosen[len(picked):])]).astype(np.float64)
    released = noisy_values(np.r_[true, float(db.n_records)], eps / 2.0, sensitivity=float(len(chosen) + 1),
                            scope=scope, noise=noise, label="TF counts and N (Lap(2(k+1)/eps), eps/2)")
    noisy, n_hat = released[:-1], float(released[-1])
    order = np.argsort(-noisy, kind="stable")
    chosen = [chosen[i] for i in order.tolist()]
    noisy = noisy[order]
    # post-processing: a frequency is a share of the (noisy) records, so it lies in [0, 1]
    freqs = np.clip(noisy / n_hat, 0.0, 1.0) if n_hat > 0 else np.full(noisy.size, np.nan)
    manifest_parts = build_manifest(  # the API's release carries the full manifest (RNG mode included)
        "TF", epsilon=eps, noise=noise, accountant=accountant, domain=universe.describe(),
        parameters={"k": k, "m": m, "variant": variant, "rho": rho},
        release={"rows": len(chosen)},
        budget_split={"selection": eps_sel, "counts_and_N": eps / 2.0,
                      "reference": "PrivBasis sec. 3 (TF of Bhaskar et al.): eps/2 selection, eps/2 counts"},
        privacy_unit="record", neighbours=NEIGHBOURS_LINE,
    )
    size_note = release_size_note("tf", len(chosen), "itemsets", requested=requested)  # public: its size
    add_notes(manifest_parts, [size_note] if size_note else [])
    trace = {"plan": plan, "n_explicit": len(sets), "n_implicit_picked": n_imp, "n_estimate": n_hat}
    return ItemsetRelease(chosen, noisy, freqs, universe, manifest=manifest_parts, trace=trace, accountant=accountant)
