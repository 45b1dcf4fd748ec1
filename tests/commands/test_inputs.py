"""Inputs the commands must not trust: a universe derived from the data only on request, files that look like
CSV tables, outputs (a manifest left without its body, ``-o -``, a missing folder), parameters past their useful
range and progress that never reaches a release or stdout.

Every case runs the CLI in-process (``dprelease.cli.main``); a refusal is exit 2 with one line on stderr and
nothing written.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import pytest
from conftest import REPO

from dprelease.cli import main
from dprelease.data import read_transactions
from dprelease.data.fimi import read_fimi
from dprelease.data.universe import Universe, parse_universe_spec
from dprelease.errors import InputError, ParameterError, PrivacyLeakWarning

SCHEMA = REPO / "examples" / "table1-schema.yaml"
TABLE = REPO / "examples" / "table1-jobs.csv"
SMALL = "1 2 3\n2 3\n1 4\n3 4 5\n1 2\n2 5 6\n7 8\n9 10 11 12\n" * 5
# an Adult-like table without spaces: each line would be one "item" of a derived universe
CSV_ROWS = "age,workclass,fnlwgt,education\n39,State-gov,77516,Bachelors\n50,Self-emp,83311,Bachelors\n" \
           "38,Private,215646,HS-grad\n"


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def refused(code: int, err: str, *pieces: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "Traceback" not in err
    for piece in pieces:
        assert piece in lines[0], (piece, lines[0])


def files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def w(tmp_path: Path) -> Path:
    (tmp_path / "small.dat").write_text(SMALL)
    (tmp_path / "table.csv").write_text(CSV_ROWS)
    (tmp_path / "g.txt").write_text("1 2\n2 3\n3 1\n3 4\n")
    return tmp_path


# --- 1. deriving the universe is an explicit opt-in ------------------------------------------------------


def test_a_csv_table_without_universe_is_refused_not_published(w: Path, capsys):
    """Before: exit 0, and the derived universe was the set of raw rows, released verbatim."""
    before = files(w)
    code, _, err = run(capsys, "diffpart", w / "table.csv", "-o", w / "out.dat", "-e", "1")
    refused(code, err, "--universe derive", "--universe 1..17")
    assert files(w) == before


PUBLISHING = {
    "diffpart": ["diffpart", "{w}/small.dat", "-e", "1", "-o", "{w}/o.dat"],
    "basic": ["basic", "{w}/small.dat", "-e", "1", "-o", "{w}/o.dat"],
    "privbasis": ["privbasis", "{w}/small.dat", "-k", "3", "-e", "1", "-o", "{w}/o.csv"],
    "tf": ["tf", "{w}/small.dat", "-k", "3", "-m", "2", "-e", "1", "-o", "{w}/o.csv"],
    "stream-init": ["stream", "init", "{w}/s.db", "-e", "1", "-U", "2"],
}


def _argv(template: list[str], w: Path) -> list[str]:
    return [a.replace("{w}", str(w)) for a in template]


@pytest.mark.parametrize("name", sorted(PUBLISHING))
def test_every_publishing_command_needs_a_universe_or_the_opt_in(name: str, w: Path, capsys):
    before = files(w)
    code, _, err = run(capsys, *_argv(PUBLISHING[name], w))
    refused(code, err, "no item universe declared", "--universe derive")
    assert files(w) == before  # no release, no manifest, no stream state


@pytest.mark.parametrize("name", ["diffpart", "privbasis", "tf"])
def test_universe_derive_warns_and_is_recorded(name: str, w: Path, capsys):
    argv = _argv(PUBLISHING[name], w) + ["--universe", "derive", "--seed", "1", "-q"]
    code, _, err = run(capsys, *argv)
    assert code == 0, err
    assert "warning: --universe derive: the item universe was derived from the data" in err
    out = Path(argv[argv.index("-o") + 1])
    domain = json.loads(Path(f"{out}.manifest.json").read_text())["domain"]
    assert domain["source"] == "derived-from-data" and domain["size"] == 12 and "warning" in domain


def test_stream_init_derive_is_the_opt_in_for_its_first_batch(w: Path, capsys):
    code, _, err = run(capsys, "stream", "init", w / "s.db", "-e", "1", "-U", "2", "--universe", "derive", "-q")
    assert code == 0 and "derives it from its batch" in err
    code, _, err = run(capsys, "stream", "append", w / "s.db", w / "small.dat", "-o", w / "r.dat", "-q")
    assert code == 0 and "warning: --universe derive" in err
    assert json.loads((w / "r.dat.manifest.json").read_text())["domain"]["source"] == "derived-from-data"


def test_commands_that_publish_nothing_derive_with_a_note(w: Path, capsys):
    code, out, err = run(capsys, "stats", w / "small.dat", "--json")
    assert code == 0 and json.loads(out)["items"] == 12
    assert "note: no --universe" in err and "warning" not in err
    code, out, err = run(capsys, "stats", w / "small.dat", "--json", "-q")
    assert code == 0 and err == ""
    assert run(capsys, "diffpart", w / "small.dat", "--universe", "1..12", "-e", "1", "-o", w / "r.dat", "-q")[0] == 0
    code, out, err = run(capsys, "evaluate", "counting", w / "small.dat", w / "r.dat", "--queries", "200", "--json")
    assert code == 0 and "mean_relative_error" in json.loads(out)
    assert "note: no --universe" in err and "warning" not in err


def test_the_api_derives_only_with_derive_true(w: Path):
    for reader in (read_transactions, read_fimi):
        with pytest.raises(ParameterError, match=r"small\.dat: no item universe declared.*derive=True"):
            reader(w / "small.dat", None)
    with pytest.warns(PrivacyLeakWarning, match="--universe derive"):
        db, universe = read_transactions(w / "small.dat", None, derive=True)
    assert universe.source == "derived-from-data" and universe.size == 12 and db.n_records == 40


# --- files that look like CSV tables -----------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["diffpart", "{w}/table.csv", "--universe", "derive", "-e", "1", "-o", "{w}/o.dat"],
    ["privbasis", "{w}/table.csv", "--universe", "derive", "-k", "3", "-e", "1", "-o", "{w}/o.csv"],
    ["tf", "{w}/table.csv", "--universe", "derive", "-k", "3", "-m", "2", "-e", "1", "-o", "{w}/o.csv"],
    ["basic", "{w}/table.csv", "--universe", "derive", "-e", "1", "-o", "{w}/o.dat"],
    ["stats", "{w}/table.csv"],
], ids=["diffpart", "privbasis", "tf", "basic", "stats"])
def test_a_csv_table_is_refused_with_a_hint_even_with_derive(argv: list[str], w: Path, capsys):
    """Before: `--universe derive` (then the default) made each row an item and published it."""
    before = files(w)
    code, _, err = run(capsys, *_argv(argv, w))
    refused(code, err, "table.csv:1:", "'age,workclass,fnlwgt,education' holds a comma",
            "this looks like a CSV table", "use `dprelease diffgen` or `dprelease rps` for tables")
    assert files(w) == before


def test_a_csv_table_against_a_declared_universe_gets_the_hint(w: Path, capsys):
    code, _, err = run(capsys, "diffpart", w / "table.csv", "--universe", "1..12", "-e", "1", "-o", w / "o.dat")
    refused(code, err, "table.csv:1: item 'age,workclass,fnlwgt,education' is not in the declared universe (1..12)",
            "this looks like a CSV table")


def test_a_comma_far_into_the_file_is_refused_too(w: Path, capsys):
    """Past the first block, the per-block check names the line (derived), or the out-of-universe error does."""
    (w / "late.dat").write_text("1 2 3\n" * 30_000 + "4,5 6\n")
    code, _, err = run(capsys, "diffpart", w / "late.dat", "--universe", "derive", "-e", "1", "-o", w / "o.dat")
    refused(code, err, "late.dat:30001: '4,5' holds a comma", "this looks like a CSV table")
    code, _, err = run(capsys, "diffpart", w / "late.dat", "--universe", "1..12", "-e", "1", "-o", w / "o.dat")
    refused(code, err, "late.dat:30001: item '4,5' is not in the declared universe", "this looks like a CSV table")


def test_a_header_line_over_numeric_records_is_refused(w: Path, capsys):
    (w / "h.dat").write_text("items\n1 2\n3 4 5\n")
    code, _, err = run(capsys, "diffpart", w / "h.dat", "--universe", "derive", "-e", "1", "-o", w / "o.dat")
    refused(code, err, "h.dat:1: 'items' is a word where the items are numbers", "header line")
    code, _, err = run(capsys, "diffpart", w / "h.dat", "--universe", "1..12", "-e", "1", "-o", w / "o.dat")
    refused(code, err, "h.dat:1: item 'items' is not in the declared universe (1..12)", "header line")
    assert not (w / "o.dat").exists()


def test_items_with_commas_in_a_declared_universe_file_are_items(w: Path):
    (w / "items.txt").write_text("a,b\nc\nd\n")
    (w / "d.dat").write_text("a,b c\nd\n")
    db, universe = read_transactions(w / "d.dat", parse_universe_spec(str(w / "items.txt")))
    assert universe.labels == ("a,b", "c", "d") and db.to_lists() == [[0, 1], [2]]


def test_word_items_under_a_derived_universe_are_still_read(w: Path):
    """Records of words (no commas, no numeric rows below a header) are baskets: derive reads them."""
    (w / "words.dat").write_text("milk bread\nbread\neggs milk\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        db, universe = read_transactions(w / "words.dat", None, derive=True)
    assert universe.labels == ("bread", "eggs", "milk") and db.n_records == 3


# --- 3. outputs: the manifest is treated like the body; -o -; the output folder -------------------------


FAMILIES = {  # one command of each family, writing its release to {o}
    "diffpart": ["diffpart", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{o}"],
    "basic": ["basic", "{w}/small.dat", "--universe", "1..12", "-e", "1", "-o", "{o}"],
    "privbasis": ["privbasis", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-e", "1", "-o", "{o}"],
    "tf": ["tf", "{w}/small.dat", "--universe", "1..12", "-k", "3", "-m", "2", "-e", "1", "-o", "{o}"],
    "diffgen": ["diffgen", str(TABLE), "--schema", str(SCHEMA), "-e", "1", "-H", "2", "-o", "{o}"],
    "tds": ["tds", str(TABLE), "--schema", str(SCHEMA), "-o", "{o}"],
    "rps": ["rps", str(TABLE), "--schema", str(SCHEMA), "-e", "1", "-o", "{o}"],
    "mondrian": ["mondrian", str(TABLE), "--schema", str(SCHEMA), "-k", "2", "-o", "{o}"],
    "degrees": ["degrees", "{w}/g.txt", "-e", "1", "--theta", "2", "-o", "{o}"],
    "stream-append": ["stream", "append", "{w}/state.db", "{w}/small.dat", "-o", "{o}"],
    "stream-release": ["stream", "release", "{w}/state.db", "-o", "{o}"],
}


@pytest.fixture
def ws(w: Path, capsys) -> Path:
    """``w`` with a stream state that has one append (so that `stream release` has something to re-emit)."""
    assert run(capsys, "stream", "init", w / "state.db", "-e", "1", "-U", "3", "--universe", "1..12", "--seed", "1",
               "-q")[0] == 0
    assert run(capsys, "stream", "append", w / "state.db", w / "small.dat", "-o", w / "first.dat", "-q")[0] == 0
    return w


def _family(name: str, w: Path, out: str) -> list[str]:
    return [a.replace("{w}", str(w)).replace("{o}", out) for a in FAMILIES[name]]


def _stream_status(w: Path, capsys) -> dict:
    code, out, _ = run(capsys, "stream", "status", w / "state.db", "--json")
    assert code == 0
    return json.loads(out)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_manifest_left_without_its_body_is_not_replaced(name: str, ws: Path, capsys):
    """Before: only the body was checked, so OUT.manifest.json was silently replaced."""
    (ws / "o.dat.manifest.json").write_text('{"algorithm": "something else"}\n')
    before, status = files(ws), _stream_status(ws, capsys)
    code, _, err = run(capsys, *_family(name, ws, str(ws / "o.dat")))
    refused(code, err, "o.dat.manifest.json already exists", "--force")
    assert files(ws) == before and _stream_status(ws, capsys) == status


def test_force_replaces_a_manifest_left_alone(w: Path, capsys):
    (w / "o.dat.manifest.json").write_text("{}\n")
    code, _, err = run(capsys, *_family("diffpart", w, str(w / "o.dat")), "--force", "-q")
    assert code == 0 and json.loads((w / "o.dat.manifest.json").read_text())["body"] == "o.dat"


def test_a_diffgen_records_companion_is_checked_too(w: Path, capsys):
    (w / "o.records.csv").write_text("old\n")
    code, _, err = run(capsys, *_family("diffgen", w, str(w / "o.csv")), "--records")
    refused(code, err, "o.records.csv already exists")


@pytest.mark.parametrize("name", sorted(FAMILIES) + ["generate"])
def test_output_to_stdout_is_refused(name: str, ws: Path, capsys, monkeypatch):
    """Before: `-o -` wrote files named `-` and `-.manifest.json`."""
    monkeypatch.chdir(ws)
    argv = ["generate", "-", "--records", "10"] if name == "generate" else _family(name, ws, "-")
    before, status = files(ws), _stream_status(ws, capsys)
    code, _, err = run(capsys, *argv)
    refused(code, err, "-: writing to standard output is not supported")
    assert files(ws) == before and _stream_status(ws, capsys) == status


@pytest.mark.parametrize("name", sorted(FAMILIES) + ["generate"])
def test_a_missing_output_folder_is_refused_before_anything_is_read_or_spent(name: str, ws: Path, capsys):
    out = str(ws / "no" / "such" / "o.dat")
    argv = ["generate", out, "--records", "10"] if name == "generate" else _family(name, ws, out)
    before, status = files(ws), _stream_status(ws, capsys)
    code, _, err = run(capsys, *argv)
    refused(code, err, f"the folder {ws / 'no' / 'such'} does not exist")
    assert files(ws) == before  # the state file is unchanged: nothing committed
    assert _stream_status(ws, capsys) == status  # nothing spent: same appends, same epsilon spent


def test_stream_append_into_a_missing_folder_spends_nothing(ws: Path, capsys):
    """Before: the folder was created after the batch was committed (or the commit came first and the write
    failed); now the append is refused before the state is touched."""
    status = _stream_status(ws, capsys)
    assert status["appends"] == 1
    code, _, err = run(capsys, "stream", "append", ws / "state.db", ws / "small.dat", "-o", ws / "missing" / "r.dat")
    refused(code, err, "does not exist; create it first")
    after = _stream_status(ws, capsys)
    assert after["appends"] == 1 and after["epsilon_spent"] == status["epsilon_spent"]


def test_a_ledger_is_not_charged_for_a_missing_output_folder(w: Path, capsys):
    assert run(capsys, "ledger", "init", w / "l.db", "--dataset", "small", "--epsilon", "2", "-q")[0] == 0
    code, _, err = run(capsys, "diffpart", w / "small.dat", "--universe", "1..12", "-e", "1", "-o",
                       w / "missing" / "r.dat", "--ledger", w / "l.db")
    refused(code, err, "does not exist")
    code, out, _ = run(capsys, "ledger", "status", w / "l.db", "--json")
    status = json.loads(out)
    assert code == 0 and status["epsilon_spent"] == 0 and status["releases"] == []


def test_a_stream_append_into_a_missing_folder_leaves_no_ledger_row(w: Path, capsys):
    """Before: the append's (covered) reservation was made first and left incomplete by the refusal."""
    assert run(capsys, "ledger", "init", w / "l.db", "--dataset", "small", "--epsilon", "2", "-q")[0] == 0
    assert run(capsys, "stream", "init", w / "s.db", "-e", "1", "-U", "2", "--universe", "1..12", "--ledger",
               w / "l.db", "-q")[0] == 0
    code, _, err = run(capsys, "stream", "append", w / "s.db", w / "small.dat", "-o", w / "missing" / "r.dat")
    refused(code, err, "does not exist")
    code, out, _ = run(capsys, "ledger", "status", w / "l.db", "--json")
    releases = json.loads(out)["releases"]
    assert code == 0 and len(releases) == 1 and releases[0]["command"] == "stream init"


