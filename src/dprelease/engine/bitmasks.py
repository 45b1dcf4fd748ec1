"""Records and trie patterns as bit masks over ranked items, in as many 64-bit words as the ranks need.

DiffPart-Prefix's trie is over F, the frequent items in noisy-support order: level j splits on the item of rank j.
A record (or a trie cell's pattern) is a row of ``W = n_words(|F|)`` int64 words; rank r is bit ``r % WORD_BITS``
of word ``r // WORD_BITS``. A word holds :data:`WORD_BITS` = 62 bits, as the data layer's int64 masks do
(``data.passes.MASK_BITS``), so no word uses the sign bit and every shift stays in range. With one word
(|F| <= 62) every array here is the one int64 mask per record the trie used before, as an (n, 1) array.

Order: :func:`prefix_keys` makes each row a key whose sort order is the trie's (rank 0 most significant, then
rank 1, ...), so the records of a trie cell are one contiguous range of the sorted keys and its two children
split that range where the next rank's bit turns on. :func:`row_keys` are cheaper keys for exact look-ups only
(a level's cells found by their patterns).
"""

from __future__ import annotations

import sys

import numpy as np

from ..data.passes import MASK_BITS
from ..data.transactions import TransactionDB

__all__ = ["WORD_BITS", "n_words", "item_masks", "bit_column", "with_bit", "low_bits", "mask_bits", "popcount",
           "prefix_keys", "row_keys", "reverse_bits", "trie_leaves"]

WORD_BITS = MASK_BITS  # 62, as the data layer's int64 masks (data/passes.py)


