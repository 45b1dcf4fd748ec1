"""dprelease in a notebook: a DataFrame in, a differentially private release out.

Run it as a script (python examples/quickstart.py) or cell by cell in a notebook; it writes into a temporary
folder. Every release below is seeded so that the output is reproducible: a seed is experiment mode, NOT for
publication; drop ``seed=`` for a release to publish (the secure RNG).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd

import dprelease as dp

work = Path(tempfile.mkdtemp(prefix="dprelease-quickstart-"))

# 1. Shopping baskets as a long DataFrame: one row per (basket, item).
examples = Path(__file__).resolve().parent
lines = [line.split() for line in (examples / "baskets.dat").read_text().splitlines()
         if line.strip() and not line.startswith("#")]
orders = pd.DataFrame([(i, int(item)) for i, basket in enumerate(lines) for item in basket],
                      columns=["order_id", "product"])

# 2. A budget ledger for this dataset: every release is charged before the data is read.
ledger = dp.Ledger(work / "orders.ledger", dataset="orders", epsilon=2.0)

# 3. Release the baskets (DiffPart-Prefix, the default method) and the top-10 itemsets (PrivBasis).
#    The item universe is public and declared: products 1..12.
baskets = dp.diffpart(orders, universe="1..12", epsilon=1.0, seed=7, ledger=ledger)
top = dp.privbasis(orders, k=10, universe="1..12", epsilon=0.5, seed=7, ledger=ledger)
print(baskets)                       # in a notebook, the object shows as a table (epsilon, RNG mode, preview)
print(baskets.to_pandas().head())    # released records: itemset, count
print(top.to_pandas().head())        # released itemsets: itemset, noisy count, frequency

# 4. What the release says about itself (the manifest), and its uncertainty where the release answers counts.
print(baskets.manifest["privacy"])
if hasattr(baskets.release, "count"):  # error bars, where this version ships them
    print(baskets.count(("1", "2")))

# 5. Write it (a file and its manifest), and see what the ledger holds.
baskets.write(work / "baskets.dat")
status = ledger.status()
print(f"ledger: spent {float(status.spent):g} of {float(status.epsilon):g}, remaining {float(status.remaining):g}")
assert abs(float(status.remaining) - 0.5) < 1e-9

# 6. A table for classification from a DataFrame, with a schema built from the column types and declared domains.
jobs = pd.read_csv(examples / "table1-jobs.csv")
schema = dp.schema_from_dtypes(jobs, target="Class", bounds={"Age": (18, 65)},
                               taxonomies={"Job": {"ANY_Job": [{"Professional": ["Engineer", "Lawyer"]},
                                                               {"Artist": ["Dancer", "Writer"]}]}},
                               classes=["Y", "N"])
table = dp.diffgen(jobs, schema=schema, epsilon=0.5, seed=7, ledger=ledger)
print(table.to_pandas())
print(f"ledger after the table: remaining {float(ledger.status().remaining):g}")