def test_experiments_still_create_their_own_output_folder(w: Path, capsys):
    out = w / "new" / "nested"
    code, _, err = run(capsys, "experiment", "diffpart", "--dataset", w / "small.dat", "--universe", "1..12",
                       "--out", out, "--runs", "1", "--budgets", "1", "--ks", "3", "--queries", "100", "--no-faithful",
                       "--no-basic", "-q")
    assert code == 0, err
    assert (out / "summary.json").exists()


# --- 4. parameters past their useful range: a warning on stderr and a note in the manifest -------------------


def _notes(path: Path) -> list[str]:
    return json.loads(Path(f"{path}.manifest.json").read_text()).get("notes") or []


@pytest.mark.parametrize("options, piece", [
    (["--fanout", "20"], "--fanout 20 is past its useful range"),
    (["--c1", "0.1"], "--c1 0.1 is past its useful range"),
    (["--c2", "20"], "--c2 20 is past its useful range"),
    (["--structure-share", "0.72", "--shape-share", "0.1"], "--shape-share 0.1 leave 0.03 of epsilon to the released counts"),
    (["--structure-share", "0.82", "--shape-share", "0"], "leave 0.03 of epsilon to the released counts"),
    (["--selection-share", "0.01"], "--selection-share 0.01 is past its useful range"),
])
def test_diffpart_parameters_past_their_range_are_warned_and_noted(options, piece, w: Path, capsys):
    code, _, err = run(capsys, "diffpart", w / "small.dat", "--universe", "1..119", "-e", "1", "-o", w / "o.dat",
                       "--seed", "1", "-q", *options)
    assert code == 0, err
    assert "warning: " in err and piece in err
    assert any(piece in n for n in _notes(w / "o.dat"))


