"""The chunked transaction reader gives byte-identical CSR arrays to the whole-file reader it replaced.

Blocks are made tiny (a few bytes) so that block boundaries fall inside lines, tokens, CRLF pairs and
comments; every case is compared with :func:`reference_reader.reference_read_transactions`.
"""

from __future__ import annotations

import gzip
import re
import warnings

import numpy as np
import pytest
from reference_reader import reference_read_transactions

from dprelease.data import TransactionDB, parse_universe_spec
from dprelease.data.fimi import _blank_comments, _swar_values, iter_transaction_chunks, read_fimi
from dprelease.data.io import read_transactions
from dprelease.data.transactions import CSRBuilder, GrowableArray, canonical_records
from dprelease.errors import InputError, PrivacyLeakWarning

CHUNKS = (1, 2, 3, 7, 16, 61, 1 << 20)

CASES = {
    "plain": b"1 2 3\n4 5\n6\n",
    "fimi-trailing-space": b"1 2 3 \n4 5 \n6 \n",
    "crlf": b"1 2\r\n3 4\r\n\r\n5\r\n",
    "no-final-newline": b"3 1\n2 2 2\n17",
    "comments": b"# header\n1 2\n  # indented\n\t#tab\n3\n#\n4 5 # not a comment? no: '#' after items\n",
    "comment-only-lines": b"#a\n1\n#b\n#c\n2 3\n",
    "blank-lines": b"\n\n1 2\n\n\n3\n\n",
    "unsorted-duplicates": b"5 3 5 1\n2 2\n17 1 17 9\n",
    "leading-zeros": b"007 7 0010\n000001\n",
    "long-numbers": b"12345678 123456789 1234567890123456 123456789012345678\n1\n",
    "tabs-and-spaces": b"1\t2  3\t\t4\n \t 5 \n",
    "long-line": (" ".join(str(i) for i in range(1, 200)) + "\n1 2\n").encode(),
}


def _same(a: TransactionDB, b: TransactionDB) -> None:
    assert a.n_items == b.n_items
    assert a.offsets.dtype == b.offsets.dtype == np.int64 and a.items.dtype == b.items.dtype == np.int32
    assert a.offsets.tobytes() == b.offsets.tobytes()
    assert a.items.tobytes() == b.items.tobytes()


def _both(path, universe, chunk):
    try:
        ref = reference_read_transactions(path, universe)
    except InputError as exc:
        ref = exc
    try:
        new = read_fimi(path, universe, derive=universe is None, chunk_bytes=chunk)
    except InputError as exc:
        new = exc
    return ref, new


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("spec", ["range", "file", "derived"])
def test_identical_csr_on_edge_cases(tmp_path, name, spec):
    text = CASES[name]
    if name == "comments":
        text = text.replace(b"4 5 # not a comment? no: '#' after items\n", b"4 5\n")
    path = tmp_path / "d.dat"
    path.write_bytes(text)
    labels = sorted({int(t) for line in text.decode().splitlines() if not line.lstrip().startswith("#")
                     for t in line.split()})
    (tmp_path / "items.txt").write_text("\n".join(str(v) for v in labels + [labels[-1] + 5]) + "\n")
    for chunk in CHUNKS:
        universe = {"range": parse_universe_spec("1..200"), "derived": None,
                    "file": parse_universe_spec(str(tmp_path / "items.txt"))}[spec]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ref, new = _both(path, universe, chunk)
        if isinstance(ref, Exception):  # e.g. the long numbers are outside 1..200
            assert spec == "range" and str(ref) == str(new)
            continue
        _same(ref[0], new[0])
        assert ref[1].labels == new[1].labels and ref[1].source == new[1].source


