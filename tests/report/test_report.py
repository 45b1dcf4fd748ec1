"""``dprelease report``: the page's numbers are the evaluate commands' numbers, it is
self-contained, says it is for the custodian, renders in a real browser, and refuses what every output refuses.

Browser checks: headless Chromium (Debian's ``chromium``; ``.ci/run`` installs it where apt is available) opens
each kind of report at a phone's width; every image must load (naturalWidth > 0) and nothing may overflow the
viewport horizontally. Where Chromium is absent that part is skipped with the reason."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from dprelease.cli import main

REPO = Path(__file__).resolve().parents[2]
BASKETS = REPO / "examples" / "baskets.dat"
TABLE = REPO / "examples" / "table1-jobs.csv"
SCHEMA = REPO / "examples" / "table1-schema.yaml"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "headless Chromium is not installed (Debian: apt-get install chromium; .ci/run does it where apt is available)"

# Appended to a copy of the page: after load, write what the checks found into the DOM for --dump-dom.
CHECK = """
<script>
(function () {
  function check() {
    var vw = document.documentElement.clientWidth;
    var imgs = Array.prototype.slice.call(document.images);
    var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                     .map(function (i) { return i.alt; });
    var wide = Array.prototype.slice.call(document.querySelectorAll("main *")).filter(function (e) {
      return e.getBoundingClientRect().right > vw + 0.5 && !(e.parentElement && e.parentElement.closest(".scroll"));
    }).map(function (e) { return e.tagName + "." + e.className; }).slice(0, 8);
    var out = document.createElement("pre");
    out.id = "dprelease-check";
    out.textContent = JSON.stringify({viewport: vw, scroll_width: document.documentElement.scrollWidth,
                                      images: imgs.length, broken: broken, wide: wide});
    document.body.appendChild(out);
  }
  if (document.readyState === "complete") { check(); } else { window.addEventListener("load", check); }
})();
</script>
"""


def render_checks(page: Path, tmp: Path, width: int = 400) -> dict:
    """Open a copy of ``page`` with the checks in headless Chromium at ``width`` px; return the checks' result."""
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    probe = tmp / f"probe-{page.stem}.html"
    probe.write_text(page.read_text().replace("</body>", CHECK + "</body>"))
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={tmp / 'chromium-profile'}", f"--window-size={width},900", "--hide-scrollbars",
           "--virtual-time-budget=5000", "--dump-dom", probe.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    m = re.search(r'<pre id="dprelease-check">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"chromium printed no check result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(1)))



def assert_renders(page: Path, tmp: Path, n_images: int) -> None:
    got = render_checks(page, tmp)
    assert got["images"] == n_images and got["broken"] == [], got
    assert got["scroll_width"] <= got["viewport"] and got["wide"] == [], got



def _run_json(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("releases")
    assert main(["diffpart", str(BASKETS), "--universe", "1..12", "-e", "1", "-o", str(d / "dp.dat"), "--seed", "4",
                 "-q"]) == 0
    assert main(["privbasis", str(BASKETS), "--universe", "1..12", "-e", "1", "-k", "10", "-o", str(d / "pb.csv"),
                 "--seed", "4", "-q"]) == 0
    assert main(["diffgen", str(TABLE), "--schema", str(SCHEMA), "-e", "2", "-H", "2", "-o", str(d / "dg.csv"),
                 "--seed", "4", "-q"]) == 0
    return {"setvalued": d / "dp.dat", "itemsets": d / "pb.csv", "table": d / "dg.csv"}


def check_self_contained(page: str) -> list[bytes]:
    """No script, stylesheet link, font or image URL: everything is inline; returns the embedded PNGs."""
    assert "<script" not in page.lower() and "<link" not in page.lower() and "@import" not in page
    assert "url(" not in page
    for attr in re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', page):
        assert attr.startswith("data:image/png;base64,"), attr[:60]
    pngs = [base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)]
    assert pngs and all(p.startswith(b"\x89PNG\r\n\x1a\n") for p in pngs)
    return pngs


def test_setvalued_report_matches_evaluate(tmp_path, releases, capsys):
    rel = releases["setvalued"]
    out = tmp_path / "r.html"
    got = _run_json(["report", str(BASKETS), str(rel), "-o", str(out), "--queries", "2000", "--json", "-q"], capsys)
    assert got["kind"] == "setvalued" and got["report"] == str(out)
    m = got["metrics"]
    counting = _run_json(["evaluate", "counting", str(BASKETS), str(rel), "--universe", "1..12", "--queries", "2000",
                          "--json", "-q"], capsys)
    assert m["occurrence"] == counting.pop("occurrence")  # evaluate counting reports it beside the errors
    assert counting.pop("coverage")["values"] == 1000  # and the error bars' coverage (the report: its own section)
    assert m["error_bars"]["values"] == 12  # every item's count with its interval
    assert 0 <= counting.pop("lengths")["tv"] <= 1  # and the record length distance (not in the report yet)
    assert m["counting"] == counting  # the same workload, the same numbers
    topk = _run_json(["evaluate", "topk", str(BASKETS), str(rel), "--universe", "1..12", "-k", "50", "--json", "-q"],
                     capsys)
    assert m["topk_utility"]["50"] == pytest.approx(topk["utility"], abs=1e-12)
    assert m["raw_records"] == 3000
    manifest = json.loads(Path(f"{rel}.manifest.json").read_text())
    assert m["released_records"] == manifest["release"]["records"]
    page = out.read_text()
    assert len(check_self_contained(page)) == 3
    assert "Custodian only" in page and "NOT differentially private" in page
    assert "Seeded experiment mode (seed 4)" in page  # the seeded-mode warning
    assert manifest["body_sha256"] in page and "declared by the custodian as an integer range" in page
    assert "Relative error of counting queries by query length" not in page  # titles live in the PNGs
    assert_renders(out, tmp_path, 3)


def test_itemsets_report_matches_evaluate(tmp_path, releases, capsys):
    rel = releases["itemsets"]
    got = _run_json(["report", str(BASKETS), str(rel), "-o", str(tmp_path / "r.html"), "--json", "-q"], capsys)
    assert got["kind"] == "itemsets" and got["metrics"]["k"] == 10
    ev = _run_json(["evaluate", "itemsets", str(BASKETS), str(rel), "-k", "10", "--universe", "1..12", "--json", "-q"],
                   capsys)
    for key in ("fnr", "median_relative_error"):
        assert got["metrics"][key] == pytest.approx(ev[key], abs=1e-12)
    assert 0 <= got["metrics"]["precision"] <= 1
    page = (tmp_path / "r.html").read_text()
    check_self_contained(page)
    assert "PrivBasis" in page and "published itemset" in page
    assert_renders(tmp_path / "r.html", tmp_path, 2)


def test_table_report(tmp_path, releases, capsys):
    rel = releases["table"]
    got = _run_json(["report", str(TABLE), str(rel), "-o", str(tmp_path / "r.html"), "--json", "-q",
                     "--queries", "300"], capsys)
    m = got["metrics"]
    assert got["kind"] == "table" and m["records"] == 8 and m["records_outside_cells"] == 0
    # CA, BA and LA are all scored on the same held-out third: 3 of the 8 records (the split trains on 2 * 8 // 3)
    assert m["test_records"] == 3 and sum(sum(row) for row in m["confusion"]) == 3
    assert 0 <= m["accuracy_release"] <= 1 and 0 <= m["accuracy_majority"] <= 1
    ev = _run_json(["evaluate", "ranges", str(TABLE), str(rel), "--schema", str(SCHEMA), "--queries", "300", "--json",
                    "-q"], capsys)
    assert m["range_queries"]["mean_relative_error"] == pytest.approx(ev["mean_relative_error"], rel=1e-12)
    assert [x["mean_relative_error"] for x in m["range_queries"]["subsets"]] == pytest.approx(
        [x["mean_relative_error"] for x in ev["subsets"]], rel=1e-12)
    page = (tmp_path / "r.html").read_text()
    check_self_contained(page)
    assert "public bounds [18, 65)" in page
    assert_renders(tmp_path / "r.html", tmp_path, 3)


def test_synthetic_table_report(tmp_path, capsys):
    """RPS (and Mondrian, which says it is not DP): a synthetic table's report; ranges as `evaluate ranges`."""
    rel = tmp_path / "s.csv"
    assert main(["rps", str(TABLE), "--schema", str(SCHEMA), "-e", "1", "-H", "3", "-o", str(rel), "--seed", "1",
                 "-q"]) == 0
    got = _run_json(["report", str(TABLE), str(rel), "-o", str(tmp_path / "r.html"), "--json", "-q",
                     "--queries", "300"], capsys)
    ev = _run_json(["evaluate", "ranges", str(TABLE), str(rel), "--schema", str(SCHEMA), "--queries", "300", "--json",
                    "-q"], capsys)
    assert got["kind"] == "table"
    assert got["metrics"]["range_queries"]["mean_relative_error"] == pytest.approx(ev["mean_relative_error"],
                                                                                rel=1e-12)
    page = (tmp_path / "r.html").read_text()
    assert len(check_self_contained(page)) == 3 and "Recursive partitioning" in page
    assert main(["mondrian", str(TABLE), "--schema", str(SCHEMA), "-k", "2", "-o", str(tmp_path / "m.csv"), "--seed",
                 "1", "-q"]) == 0
    assert main(["report", str(TABLE), str(tmp_path / "m.csv"), "-o", str(tmp_path / "m.html"), "-q",
                 "--queries", "100"]) == 0
    page = (tmp_path / "m.html").read_text()
    assert "NOT differentially private" in page and "No epsilon" in page
    # a headerless raw table (the schema lists 'columns', as Adult's): the release has a header all the same
    schema = tmp_path / "cols.yaml"
    schema.write_text(SCHEMA.read_text() + "columns: [Job, Age, Class]\n")
    raw = tmp_path / "raw.csv"
    raw.write_text("".join(TABLE.read_text().splitlines(keepends=True)[1:]))
    assert main(["rps", str(raw), "--schema", str(schema), "-e", "1", "-H", "3", "-o", str(tmp_path / "h.csv"),
                 "--seed", "1", "-q"]) == 0
    got = _run_json(["report", str(raw), str(tmp_path / "h.csv"), "-o", str(tmp_path / "h.html"), "--json", "-q",
                     "--queries", "100"], capsys)
    assert got["metrics"]["records"] == 8


def test_degrees_report(tmp_path, capsys):
    graph = tmp_path / "g.txt"
    rng = np.random.default_rng(5)
    edges = {tuple(sorted(e)) for e in rng.integers(0, 120, (400, 2)).tolist() if e[0] != e[1]}
    graph.write_text("".join(f"{u} {v}\n" for u, v in sorted(edges)))
    rel = tmp_path / "d.txt"
    assert main(["degrees", str(graph), "-e", "1", "--theta", "8", "-o", str(rel), "--graph-out",
                 str(tmp_path / "e.txt"), "--seed", "3", "-q"]) == 0
    got = _run_json(["report", str(graph), str(rel), "-o", str(tmp_path / "r.html"), "--json", "-q"], capsys)
    ev = _run_json(["evaluate", "degrees", str(graph), str(rel), "--json", "-q"], capsys)
    assert got["kind"] == "degrees"
    assert {k: got["metrics"][k] for k in ("ks", "l1", "emd")} == pytest.approx(
        {k: ev[k] for k in ("ks", "l1", "emd")}, rel=1e-12)
    assert ev["coverage"]["values"] > 0 and 0.0 <= ev["coverage"]["coverage"] <= 1.0
    assert got["metrics"]["nodes"] == 120 and got["metrics"]["released_max_degree"] <= 8
    page = (tmp_path / "r.html").read_text()
    assert len(check_self_contained(page)) == 2 and "θ = 8" in page and "node-DP" in page
    assert "Error bars (95 %)" in page and got["metrics"]["error_bars"]["values"] > 0
    assert_renders(tmp_path / "r.html", tmp_path, 2)
    # the regenerated graph is a degrees release too
    got = _run_json(["report", str(graph), str(tmp_path / "e.txt"), "-o", str(tmp_path / "g.html"), "--json", "-q"],
                    capsys)
    assert got["kind"] == "degrees" and "regenerated" in (tmp_path / "g.html").read_text()


def test_generalized_table_reads_back_exactly(tmp_path):
    from dataclasses import replace

    from dprelease.data.table import load_schema, read_table
    from dprelease.privacy import make_noise
    from dprelease.relational.diffgen import diffgen
    from dprelease.release.table import GeneralizedTable
    from dprelease.report.page import Page
    from dprelease.report.table import table_section

    schema = load_schema(SCHEMA)
    table = read_table(TABLE, schema)
    release = diffgen(table, 50.0, 3, noise=make_noise(11))
    out = tmp_path / "g.csv"
    release.write(out)
    back = GeneralizedTable.read(out, schema)
    assert back.cut == release.cut
    np.testing.assert_array_equal(back.cells, release.cells)
    np.testing.assert_array_equal(back.counts, release.counts)
    # with the true counts every cell error and range-query error is 0
    exact = replace(release, counts=np.zeros_like(release.counts))
    keys = {tuple(c): i for i, c in enumerate(release.cells.tolist())}
    for row, y in zip(release.generalize(table).tolist(), table.y.tolist()):
        exact.counts[keys[tuple(row)], y] += 1
    exact.write(tmp_path / "x.csv")
    m = table_section(Page("t"), table, exact, tmp_path / "x.csv", queries=200, seed=0)
    assert m["cell_mean_absolute_error"] == 0 and m["released_records"] == 8
    # a range that cuts a generalized cell spreads it uniformly, so only whole-cell ranges are exact: the median is 0
    assert m["range_queries"]["subsets"][0]["median_relative_error"] == 0


def test_report_refusals(tmp_path, releases, capsys):
    rel = releases["setvalued"]
    cases = [
        (["report", str(BASKETS), str(rel), "-o", str(BASKETS)], "input"),  # never an input
        (["report", str(BASKETS), str(rel), "-o", str(rel)], "input"),
        (["report", str(BASKETS), str(rel), "-o", f"{rel}.manifest.json"], "input"),
        (["report", str(BASKETS), str(rel), "--kind", "table", "-o", str(tmp_path / "x.html")], "diffpart"),
        (["report", str(BASKETS), str(tmp_path / "none.dat"), "-o", str(tmp_path / "x.html")], "manifest"),
    ]
    (tmp_path / "exists.html").write_text("keep me\n")
    cases.append((["report", str(BASKETS), str(rel), "-o", str(tmp_path / "exists.html")], "exists"))
    bad = tmp_path / "bad.dat"
    bad.write_bytes(rel.read_bytes() + b"1 2\n")  # a body its manifest does not describe
    Path(f"{bad}.manifest.json").write_text(Path(f"{rel}.manifest.json").read_text()
                                            .replace('"body": "dp.dat"', '"body": "bad.dat"'))
    cases.append((["report", str(BASKETS), str(bad), "-o", str(tmp_path / "x.html")], "sha256"))
    before = {p: p.read_bytes() for p in (BASKETS, rel, Path(f"{rel}.manifest.json"), tmp_path / "exists.html")}
    for argv, word in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and word in err, (argv, err)
    assert not (tmp_path / "x.html").exists() and not list(tmp_path.glob(".x.html*"))
    assert all(p.read_bytes() == b for p, b in before.items())


def test_derived_universe_and_secure_mode(tmp_path, capsys):
    rel = tmp_path / "d.dat"
    assert main(["diffpart", str(BASKETS), "--universe", "derive", "-e", "1", "-o", str(rel), "-q"]) == 0  # secure, derived
    capsys.readouterr()
    assert main(["report", str(BASKETS), str(rel), "-o", str(tmp_path / "r.html"), "--queries", "500", "-q"]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "DERIVED FROM THE DATA" in page and "Secure: the noise comes from" in page
    assert "Seeded experiment mode" not in page


def test_the_browser_check_catches_a_broken_image_and_an_overflow(tmp_path):
    """The probe itself can fail: a missing image and a too-wide block are reported."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width"></head><body><main>'
                   '<img alt="missing" src="data:image/png;base64,AAAA"><div style="width:2000px">wide</div>'
                   "</main></body></html>")
    got = render_checks(bad, tmp_path)
    assert got["broken"] == ["missing"] and got["scroll_width"] > got["viewport"] and "DIV." in got["wide"]


def test_headlines_stand_beside_their_baselines(tmp_path, releases, capsys):
    """Every headline card names its data-independent baseline; the occurrence card gives exact and contained."""
    got = _run_json(["report", str(BASKETS), str(releases["setvalued"]), "-o", str(tmp_path / "r.html"), "--queries",
                     "1000", "--json", "-q"], capsys)
    m = got["metrics"]
    page = html.unescape((tmp_path / "r.html").read_text())
    glance = page[page.index("At a glance"):page.index("What was released")]
    assert "frequent-itemset queries: mean relative error; empty release 1, uniform baskets" in glance
    assert "random counting queries: mean relative error; empty release" in glance
    assert "top-100 utility, 1 is perfect; empty release 0, uniform baskets" in glance
    occ = m["occurrence"]
    assert (f"{100 * occ['records_exact']:.1f} % / {100 * occ['records_contained']:.1f} %" in glance
            and "contained in one" in glance)
    assert m["counting"]["baselines"]["empty"]["frequent"]["mean_relative_error"] == 1.0
    # the top-K table explains a non-monotone utility: misses of the raw top K and their distance to the K-th
    for row in m["topk_detail"]:
        assert 0 <= row["missing_near_kth"] <= row["missing"] <= row["k"]
        assert row["utility"] <= row["utility_found"] + 1e-12
    assert "raw K-th support" in page


def test_table_report_scores_both_trees_on_one_held_out_split(tmp_path, capsys):
    """CA, BA and LA on the same held-out third; the range headline is the large queries, where an empty table
    scores 1."""
    from dprelease.data.table import load_schema, read_table
    from dprelease.evaluation.splits import split_table
    from dprelease.relational.classify import baseline_accuracy

    data, schema = tmp_path / "t.csv", tmp_path / "s.yaml"
    rng = np.random.default_rng(0)
    x = rng.integers(0, 100, 600)
    data.write_text("x,y\n" + "".join(f"{v},{'a' if v < 50 else 'b'}\n" for v in x.tolist()))
    schema.write_text("attributes:\n  - {name: x, type: numeric, bounds: [0, 100], integer: true}\n"
                      "class: {name: y, values: [a, b]}\n")
    rel = tmp_path / "r.csv"
    assert main(["rps", str(data), "--schema", str(schema), "-e", "5", "-o", str(rel), "--seed", "1", "-q"]) == 0
    m = _run_json(["report", str(data), str(rel), "-o", str(tmp_path / "r.html"), "--json", "-q", "--queries", "200",
                   "--seed", "3"], capsys)["metrics"]
    train, test = split_table(read_table(data, load_schema(schema)), 3, 0)
    assert m["test_records"] == test.n_records == 200 and sum(map(sum, m["confusion"])) == 200
    assert m["accuracy_raw_baseline"] == baseline_accuracy(train, test, 3)
    assert m["accuracy_release"] > 0.9  # the class is a threshold of x: a good release's tree finds it
    base = m["range_queries"]["baselines"]
    assert m["range_queries"]["large_queries"] > 0 and base["empty"]["large_median_relative_error"] == 1.0
    assert m["range_queries"]["large_median_relative_error"] < base["uniform"]["large_median_relative_error"] + 1e-9


def test_scatter_axes_fit_the_points_and_degree_axes_have_no_negative_tick(monkeypatch):
    from dprelease.report import degrees as rdeg
    from dprelease.report.page import Page, new_figure, square_axes

    ax = new_figure().add_subplot()
    assert square_axes(ax, np.array([4400.0, 4500, 8100, 8000])) is None
    lo, hi = ax.get_xlim()
    assert 4000 < lo < 4400 and 8100 < hi < 8500 and ax.get_ylim() == (lo, hi)  # not from 0
    ax = new_figure().add_subplot()
    floor = square_axes(ax, np.array([0.0, 0.001, 0.5]))
    assert floor == 0.0005 and ax.get_xscale() == "log" and ax.get_xlim()[0] < floor
    figures = []
    monkeypatch.setattr(Page, "figure", lambda self, fig, alt, caption=None: figures.append(fig))
    true = np.concatenate([np.arange(200), np.ones(500, dtype=np.int64)])
    out = rdeg.degrees_section(Page("t"), true, true[::-1].copy(), theta=300, graph=False)
    assert out["ks"] == 0 and out["uniform"]["ks"] > 0.5  # the baseline beside it
    for fig in figures:
        axis = fig.axes[0]
        assert axis.get_xlim()[0] >= -0.5 and min(axis.get_xticks()) >= 0
