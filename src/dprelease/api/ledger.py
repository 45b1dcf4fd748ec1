"""``dp.Ledger(path)``: one privacy-budget ledger across every release of a dataset (docs/ledger.md).

Passed as ``ledger=`` to a release, it is charged exactly as ``--ledger`` charges it on the command line: the
release's epsilon is reserved in one committed transaction before the data is read (refused when too little
remains, with nothing read), and marked complete with what the release's accountant admitted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["Ledger"]


class Ledger:
    """A ledger file: opened when it exists, created (with ``dataset`` and ``epsilon``) when it does not."""

    def __init__(self, path: str | os.PathLike[str], *, dataset: str | None = None,
                 epsilon: float | None = None) -> None:
        from ..errors import ParameterError
        from ..ledger import init_ledger, ledger_status

        self.path = Path(path)
        if self.path.exists():
            status = ledger_status(self.path)  # refuses a file that is not a ledger
            if epsilon is not None and float(status.epsilon) != float(epsilon):
                raise ParameterError(f"ledger {self.path} holds a total epsilon of {float(status.epsilon):g}, not "
                                     f"{epsilon:g}; open it without epsilon=, or give another path")
        else:
            if epsilon is None:
                raise ParameterError(f"ledger {self.path} does not exist; create it with "
                                     f"dp.Ledger(path, dataset=NAME, epsilon=TOTAL)")
            init_ledger(self.path, dataset=dataset or self.path.stem, epsilon=epsilon)

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def status(self) -> Any:
        """The ledger's status (``epsilon``, ``spent``, ``remaining``, ``charges``, ``as_json()``)."""
        from ..ledger import ledger_status

        return ledger_status(self.path)

    @property
    def remaining(self) -> float:
        return float(self.status().remaining)

    @property
    def spent(self) -> float:
        return float(self.status().spent)

    def __repr__(self) -> str:
        st = self.status()
        return (f"<dprelease Ledger {self.path}: dataset {st.dataset!r}, epsilon {float(st.epsilon):g}, spent "
                f"{float(st.spent):g} by {len(st.charges)} charges, remaining {float(st.remaining):g}>")

    def _repr_html_(self) -> str:
        import html

        st = self.status()
        rows = "".join(f"<tr><td>#{c.id}</td><td>{html.escape(c.command)}</td><td>{float(c.epsilon):g}</td>"
                       f"<td>{html.escape(c.state)}</td><td>{html.escape(c.output)}</td></tr>" for c in st.charges)
        return (f"<div><p>Ledger <code>{html.escape(str(self.path))}</code>: dataset {html.escape(st.dataset)}, "
                f"epsilon {float(st.epsilon):g}, spent {float(st.spent):g}, remaining {float(st.remaining):g}</p>"
                f"<table><tr><th>charge</th><th>command</th><th>epsilon</th><th>state</th><th>output</th></tr>"
                f"{rows}</table></div>")