def test_gzip_is_streamed_and_identical(tmp_path):
    rng = np.random.default_rng(3)
    lines = [" ".join(str(v) for v in rng.integers(1, 500, rng.integers(1, 30))) for _ in range(3000)]
    text = ("\n".join(lines) + "\n").encode()
    plain, packed = tmp_path / "d.dat", tmp_path / "d.dat.gz"
    plain.write_bytes(text)
    packed.write_bytes(gzip.compress(text))
    universe = parse_universe_spec("1..500")
    ref, _ = reference_read_transactions(plain, universe)
    for chunk in (61, 4096, 1 << 20):
        _same(ref, read_fimi(packed, universe, chunk_bytes=chunk)[0])
    _same(ref, read_transactions(packed, universe)[0])
    # a gzip member that ends early is an input error naming the file, not a traceback
    (tmp_path / "cut.dat.gz").write_bytes(gzip.compress(text)[:500])
    with pytest.raises(InputError, match=r"cut\.dat\.gz: not a readable \.gz file: truncated or corrupt"):
        read_transactions(tmp_path / "cut.dat.gz", universe)


def test_random_files_match_the_reference(tmp_path):
    rng = np.random.default_rng(11)
    seps = [" ", "  ", "\t", " \t"]
    for trial in range(12):
        out = []
        for _ in range(int(rng.integers(1, 60))):
            kind = rng.random()
            if kind < 0.08:
                out.append("")
            elif kind < 0.14:
                out.append(" " * int(rng.integers(0, 3)) + "# comment " + str(rng.integers(99)))
            else:
                vals = rng.integers(1, 300, int(rng.integers(1, 12)))
                sep = seps[int(rng.integers(len(seps)))]
                out.append(sep.join(str(v) for v in vals) + (" " if rng.random() < 0.5 else ""))
        eol = "\r\n" if trial % 3 == 0 else "\n"
        text = eol.join(out) + (eol if trial % 2 else "")
        path = tmp_path / f"r{trial}.dat"
        path.write_text(text, newline="")
        for spec in ("1..300", None):
            universe = parse_universe_spec(spec) if spec else None
            for chunk in (1, 9, 33, 1 << 16):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    ref, new = _both(path, universe, chunk)
                if isinstance(ref, Exception):
                    assert str(ref) == str(new)
                    continue
                _same(ref[0], new[0])
                assert ref[1].labels == new[1].labels


