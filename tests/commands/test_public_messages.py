"""Messages and refusals are functions of public inputs (or noisy, charged values) only.

TF printed the raw f_k*N on stderr and refused depending on the raw c_k; both now depend on k, epsilon, m,
|I| and rho alone. Checked by running neighbouring / very different datasets with the same public inputs.
"""

from __future__ import annotations

import re

import pytest

from dprelease.data import TransactionDB, Universe
from dprelease.errors import ParameterError
from dprelease.itemsets.tf import tf
from dprelease.privacy import SeededNoise


def test_tf_refusal_does_not_depend_on_the_data():
    universe = Universe.from_range(0, 2999)
    sparse = TransactionDB.from_lists([[0, 1, 2], [1, 2], [3]] * 20, 3000)  # gamma*N >> f_k*N: degenerate
    dense = TransactionDB.from_lists([[0, 1, 2]] * 200_000, 3000)  # f_k*N = 200,000 > gamma*N: not degenerate
    messages = []
    for db in (sparse, dense):
        with pytest.raises(ParameterError) as info:
            tf(db, universe, 10, 1.0, 3, noise=SeededNoise(0))
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    # below the public limit both run
    for db in (TransactionDB.from_lists([[0, 1, 2], [1, 2], [3]] * 20, 60),
               TransactionDB.from_lists([[0, 1, 2]] * 500, 60)):
        tf(db, Universe.from_range(0, 59), 10, 1.0, 3, noise=SeededNoise(0))


def _tf_stderr(tmp_path, capsys, lines: str, name: str) -> str:
    from dprelease.cli import main

    data = tmp_path / f"{name}.dat"
    data.write_text(lines)
    assert main(["tf", str(data), "-k", "5", "-m", "2", "--epsilon", "1", "--universe", "1..30", "--seed", "1",
                 "-o", str(tmp_path / f"{name}.csv")]) == 0
    err = capsys.readouterr().err
    # drop the custodian's timing lines and the paths (they name the files): what is left must be equal
    return "\n".join(line for line in err.splitlines()
                     if line.startswith("note:") or line.startswith("warning:"))


def test_tf_messages_do_not_depend_on_the_data(tmp_path, capsys):
    degenerate = "1 2\n3\n" * 5
    frequent = "1 2 3 4 5\n" * 3000
    a = _tf_stderr(tmp_path, capsys, degenerate, "a")
    b = _tf_stderr(tmp_path, capsys, frequent, "b")
    assert a == b and "gamma*N" in a
    assert not re.search(r"f_k\*N = \d", a)
