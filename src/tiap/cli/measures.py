"""``tiap measures``: the measure syntax every command takes, and the headline default."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tiap.cli.common import console


def measures_cmd(
    spec: Annotated[str | None, typer.Argument(
        help="Measures to check, comma-separated (e.g. 'ndcg@60,mrr@10,hit@1'): each is "
        "printed with its canonical name, and the headline among them.",
        show_default=False)] = None,
) -> None:
    """List the measure families, their spellings and cutoffs, and the headline rule
    (nDCG at its largest cutoff: the default measure of sensitivity, audit and report)."""
    from tiap.scoring import (
        MAX_CUTOFF,
        family_rows,
        parse_measure,
        parse_measures,
        primary_measure,
    )

    if spec is not None:
        got = parse_measures(spec)  # the whole list checked at once (every problem named)
        t = Table(title="measures", title_justify="left")
        t.add_column("given")
        t.add_column("canonical")
        for given in (x.strip() for x in spec.split(",") if x.strip()):
            t.add_row(escape(given), str(parse_measure(given)))
        console.print(t)
        console.print(f"headline (default of sensitivity, audit and report): "
                      f"{primary_measure(got)}")
        return
    t = Table(title="measure families (a measure is FAMILY@k, e.g. nDCG@60)",
              title_justify="left")
    for col in ("family", "computes", "cutoff", "also spelled (any case)"):
        t.add_column(col)
    for row in family_rows(MAX_CUTOFF):
        t.add_row(*row)
    console.print(t)
    console.print("Lists are comma-separated ('nDCG@20,nDCG@60,RR@60'). The target (raw, "
                  "source, canonical, ...) and the credit mode (--credit group|set) are "
                  "separate options, never part of a measure's name. The headline measure, "
                  "the default wherever one measure is needed (sensitivity, audit, report), "
                  "is nDCG at its largest cutoff.")