@pytest.mark.parametrize("chunk", [1, 4, 1 << 20])
def test_errors_name_the_same_file_and_line(tmp_path, chunk):
    universe = parse_universe_spec("1..17")
    cases = {
        "outside.dat": (b"1 2\n# c\n\n3 18\n19\n", r"outside\.dat:4: item 18 is not in the declared universe \(1\.\.17\)"),
        "token.dat": (b"1 2\n2 x1\n", r"token\.dat:2: item 'x1' is not in the declared universe"),
        "after.dat": (b"1\n2 3 # note\n", r"after\.dat:2: item '#' is not in the declared universe"),
        "empty.dat": (b"# only a comment\n\n \n", r"empty\.dat: no transactions"),
        "utf8.dat": (b"1\n2\n\xff\xfe\n", r"utf8\.dat:3: not valid UTF-8 text"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(text)
        with pytest.raises(InputError, match=message):
            reference_read_transactions(path, universe)
        with pytest.raises(InputError, match=message):
            read_fimi(path, universe, chunk_bytes=chunk)


def test_string_tokens_with_a_universe_file_and_derived(tmp_path):
    items = tmp_path / "items.txt"
    items.write_text("bread\nmilk\nbeer\nx-1\n")
    data = tmp_path / "d.dat"
    data.write_text("milk bread\nbeer\n\n# c\nbeer milk milk\nx-1 bread\n")
    universe = parse_universe_spec(str(items))
    for chunk in (1, 5, 1 << 20):
        _same(reference_read_transactions(data, universe)[0], read_fimi(data, universe, chunk_bytes=chunk)[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ref, ref_u = reference_read_transactions(data, None)
            with pytest.warns(PrivacyLeakWarning):
                new, new_u = read_fimi(data, None, derive=True, chunk_bytes=chunk)
        _same(ref, new)
        assert ref_u.labels == new_u.labels == ("beer", "bread", "milk", "x-1")


def test_mixed_blocks_with_an_integer_universe(tmp_path):
    """Integer blocks and general blocks (a 19-digit number, a vertical tab) agree on ids and errors."""
    path = tmp_path / "d.dat"
    path.write_bytes(b"1 2\n3\x0b4\n007 1\n2 2\n")
    universe = parse_universe_spec("1..9")
    ref, _ = reference_read_transactions(path, universe)
    for chunk in (1, 3, 8, 1 << 20):
        _same(ref, read_fimi(path, universe, chunk_bytes=chunk)[0])
    path.write_bytes(b"1 2\n0000000000000000005 1\n")
    for chunk in (1, 1 << 20):
        ref, new = _both(path, universe, chunk)
        assert str(ref) == str(new) and "d.dat:2: item '0000000000000000005'" in str(new)


def test_chunks_are_csr_pieces_of_the_whole(tmp_path):
    rng = np.random.default_rng(5)
    lines = [" ".join(str(v) for v in rng.integers(1, 50, rng.integers(1, 9))) for _ in range(500)]
    path = tmp_path / "d.dat"
    path.write_text("\n".join(lines) + "\n")
    universe = parse_universe_spec("1..49")
    chunks = list(iter_transaction_chunks(path, universe, chunk_bytes=100))
    assert len(chunks) > 10
    whole, _ = read_transactions(path, universe)
    assert sum(c.n_records for c in chunks) == whole.n_records
    assert np.array_equal(np.concatenate([c.items for c in chunks]), whole.items)
    assert [c.first_line for c in chunks] == sorted(c.first_line for c in chunks)


def test_swar_decodes_every_length():
    rng = np.random.default_rng(2)
    values = np.concatenate([rng.integers(0, 10**d, 50) for d in range(1, 19)] + [np.array([0, 10**18 - 1])])
    text = b" " * 8 + " ".join(str(v) for v in values.tolist()).encode() + b"\n"
    a = np.frombuffer(text, dtype=np.uint8)
    ends = np.array([m.end() for m in re.finditer(rb"\d+", text)])
    lengths = np.array([len(m.group()) for m in re.finditer(rb"\d+", text)])
    assert _swar_values(a, ends, lengths).tolist() == values.tolist()


def test_comment_blanking_keeps_line_breaks():
    raw = b"        # a\n1 # b\n  #c\n2\n"
    out = _blank_comments(np.frombuffer(raw, dtype=np.uint8)).tobytes()
    assert out == b"           \n1 # b\n    \n2\n"


def test_builder_and_segments_match_from_pairs():
    rng = np.random.default_rng(9)
    records = [sorted(set(rng.integers(0, 40, rng.integers(1, 7)).tolist())) for _ in range(1000)]
    expected = TransactionDB.from_lists(records, 40)
    builder = CSRBuilder()
    for lo in range(0, 1000, 37):
        part = records[lo : lo + 37]
        builder.add(np.array([len(r) for r in part]), np.array([i for r in part for i in r], dtype=np.int32))
    _same(expected, builder.finish(40))
    grow = GrowableArray(np.int64, prefix=np.array([-1]))
    for lo in range(0, 10, 3):
        grow.append(np.arange(lo, min(lo + 3, 10)))
    grow.map_inplace(lambda part: part * 2, block=4)
    assert grow.last() == 18 and grow.finish().tolist() == [-2] + list(range(0, 20, 2))


def test_canonical_records_sorts_and_dedupes_within_records():
    lengths, values = canonical_records(np.array([3, 2, 1]), np.array([5, 1, 5, 2, 2, 7], dtype=np.int32))
    assert lengths.tolist() == [2, 1, 1] and values.tolist() == [1, 5, 2, 7]
    same_l, same_v = canonical_records(np.array([2, 2]), np.array([1, 3, 0, 2]))
    assert same_l.tolist() == [2, 2] and same_v.tolist() == [1, 3, 0, 2]


def test_byte_order_mark_is_dropped_whatever_the_block_size(tmp_path):
    path = tmp_path / "bom.dat"
    path.write_bytes(b"\xef\xbb\xbf1 2\n3\n")
    universe = parse_universe_spec("1..3")
    for chunk in (1, 2, 3, 1 << 20):
        assert read_fimi(path, universe, chunk_bytes=chunk)[0].to_lists() == [[0, 1], [2]]
