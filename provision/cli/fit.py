"""Tables that fit the terminal without breaking a word: columns wrap only at spaces, and when even that is too
wide, the least important columns are left out (and the table says which; ``--json`` has everything)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Spaces between two columns of a borderless table (rich's default padding: one on each side).
GAP = 2


@dataclass(frozen=True)
class Col:
    """A column: ``priority`` 0 is always shown, higher numbers are left out first; ``wrap``: may break at spaces."""

    name: str
    priority: int = 0
    justify: str = "left"
    wrap: bool = False


def _need(col: Col, cells: Sequence[str]) -> int:
    """The narrowest the column can be without breaking a word (or, not wrapping, a line)."""
    texts = [col.name, *cells]
    lines = [line for t in texts for line in (t.splitlines() or [""])]
    if col.wrap:
        return max(len(w) for line in lines for w in (line.split() or [""]))
    return max(len(line) for line in lines)


def fit(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int, **table_args: Any) -> tuple[Any, list[str]]:
    """A rich table of ``rows`` no wider than ``width``, and the names of the columns left out to get there."""
    from rich.table import Table

    need = [_need(c, [r[i] for r in rows]) for i, c in enumerate(cols)]
    keep = list(range(len(cols)))

    def total() -> int:
        return sum(need[i] for i in keep) + GAP * (len(keep) - 1)

    while total() > width and any(cols[i].priority for i in keep):
        keep.remove(max(keep, key=lambda i: (cols[i].priority, i)))
    table = Table(box=None, pad_edge=False, **table_args)
    for i in keep:
        c = cols[i]
        table.add_column(c.name, justify=c.justify, no_wrap=not c.wrap, min_width=need[i], overflow="fold")  # type: ignore[arg-type]
    for r in rows:
        table.add_row(*(r[i] for i in keep))
    return table, [cols[i].name for i in range(len(cols)) if i not in keep]


def left_out_note(names: Sequence[str], width: int) -> str:
    """What to print under a table that left columns out."""
    return f"({', '.join(names)} left out to fit {width} columns; a wider terminal or --json shows them)"