def test_defaults_are_not_warned_about(w: Path, capsys):
    for argv in (["diffpart", w / "small.dat", "--universe", "1..119", "-e", "1", "-o", w / "a.dat"],
                 ["diffpart", w / "small.dat", "--universe", "1..119", "-e", "1", "-o", w / "b.dat", "--method",
                  "faithful"],
                 ["privbasis", w / "small.dat", "--universe", "1..119", "-e", "1", "-k", "100", "-o", w / "c.csv"],
                 ["diffgen", TABLE, "--schema", SCHEMA, "-e", "1", "-H", "3", "-o", w / "d.csv"]):
        code, _, err = run(capsys, *argv, "--seed", "1", "-q")
        assert code == 0 and "past its useful range" not in err, err


def test_privbasis_k_past_the_universe_and_past_the_method(w: Path, capsys):
    code, _, err = run(capsys, "privbasis", w / "small.dat", "--universe", "1..12", "-e", "1", "-k", "5000",
                       "-o", w / "o.csv", "--seed", "1", "-q")
    assert code == 0, err
    assert "warning: -k 5000 is past its useful range: a universe of 12 items holds only 4,095 itemsets" in err
    assert "PrivBasis is made for tens to hundreds of itemsets" in err
    assert len([n for n in _notes(w / "o.csv") if "past its useful range" in n]) == 2


