"""The budget ledger: exact charges, refusals that change nothing, one charge per releasing command
(reserved before the data is read, completed when written), non-DP commands never charge, streams."""

from __future__ import annotations

import json
import sqlite3
from fractions import Fraction
from pathlib import Path

import pytest

from dprelease import ledger
from dprelease.cli import main
from dprelease.errors import BudgetExceededError, InputError, ParameterError

REPO = Path(__file__).resolve().parents[1]
BASKETS = REPO / "examples" / "baskets.dat"
TABLE = REPO / "examples" / "table1-jobs.csv"
SCHEMA = REPO / "examples" / "table1-schema.yaml"


def _dump(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return "\n".join(conn.iterdump())


def _status(path: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["ledger", "status", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _init(path: Path, eps: str = "1", capsys=None) -> Path:
    assert main(["ledger", "init", str(path), "--dataset", "baskets", "--epsilon", eps, "-q"]) == 0
    if capsys is not None:
        capsys.readouterr()
    return path


def _diffpart(out: Path, eps: str, *extra: str) -> list[str]:
    return ["diffpart", str(BASKETS), "--universe", "1..12", "-e", eps, "-o", str(out), "--seed", "1", "-q", *extra]


# --- the store -------------------------------------------------------------------------------------------


def test_ten_charges_of_a_tenth_fit_exactly_and_the_eleventh_is_refused(tmp_path):
    path = tmp_path / "l.db"
    ledger.init_ledger(path, dataset="d", epsilon=1.0)
    for i in range(10):
        c = ledger.reserve(path, "diffpart", 0.1, output=f"o{i}", created="2024-01-01T00:00:00+00:00")
        ledger.complete(path, c.id)
    st = ledger.ledger_status(path)
    assert st.spent == 1 and st.remaining == 0  # exactly, not 0.9999999999999999 nor 1.0000000000000002
    before = _dump(path)
    with pytest.raises(BudgetExceededError, match=r"needs epsilon 0\.1 but only 0 of 1 remains"):
        ledger.reserve(path, "diffpart", 0.1, output="o10", created="t")
    assert _dump(path) == before
    with pytest.raises(BudgetExceededError):  # past the accountants' relative slack of 1e-9
        ledger.reserve(path, "diffpart", 2e-9, output="o10", created="t")
    assert _dump(path) == before
    # within it: admitted like an accountant admits float splits, and the exact total is reported
    ledger.reserve(path, "diffpart", 1e-12, output="o10", created="t")
    assert ledger.decimal_text(ledger.ledger_status(path).remaining) == "-0.000000000001"
    from dprelease.privacy.accountant import _REL_TOL

    assert ledger.REL_TOL == _REL_TOL


def test_sums_are_exact_decimals(tmp_path):
    path = tmp_path / "l.db"
    ledger.init_ledger(path, dataset="d", epsilon=1.0)
    for eps in (0.1, 0.2, 0.7):  # 0.1 + 0.2 + 0.7 = 1 exactly (in floats: 1.0000000000000002 > 1)
        ledger.reserve(path, "x", eps, output="o", created="t")
    st = ledger.ledger_status(path)
    assert st.spent == Fraction(1) and st.as_json()["exact"] == {"epsilon": "1", "epsilon_spent": "1",
                                                                  "epsilon_remaining": "0"}
    assert ledger.decimal_text(ledger.exact_epsilon(0.1) + ledger.exact_epsilon(0.2)) == "0.3"
    assert ledger.decimal_text(ledger.exact_epsilon(1e-12)) == "0.000000000001"
    assert ledger.decimal_text(ledger.exact_epsilon(1.0 / 3) * 3) == "0.9999999999999999"  # never rounds up
    assert ledger.decimal_text(Fraction(12)) == "12"
    for bad in (float("nan"), float("inf"), -0.5, "x"):
        with pytest.raises(ParameterError):
            ledger.exact_epsilon(bad)


def test_store_holds_public_facts_only(tmp_path):
    path = tmp_path / "l.db"
    ledger.init_ledger(path, dataset="d", epsilon=2.0)
    c = ledger.reserve(path, "tf", 0.5, output="/x/t.csv", created="2024-01-01T00:00:00+00:00")
    with sqlite3.connect(str(path)) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        cols = [r[1] for r in conn.execute("PRAGMA table_info(charges)")]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        row = conn.execute("SELECT * FROM charges").fetchone()
    assert tables == {"meta", "charges"}
    assert cols == ["id", "command", "epsilon", "output", "created", "state", "covered_by",
                    "privacy_unit"]  # no completion time
    assert row == (c.id, "tf", "0.5", "/x/t.csv", "2024-01-01T00:00:00+00:00", "reserved", None, None)


def test_store_refusals(tmp_path):
    path = tmp_path / "l.db"
    ledger.init_ledger(path, dataset="d", epsilon=1.0)
    with pytest.raises(InputError, match="already exists"):
        ledger.init_ledger(path, dataset="d", epsilon=1.0)
    with pytest.raises(InputError, match="no such ledger"):
        ledger.ledger_status(tmp_path / "missing.db")
    (tmp_path / "junk.db").write_text("not sqlite\n")
    with pytest.raises(InputError, match="not a dprelease ledger"):
        ledger.reserve(tmp_path / "junk.db", "x", 0.1, output="o", created="t")
    with pytest.raises(InputError, match="not the ledger"):
        ledger.reserve(path, "x", 0.1, output="o", created="t", ledger_id="someone-else")
    with pytest.raises(InputError, match="charge #7"):
        ledger.reserve(path, "x", 0.0, output="o", created="t", covered_by=7)
    with pytest.raises(ParameterError):
        ledger.reserve(path, "x", 0.0, output="o", created="t")
    c = ledger.reserve(path, "x", 0.25, output="o", created="t")
    ledger.complete(path, c.id)
    with pytest.raises(InputError, match="no reserved charge"):
        ledger.complete(path, c.id)
    with pytest.raises(ParameterError):
        ledger.init_ledger(tmp_path / "l2.db", dataset=" ", epsilon=1.0)


# --- the command line ------------------------------------------------------------------------------------


def test_one_ledger_across_commands_and_refusal(tmp_path, capsys, monkeypatch):
    led = _init(tmp_path / "l.db", capsys=capsys)
    # (diffpart at 0.25 and 0.2: its accountant admits exactly that; at 0.3 it admits 0.30000000000000004, below)
    assert main(_diffpart(tmp_path / "r.dat", "0.25", "--ledger", str(led))) == 0
    monkeypatch.setenv("DPRELEASE_LEDGER", str(led))  # a team sets it once
    assert main(["tf", str(BASKETS), "--universe", "1..12", "-e", "0.3", "-k", "5", "-m", "2", "-o",
                 str(tmp_path / "t.csv"), "--seed", "1", "-q"]) == 0
    assert main(["privbasis", str(BASKETS), "--universe", "1..12", "-e", "0.25", "-k", "5", "-o",
                 str(tmp_path / "p.csv"), "--seed", "1", "-q"]) == 0
    st = _status(led, capsys)
    assert set(st) >= {"dataset", "epsilon", "epsilon_spent", "releases"}
    assert st["dataset"] == "baskets" and st["epsilon"] == 1.0 and st["epsilon_spent"] == 0.8
    assert [(r["command"], r["epsilon"], r["output"], r["state"]) for r in st["releases"]] == [
        ("diffpart", 0.25, str((tmp_path / "r.dat").resolve()), "complete"),
        ("tf", 0.3, str((tmp_path / "t.csv").resolve()), "complete"),
        ("privbasis", 0.25, str((tmp_path / "p.csv").resolve()), "complete")]
    manifest = json.loads((tmp_path / "r.dat.manifest.json").read_text())
    assert st["releases"][0]["created"] == manifest["created_utc"]  # the command's start, as in the manifest

    before = _dump(led)
    capsys.readouterr()
    out = tmp_path / "b.dat"
    assert main(["basic", str(BASKETS), "--universe", "1..12", "-e", "0.25", "-o", str(out)]) == 2
    cap = capsys.readouterr()
    assert len(cap.err.strip().splitlines()) == 1 and "refused" in cap.err and "0.2 of 1 remains" in cap.err
    assert cap.out == "" and not out.exists() and not Path(f"{out}.manifest.json").exists()
    assert not list(tmp_path.glob(".b.dat*"))  # no temp file either: nothing was drawn or written
    assert _dump(led) == before
    assert main(_diffpart(tmp_path / "r2.dat", "0.2")) == 0  # exactly what remains
    assert _status(led, capsys)["epsilon_spent"] == 1.0
    capsys.readouterr()
    assert main(["ledger", "history", str(led)]) == 0
    text = capsys.readouterr().out
    assert "privbasis" in text and "spent 1, remaining 0" in text


def test_non_dp_commands_never_charge(tmp_path, capsys, monkeypatch):
    led = _init(tmp_path / "l.db", capsys=capsys)
    assert main(_diffpart(tmp_path / "r.dat", "0.5", "--ledger", str(led))) == 0
    before = _dump(led)
    monkeypatch.setenv("DPRELEASE_LEDGER", str(led))
    assert main(["stats", str(BASKETS), "--universe", "1..12", "-q"]) == 0
    assert main(["evaluate", "counting", str(BASKETS), str(tmp_path / "r.dat"), "--universe", "1..12",
                 "--queries", "200", "-q"]) == 0
    assert main(["tds", str(TABLE), "--schema", str(SCHEMA), "-k", "2", "-o", str(tmp_path / "tds.csv"), "-q"]) == 0
    assert main(["generate", str(tmp_path / "g.dat"), "--records", "50", "--items", "10", "-q"]) == 0
    assert main(["mondrian", str(TABLE), "--schema", str(SCHEMA), "-k", "2", "-o", str(tmp_path / "m.csv"), "-q"]) == 0
    assert main(["report", str(BASKETS), str(tmp_path / "r.dat"), "-o", str(tmp_path / "r.html"), "--queries", "100",
                 "-q"]) == 0
    assert _dump(led) == before
    for argv in (["stats", str(BASKETS), "--ledger", str(led)],
                 ["tds", str(TABLE), "--schema", str(SCHEMA), "-o", str(tmp_path / "x.csv"), "--ledger", str(led)],
                 ["mondrian", str(TABLE), "--schema", str(SCHEMA), "-k", "2", "-o", str(tmp_path / "y.csv"), "--ledger",
                  str(led)]):
        with pytest.raises(SystemExit) as exc:  # they have no --ledger option at all
            main(argv)
        assert exc.value.code == 2


def test_reservation_is_committed_before_the_data_is_read(tmp_path, capsys, monkeypatch):
    import dprelease.data.graphs as graphs_mod
    import dprelease.data.io as io_mod
    import dprelease.data.table as table_mod

    led = _init(tmp_path / "l.db", eps="2", capsys=capsys)
    seen: list[tuple[str, str]] = []

    def check(what: str) -> None:
        charges = ledger.ledger_status(led).charges  # another connection: only committed rows are visible
        assert charges and charges[-1].state == "reserved", f"{what} read its data before reserving"
        seen.append((what, charges[-1].command))

    real_read = io_mod.read_transactions  # looked up at call time by every reader of transactions
    monkeypatch.setattr(io_mod, "read_transactions", lambda *a, **k: (check("transactions"), real_read(*a, **k))[1])
    real_table = table_mod.read_table
    monkeypatch.setattr(table_mod, "read_table", lambda *a, **k: (check("table"), real_table(*a, **k))[1])
    assert main(_diffpart(tmp_path / "r.dat", "0.5", "--ledger", str(led))) == 0
    assert main(["basic", str(BASKETS), "--universe", "1..12", "-e", "0.5", "-o", str(tmp_path / "b.dat"), "-q",
                 "--ledger", str(led)]) == 0
    assert main(["diffgen", str(TABLE), "--schema", str(SCHEMA), "-e", "0.5", "-H", "2", "-o",
                 str(tmp_path / "g.csv"), "-q", "--seed", "1", "--ledger", str(led)]) == 0
    assert main(["rps", str(TABLE), "--schema", str(SCHEMA), "-e", "0.2", "-H", "3", "-o", str(tmp_path / "s.csv"),
                 "-q", "--seed", "1", "--ledger", str(led)]) == 0
    real_graph = graphs_mod.read_edge_list
    monkeypatch.setattr(graphs_mod, "read_edge_list", lambda *a, **k: (check("graph"), real_graph(*a, **k))[1])
    graph = tmp_path / "g.txt"
    graph.write_text("0 1\n1 2\n2 0\n2 3\n")
    assert main(["degrees", str(graph), "-e", "0.2", "--theta", "3", "-o", str(tmp_path / "d.txt"), "-q",
                 "--seed", "1", "--ledger", str(led)]) == 0
    assert seen == [("transactions", "diffpart"), ("transactions", "basic"), ("table", "diffgen"), ("table", "rps"),
                    ("graph", "degrees")]
    assert [c.state for c in ledger.ledger_status(led).charges] == ["complete"] * 5
    # each charge is what its run's accountant admitted (the manifest's epsilon_spent), never below the declared
    declared = ["0.5", "0.5", "0.5", "0.2", "0.2"]
    for c, out, eps in zip(ledger.ledger_status(led).charges, ("r.dat", "b.dat", "g.csv", "s.csv", "d.txt"), declared):
        spent = json.loads((tmp_path / f"{out}.manifest.json").read_text())["privacy"]["epsilon_spent"]
        assert c.epsilon == max(ledger.exact_epsilon(eps), ledger.exact_epsilon(spent))


def test_public_refusals_spend_nothing_and_late_failures_stay_counted(tmp_path, capsys):
    led = _init(tmp_path / "l.db", capsys=capsys)
    (tmp_path / "exists.dat").write_text("x\n")
    before = _dump(led)
    refused = [
        _diffpart(tmp_path / "exists.dat", "0.5", "--ledger", str(led)),  # existing output, no --force
        ["diffpart", str(tmp_path / "missing.dat"), "--universe", "1..12", "-e", "0.5", "-o", str(tmp_path / "o.dat"),
         "--ledger", str(led)],  # no such input
        ["diffpart", str(BASKETS), "--universe", "1..119", "-e", "1", "--fanout", "40", "-o", str(tmp_path / "o.dat"),
         "--ledger", str(led)],  # the work bound
        ["basic", str(BASKETS), "--universe", "1..30", "-e", "0.5", "-o", str(tmp_path / "o.dat"), "--ledger",
         str(led)],  # basic's universe limit
        ["diffgen", str(TABLE), "--schema", str(SCHEMA), "-e", "0.5", "--method", "faithful", "-o",
         str(tmp_path / "o.csv"), "--ledger", str(led)],  # --specializations missing (Algorithm 1 needs h)
        ["rps", str(TABLE), "--schema", str(REPO / "examples" / "adult-schema.yaml"), "-e", "0.5", "-H", "40",
         "-o", str(tmp_path / "o.csv"), "--ledger", str(led)],  # the work bound (2^40 regions)
        ["degrees", str(tmp_path / "missing.txt"), "-e", "0.5", "--theta", "3", "-o", str(tmp_path / "o.txt"),
         "--ledger", str(led)],  # no such graph
        ["degrees", str(TABLE), "-e", "0.5", "--theta", "3", "--method", "hay", "--depth", "2", "-o",
         str(tmp_path / "o.txt"), "--ledger", str(led)],  # an rps-only option
        _diffpart(tmp_path / "o.dat", "1.5", "--ledger", str(led)),  # more than the total
        _diffpart(tmp_path / "o.dat", "0.5", "--ledger", str(tmp_path / "nope.db")),  # no such ledger
        _diffpart(led, "0.5", "--ledger", str(led), "--force"),  # the ledger itself, even with --force
    ]
    for argv in refused:
        capsys.readouterr()
        assert main(argv) == 2, argv
        assert len(capsys.readouterr().err.strip().splitlines()) == 1, argv
        assert _dump(led) == before, argv
    assert not (tmp_path / "o.dat").exists() and not (tmp_path / "o.csv").exists()

    bad = tmp_path / "bad.dat"
    bad.write_text("1 2 3\n4 5 99\n")  # item 99 is outside the universe: found only by reading the data
    assert main(["diffpart", str(bad), "--universe", "1..12", "-e", "0.4", "-o", str(tmp_path / "o.dat"), "-q",
                 "--ledger", str(led)]) == 2
    st = _status(led, capsys)
    assert st["epsilon_spent"] == 0.4 and st["incomplete"] == 1
    assert st["releases"][0]["state"] == "incomplete"
    capsys.readouterr()
    assert main(["ledger", "status", str(led)]) == 0
    cap = capsys.readouterr()
    assert "releases: 1 (1 incomplete)" in cap.out and "stays counted" in cap.err
    capsys.readouterr()
    assert main(_diffpart(tmp_path / "o.dat", "0.7", "--ledger", str(led))) == 2  # 0.6 remains
    assert "only 0.6 of 1 remains (0.4 spent by 1 charges, 1 of them incomplete)" in capsys.readouterr().err


def test_ledger_init_and_status_errors(tmp_path, capsys):
    led = _init(tmp_path / "l.db", capsys=capsys)
    assert main(["ledger", "init", str(led), "--dataset", "x", "--epsilon", "1"]) == 2
    for argv in (["ledger", "init", str(tmp_path / "m.db"), "--dataset", "x", "--epsilon", "0"],
                 ["ledger", "init", str(tmp_path / "m.db"), "--dataset", "x", "--epsilon", "nan"],
                 ["ledger", "init", str(tmp_path / "m.db"), "--epsilon", "1"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
    assert not (tmp_path / "m.db").exists()
    (tmp_path / "junk.db").write_bytes(b"\x00junk")
    capsys.readouterr()
    assert main(["ledger", "status", str(tmp_path / "junk.db")]) == 2
    assert "not a dprelease ledger" in capsys.readouterr().err
    assert main(["ledger", "history", str(led), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"dataset": "baskets", "epsilon": 1.0, "history": []}


def _stream_init(state: Path, *extra: str) -> list[str]:
    return ["stream", "init", str(state), "--epsilon", "0.6", "--updates", "2", "--universe", "1..12", "--fanout",
            "4", "--seed", "3", "-q", *extra]


def test_stream_reserves_its_whole_epsilon_and_records_appends(tmp_path, capsys, monkeypatch):
    led = _init(tmp_path / "l.db", capsys=capsys)
    state = tmp_path / "s.db"
    assert main(_stream_init(state, "--ledger", str(led))) == 0
    st = _status(led, capsys)
    assert st["epsilon_spent"] == 0.6 and st["releases"][0]["command"] == "stream init"
    assert st["releases"][0]["output"] == str(state.resolve()) and st["releases"][0]["state"] == "complete"
    with sqlite3.connect(str(state)) as conn:
        remembered = json.loads(conn.execute("SELECT value FROM meta WHERE key = 'ledger'").fetchone()[0])
    assert remembered == {"path": str(led.resolve()), "ledger_id": st["ledger_id"], "charge": 1}
    # appends need no --ledger: the state remembers it; each is recorded, covered by the init's charge
    for i in range(2):
        assert main(["stream", "append", str(state), str(BASKETS), "-o", str(tmp_path / f"a{i}.dat"), "-q"]) == 0
    st = _status(led, capsys)
    assert st["epsilon_spent"] == 0.6
    assert [(r["command"], r["epsilon"], r.get("covered_by"), r["state"]) for r in st["releases"]] == [
        ("stream init", 0.6, None, "complete"), ("stream append", 0.0, 1, "complete"),
        ("stream append", 0.0, 1, "complete")]
    # the rest of the dataset's budget is still guarded
    capsys.readouterr()
    assert main(_diffpart(tmp_path / "r.dat", "0.5", "--ledger", str(led))) == 2
    assert "only 0.4 of 1 remains" in capsys.readouterr().err
    # another ledger is refused for this stream; a stream made without a ledger refuses a configured one
    other = tmp_path / "other.db"
    ledger.init_ledger(other, dataset="x", epsilon=5.0)
    capsys.readouterr()
    assert main(["stream", "append", str(state), str(BASKETS), "-o", str(tmp_path / "a9.dat"), "--ledger",
                 str(other)]) == 2
    assert "not the ledger" in capsys.readouterr().err and not (tmp_path / "a9.dat").exists()
    plain = tmp_path / "plain.db"
    assert main(_stream_init(plain)) == 0
    monkeypatch.setenv("DPRELEASE_LEDGER", str(other))
    capsys.readouterr()
    assert main(["stream", "append", str(plain), str(BASKETS), "-o", str(tmp_path / "p.dat")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "created without a ledger" in err
    assert ledger.ledger_status(other).charges == ()
    # a stream init that does not fit is refused, no state is made
    assert main(_stream_init(tmp_path / "s2.db", "--ledger", str(led))) == 2
    assert not (tmp_path / "s2.db").exists()


# --- what the accountant admitted; privacy units -------------------------------------------------------------


def test_the_ledger_records_what_the_accountant_admitted(tmp_path, capsys):
    """diffpart at a declared 0.3 admits 0.30000000000000004 (float budget splits, within the accountant's relative
    slack): the ledger records that, not the 0.3 typed, so its remaining budget does not over-report."""
    led = _init(tmp_path / "l.db", capsys=capsys)
    assert main(_diffpart(tmp_path / "r.dat", "0.3", "--ledger", str(led))) == 0
    manifest = json.loads((tmp_path / "r.dat.manifest.json").read_text())
    assert manifest["epsilon"] == 0.3 and manifest["privacy"]["epsilon_spent"] == 0.30000000000000004
    st = _status(led, capsys)
    assert st["releases"][0]["epsilon"] == 0.30000000000000004
    assert st["exact"] == {"epsilon": "1", "epsilon_spent": "0.30000000000000004",
                           "epsilon_remaining": "0.69999999999999996"}
    # 0.7 more is within the accountants' relative slack (as 0.3 + 0.7 in one run would be): admitted, and the
    # ledger reports the exact total above 1, not "1 spent, 0 remaining"
    assert main(_diffpart(tmp_path / "r2.dat", "0.7", "--ledger", str(led))) == 0
    st = _status(led, capsys)
    spent2 = json.loads((tmp_path / "r2.dat.manifest.json").read_text())["privacy"]["epsilon_spent"]
    assert ledger.exact_epsilon(st["exact"]["epsilon_spent"]) == (ledger.exact_epsilon("0.30000000000000004")
                                                                  + max(ledger.exact_epsilon(spent2), Fraction(7, 10)))
    assert -1e-15 < st["epsilon_remaining"] < 0 and st["exact"]["epsilon_remaining"].startswith("-0.000000000000000")
    capsys.readouterr()
    assert main(_diffpart(tmp_path / "r3.dat", "0.000001", "--ledger", str(led))) == 2  # past the slack


def test_complete_settles_to_the_manifests_spend(tmp_path):
    path = tmp_path / "l.db"
    ledger.init_ledger(path, dataset="d", epsilon=1.0)

    def release(name: str, spent, unit: str | None = None) -> str:
        out = tmp_path / name
        out.write_text("x\n")
        manifest = {"epsilon": 0.3, "privacy": {"epsilon_total": 0.3, "epsilon_spent": spent}}
        if unit:
            manifest["privacy_unit"] = unit
        Path(f"{out}.manifest.json").write_text(json.dumps(manifest))
        return str(out)

    over = ledger.reserve(path, "x", 0.3, output=release("a", 0.30000000000000004, "record"), created="t")
    under = ledger.reserve(path, "x", 0.3, output=release("b", 0.25), created="t")  # never below the declared
    junk = ledger.reserve(path, "x", 0.1, output=release("c", "n/a"), created="t")  # no usable spend: as reserved
    bare = ledger.reserve(path, "x", 0.1, output=str(tmp_path / "no-manifest"), created="t")
    covered = ledger.reserve(path, "x", 0.0, output=release("d", 0.5), created="t", covered_by=over.id)
    for c in (over, under, junk, bare, covered):
        ledger.complete(path, c.id)
    charges = ledger.ledger_status(path).charges
    assert [ledger.decimal_text(c.epsilon) for c in charges] == ["0.30000000000000004", "0.3", "0.1", "0.1", "0"]
    assert [c.privacy_unit for c in charges] == ["record", None, None, None, None]
    assert ledger.decimal_text(ledger.ledger_status(path).remaining) == "0.19999999999999996"
    # an explicit spend wins over the manifest
    c = ledger.reserve(path, "x", 0.1, output=release("e", 0.1), created="t")
    ledger.complete(path, c.id, spent=0.10000000000000002)
    assert ledger.decimal_text(ledger.ledger_status(path).charges[-1].epsilon) == "0.10000000000000002"


def test_a_ledger_made_before_the_privacy_unit_column_still_opens(tmp_path):
    path = tmp_path / "l.db"
    ledger.init_ledger(path, dataset="d", epsilon=1.0)
    c = ledger.reserve(path, "x", 0.25, output="o", created="t")
    with sqlite3.connect(str(path)) as conn:  # the older schema: no privacy_unit column
        conn.execute("ALTER TABLE charges DROP COLUMN privacy_unit")
    st = ledger.ledger_status(path)
    assert st.charges[0].privacy_unit is None and st.spent == Fraction(1, 4)
    ledger.mark_privacy_unit(path, c.id, "record")  # the column is added on the first unit recorded
    assert ledger.ledger_status(path).charges[0].privacy_unit == "record"
    with pytest.raises(ParameterError):
        ledger.mark_privacy_unit(path, c.id, "household")


@pytest.mark.parametrize("extra, reserved, unit", [
    (["--accounting", "parallel", "--privacy-unit", "record"], "0.25", "record"),
    (["--accounting", "parallel", "--privacy-unit", "person", "--max-batches-per-person", "2", "--updates", "4"],
     "0.5", "person"),
    (["--accounting", "parallel", "--privacy-unit", "person", "--max-batches-per-person", "9", "--updates", "2"],
     "0.75", "person"),
    (["--accounting", "parallel", "--privacy-unit", "person", "--updates", "1"], "0.5", "person"),
    (["--updates", "2"], "0.25", "person"),
])
def test_stream_init_reserves_what_its_privacy_unit_implies(tmp_path, capsys, extra, reserved, unit):
    """Parallel, record: epsilon, marked record-level; parallel, person: min(K, U + 1) * epsilon; paper: epsilon."""
    led = _init(tmp_path / "l.db", capsys=capsys)
    state = tmp_path / "s.db"
    assert main(["stream", "init", str(state), "--epsilon", "0.25", "--universe", "1..12", "--seed", "3", "-q",
                 "--ledger", str(led), *extra]) == 0
    st = _status(led, capsys)
    assert st["exact"]["epsilon_spent"] == reserved
    assert st["releases"][0]["privacy_unit"] == unit and st["releases"][0]["state"] == "complete"
    capsys.readouterr()
    assert main(["stream", "status", str(state), "--json"]) == 0
    stream = json.loads(capsys.readouterr().out)
    assert stream["privacy_unit"] == unit and stream["privacy_unit_epsilon"] == float(reserved)
    assert main(["stream", "append", str(state), str(BASKETS), "-o", str(tmp_path / "a.dat"), "-q"]) == 0
    assert ledger.ledger_status(led).charges[-1].privacy_unit == unit  # the append's manifest states it
    capsys.readouterr()
    assert main(["ledger", "status", str(led)]) == 0
    err = capsys.readouterr().err
    assert ("charge #1 protects one record, not one person" in err) == (unit == "record")


def test_stream_init_reserves_what_the_appends_will_admit(tmp_path, capsys):
    """Paper accounting at epsilon 1 over U = 4: five appends of float(1/5) = 0.2 admit 1.0000000000000002 in all
    (0.2 is a little above 1/5), and that is what the ledger reserves at init, within the slack of a ledger of 1."""
    led = _init(tmp_path / "l.db", capsys=capsys)
    state = tmp_path / "s.db"
    assert main(["stream", "init", str(state), "--epsilon", "1", "--updates", "4", "--universe", "1..12", "--seed",
                 "3", "-q", "--ledger", str(led)]) == 0
    st = _status(led, capsys)
    assert st["exact"]["epsilon_spent"] == "1.0000000000000002" and st["epsilon_remaining"] < 0  # never over-reported
    for i in range(5):
        assert main(["stream", "append", str(state), str(BASKETS), "-o", str(tmp_path / f"a{i}.dat"), "-q"]) == 0
    manifest = json.loads((tmp_path / "a4.dat.manifest.json").read_text())
    assert manifest["privacy"]["epsilon_spent"] == 1.0000000000000002  # what the stream's accountant admitted
    assert manifest["privacy"]["privacy_unit_epsilon"] == 1.0000000000000002
    assert _status(led, capsys)["exact"]["epsilon_spent"] == "1.0000000000000002"
