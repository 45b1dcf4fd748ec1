"""The audit's results table (docs/audit.md, "Results"): each algorithm's largest lower bound and its power.

    nice -n 10 .venv/bin/python benchmarks/audit_table.py --runs 100000 --seed 2026 --out /tmp/audit-table
    nice -n 10 .venv/bin/python benchmarks/audit_table.py --search --seed 2026 --out /tmp/audit-search

One audit per algorithm (every registered name, or those given with --only), one at a time; each writes its
JSON (what ``dprelease audit ALGORITHM --json`` prints) to OUT/ALGORITHM.json, and the script prints one
markdown row per algorithm as it finishes, then the whole table. With ``--search``: ``dprelease audit
ALGORITHM --search`` at its default budget (or --budget) instead, one row per algorithm with the worst pair's
confirmed bound and power.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path


def _fmt(x: object) -> str:
    if x is None:
        return "none"
    if isinstance(x, float):
        return "none" if not math.isfinite(x) else f"{x:.3f}"
    return str(x)


def _row_audit(name: str, out: dict, seconds: float) -> str:
    worst = next((c for c in out["cases"] if c["case"] == out["case"]), None)
    event = f"{out['case'].split('/', 1)[-1]}: `{out['event'][:70]}`" if worst else ""
    rates = f"{worst['p_d']:.4f} / {worst['p_d_prime']:.4f}" if worst and worst["p_d"] is not None else ""
    powers = [c["power"] for c in out["cases"] if c.get("power") is not None]
    best_power = min(powers) if powers else None
    verdict = "**violation**" if out["violation"] else "no violation"
    return (f"| {name} | {len(out['cases'])} | {out['runs']:,} | {_fmt(out['epsilon_lower_bound'])} | {event} | "
            f"{rates} | {_fmt(out.get('power'))} | {_fmt(best_power)} | {seconds / 60:.1f} min | {verdict} |")


def _row_search(name: str, out: dict, seconds: float) -> str:
    pair = out.get("pair", {})
    diff = pair.get("difference", "").replace("\n", "; ")[:60]
    verdict = "**violation**" if out["violation"] else "no violation"
    return (f"| {name} | {out['pairs']} | {out['search_runs']:,} | {out['runs']:,} | {_fmt(out['epsilon_lower_bound'])} "
            f"(claim {_fmt(out['claim'])}) | `{out['event'][:60]}` | {_fmt(out['power'])} | {diff} | "
            f"{seconds:.0f} s | {verdict} |")


HEAD_AUDIT = ("| algorithm | cases | runs per case | max ε lower bound | its case: event | rates D / D′ | power of that case "
              "| best power over cases | time | verdict |\n|---|---|---|---|---|---|---|---|---|---|")
HEAD_SEARCH = ("| algorithm | pairs estimated | search runs | confirmation runs | lower bound (claim) | event | power | "
               "D′ adds | time | verdict |\n|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    from dprelease.audit import algorithms, run_audit
    from dprelease.audit.search import DEFAULT_BUDGET, search

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100_000, help="runs per case (default 100,000)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--only", nargs="*", default=None, metavar="ALGORITHM")
    p.add_argument("--search", action="store_true", help="one --search per algorithm instead of its built-in cases")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="--search budget in seconds")
    p.add_argument("--out", type=Path, default=Path("/tmp/audit-table"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = args.only or algorithms()
    rows = []
    print(HEAD_SEARCH if args.search else HEAD_AUDIT, flush=True)
    for name in names:
        t = time.perf_counter()
        if args.search:
            out = search(name, budget=args.budget, seed=args.seed).as_json()
        else:
            out = run_audit(name, runs=args.runs, seed=args.seed).as_json()
        seconds = time.perf_counter() - t
        out["seconds"] = round(seconds, 1)
        (args.out / f"{name}.json").write_text(json.dumps(out, indent=1, default=str))
        row = (_row_search if args.search else _row_audit)(name, out, seconds)
        rows.append(row)
        print(row, flush=True)
    print("\n" + (HEAD_SEARCH if args.search else HEAD_AUDIT))
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