def n_words(m: int) -> int:
    """Words per row for ranks 0..m-1 (at least one, so that an empty F still has rows of one word)."""
    return max(1, -(-int(m) // WORD_BITS))


def item_masks(db: TransactionDB, rank: np.ndarray, words: int | None = None) -> np.ndarray:
    """Each record as an (n_records, words) int64 mask over ranked items: rank r is bit r % 62 of word r // 62
    (``rank[item]`` >= 0; -1 for an unranked item). ``words`` defaults to what the largest rank needs. One OR
    over each record's entries per word (``np.bitwise_or.reduceat``), exact."""
    rank = np.asarray(rank, dtype=np.int64)
    if words is None:
        words = n_words(int(rank.max(initial=-1)) + 1)
    masks = np.zeros((db.n_records, words), dtype=np.int64)
    if db.n_records == 0:
        return masks
    r = rank[db.items]
    starts = db.offsets[:-1] - db.offsets[0]
    empty = db.offsets[1:] == db.offsets[:-1]
    value = np.zeros(r.size + 1, dtype=np.int64)  # a last 0: every record's start is a valid index
    for w in range(words):
        # each entry's bit in word w (0 for an unranked item, -1, or one of another word), OR-ed over its
        # record's entries
        low = w * WORD_BITS
        here = (r >= low) & (r < low + WORD_BITS)
        np.left_shift(here.astype(np.int64), (r - low) & 63, out=value[:-1])
        masks[:, w] = np.bitwise_or.reduceat(value, starts)
        masks[empty, w] = 0  # (reduceat gives an empty record the value at its start)
    return masks


def bit_column(masks: np.ndarray, j: int) -> np.ndarray:
    """Rank j's bit of every row (int64 0 / 1)."""
    return (masks[:, j // WORD_BITS] >> np.int64(j % WORD_BITS)) & np.int64(1)


def with_bit(patterns: np.ndarray, j: int | np.ndarray, bits: np.ndarray) -> np.ndarray:
    """A copy of ``patterns`` with rank ``j`` (one rank, or one per row) set in the rows where ``bits`` is 1."""
    out = np.array(patterns, dtype=np.int64, copy=True)
    j = np.broadcast_to(np.asarray(j, dtype=np.int64), (out.shape[0],))
    word, bit = np.divmod(j, WORD_BITS)
    out[np.arange(out.shape[0]), word] |= np.asarray(bits, dtype=np.int64) << bit
    return out


def low_bits(level: np.ndarray, words: int) -> np.ndarray:
    """Per row, the mask of the ranks below ``level[i]`` (the ranks a trie cell of that level has decided)."""
    level = np.asarray(level, dtype=np.int64)
    below = np.clip(level[:, None] - WORD_BITS * np.arange(words, dtype=np.int64)[None, :], 0, WORD_BITS)
    return (np.int64(1) << below) - np.int64(1)


def mask_bits(masks: np.ndarray, m: int) -> np.ndarray:
    """(rows, m) booleans: bit r of row i is rank r's bit."""
    ranks = np.arange(int(m), dtype=np.int64)
    if masks.shape[0] == 0 or m == 0:
        return np.zeros((masks.shape[0], int(m)), dtype=bool)
    return ((masks[:, ranks // WORD_BITS] >> (ranks % WORD_BITS)[None, :]) & 1).astype(bool)


def popcount(masks: np.ndarray) -> np.ndarray:
    """Set bits per row (int64)."""
    counts: np.ndarray = np.bitwise_count(masks).sum(axis=1, dtype=np.int64)
    return counts


_BYTE_REVERSED = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)
_KEY_CHUNK = 1 << 20  # entries per chunk of the in-place bit reversal


def reverse_bits(values: np.ndarray) -> np.ndarray:
    """In place: each 64-bit value with its bit r moved to bit 63 - r (returned as a uint64 view)."""
    keys = values.view(np.uint64)
    for lo in range(0, keys.size, _KEY_CHUNK):
        raw = keys[lo : lo + _KEY_CHUNK].view(np.uint8)
        raw[:] = _BYTE_REVERSED[raw]
    keys.byteswap(inplace=True)  # bits reversed within each byte, then the bytes: the whole word reversed
    return keys


def prefix_keys(masks: np.ndarray, *, inplace: bool = False) -> np.ndarray:
    """One sort key per row, in the trie's order (rank 0 most significant). One word: the word's bits reversed,
    as uint64 (the keys DiffPart-Prefix sorted before masks had several words). Several words: each word's bits
    reversed and its bytes big-endian, the row's words one after the other, as one fixed-width byte string per
    row (numpy compares them byte by byte, unsigned: the same order). ``inplace``: ``masks`` (C-contiguous int64)
    becomes the keys' storage, so no copy of the masks is made."""
    if masks.ndim != 2:
        raise ValueError("masks must be a (rows, words) array")
    if not (inplace and masks.dtype == np.int64 and masks.flags.c_contiguous):
        masks = np.array(masks, dtype=np.int64, order="C")
    words = masks.shape[1]
    rev = reverse_bits(masks.reshape(-1))
    if words == 1:
        return rev
    if sys.byteorder == "little":
        rev.byteswap(inplace=True)  # each word's bytes most significant first
    return masks.view(np.dtype((np.void, 8 * words))).reshape(-1)


def row_keys(masks: np.ndarray) -> np.ndarray:
    """One key per row for exact look-ups (sort a table of rows by these keys, ``searchsorted`` rows in it): the
    word itself with one word, the row's raw bytes with more. Their order is not the trie's (:func:`prefix_keys`
    is), only consistent: equal rows have equal keys and the table and the queries are compared alike."""
    masks = np.ascontiguousarray(masks, dtype=np.int64)
    if masks.shape[1] == 1:
        return masks[:, 0].copy()
    return masks.view(np.dtype((np.void, 8 * masks.shape[1]))).reshape(-1)


def trie_leaves(masks: np.ndarray, child: np.ndarray, is_class: np.ndarray) -> np.ndarray:
    """The class each record's path through the trie ends in (``child[node] = (without, with)`` below every node
    that is not a class, so the classes are the leaves of a full binary tree), found by one search instead of
    following the path level by level. A node at depth d holds the records whose ranks below d match its
    pattern: in the trie's key order (:func:`prefix_keys`, rank 0 most significant) that is one run of
    keys starting at the pattern's own key, and the leaves' runs cover every key. So a record's class is the
    last class whose pattern key is at most the record's key. (A record with none of the ranked items has key 0
    and falls in the all-without leaf, as its path does.)"""
    words = masks.shape[1]
    n_nodes = child.shape[0]
    pattern = np.zeros((n_nodes, words), dtype=np.int64)
    frontier = np.zeros(1, dtype=np.int64)
    depth = 0
    while frontier.size:  # breadth first: a node's children copy its pattern, "with" adds the bit of its depth
        inner = frontier[~is_class[frontier]]
        without, with_ = child[inner, 0], child[inner, 1]
        pattern[without] = pattern[inner]
        pattern[with_] = with_bit(pattern[inner], depth, np.ones(inner.size, dtype=np.int64))
        frontier = np.concatenate([without, with_])
        depth += 1
    classes = np.flatnonzero(is_class)
    starts = prefix_keys(pattern[classes], inplace=True)
    order = np.argsort(starts, kind="stable")
    at = np.searchsorted(starts[order], prefix_keys(masks), side="right") - 1
    return classes[order[np.maximum(at, 0)]]