def test_diffgen_h_past_the_schema(w: Path, capsys):
    from dprelease.data.table import load_schema
    from dprelease.limits import diffgen_max_specializations

    most = diffgen_max_specializations(load_schema(SCHEMA))
    h = int(most) + 5
    code, _, err = run(capsys, "diffgen", TABLE, "--schema", SCHEMA, "-e", "1", "-H", str(h), "--method", "faithful",
                       "-o", w / "o.csv",
                       "--seed", "1", "-q")
    assert code == 0, err
    piece = f"-H {h} is past its useful range: the schema allows only {most:,.0f} specializations"
    assert f"warning: {piece}" in err and any(piece in n for n in _notes(w / "o.csv"))


# --- 5. progress: on stderr for a terminal, never in a release or on stdout ----------------------------------


def test_progress_goes_to_stderr_only(w: Path, capsys, monkeypatch):
    from dprelease import progress

    (w / "big.dat").write_text(SMALL * 2000)
    argv = ["diffpart", w / "big.dat", "--universe", "1..12", "-e", "1", "--seed", "4"]
    code, quiet_out, quiet_err = run(capsys, *argv, "-o", w / "quiet.dat", "-q")
    assert code == 0 and quiet_err == ""
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "MIN_INTERVAL", 0.0)
    code, out, err = run(capsys, *argv, "-o", w / "shown.dat")
    assert code == 0
    assert out == f"release: {w / 'shown.dat'}\nmanifest: {w / 'shown.dat.manifest.json'}\n"
    assert "read big.dat" in err and "\r" in err  # the bar, redrawn in place
    assert (w / "shown.dat").read_bytes() == (w / "quiet.dat").read_bytes()
    shown = json.loads((w / "shown.dat.manifest.json").read_text())
    quiet = json.loads((w / "quiet.dat.manifest.json").read_text())
    assert {k: v for k, v in shown.items() if k not in ("created_utc", "body")} == \
        {k: v for k, v in quiet.items() if k not in ("created_utc", "body")}
    code, _, err = run(capsys, *argv, "-o", w / "q2.dat", "-q")  # --quiet silences it, terminal or not
    assert code == 0 and err == ""


def test_progress_is_silent_in_the_api(w: Path, capsys):
    from dprelease import progress

    assert not progress.enabled()
    progress.advance(10)  # no session: nothing happens
    read_transactions(w / "small.dat", Universe.from_range(1, 12))
    assert capsys.readouterr().err == ""


def test_derived_universe_error_names_how_to_declare(w: Path):
    (w / "b.dat").write_text("1\n99\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        _, derived = read_transactions(w / "small.dat", None, derive=True)
    with pytest.raises(InputError, match=r"not in the universe derived from the data \(declare one with --universe"):
        read_transactions(w / "b.dat", derived)
