"""``tiap targets``: build the Raw, Source, Canonical (and user-defined) targets of one or
more stores."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tiap.cli.common import ForceOption, console, err_console, split_names
from tiap.errors import TiapError

TargetsOption = Annotated[
    str,
    typer.Option(
        "--targets",
        help="Comma-separated target names (raw, source, canonical) or name=spec definitions, "
        "e.g. 'facts=kind in {fact,observation}'. Separate definitions containing commas with ';'.",
    ),
]


def split_targets(value: str, option: str = "--targets") -> list[str]:
    """``raw,source`` or ``raw;facts=kind in {fact,observation}`` -> target definitions
    (a name may carry a granularity: ``raw@session``, ``source@window3``).

    An empty value, an empty item and a name neither registered nor defined in ``value``
    are errors (``invalid-value``) naming ``option``, with a did-you-mean."""
    from tiap.targets import DEFAULT_REGISTRY, parse_granularity

    sep = ";" if ";" in value or "{" in value else ","
    what = "target names or name=spec definitions"
    items = split_names(value, option, what=what, sep=sep)
    def base(name: str) -> str:
        return name.partition("~")[0].partition("@")[0]

    defined = [base(t.partition("=")[0].strip()) for t in items if "=" in t]
    bases = dict.fromkeys(base(t) for t in items if "=" not in t)
    split_names(sep.join(bases) or "raw", option,
                what="targets", sep=sep, known=[*DEFAULT_REGISTRY.names(), *defined])
    for t in items:  # NAME@session, NAME@windowN: the granularity is checked too
        name = t.partition("=")[0].strip()
        if "@" in name:
            try:
                parse_granularity(name.partition("~")[0].partition("@")[2].lower())
            except TiapError as exc:
                raise TiapError(f"{option}: target {name!r}: {exc.problems[0].message}",
                                code="invalid-value") from None
    return items


def targets_cmd(
    items: Annotated[list[Path], typer.Option(
        "--items", help="A store's items.jsonl (gzip ok); repeat for several stores, whose "
        "files are written side by side. A store is named by its rows' 'store' field, else "
        "by its folder (stores/f5/items.jsonl: f5).")],
    queries: Annotated[Path, typer.Option("--queries", help="queries.jsonl (gzip ok).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    targets: TargetsOption = "raw,source,canonical",
    overlay: Annotated[list[str] | None, typer.Option(
        "--overlay", help="An evidence overlay NAME=PATH (overlay.jsonl) that targets T~NAME "
        "read, e.g. --targets 'raw,raw~corrected' for qrels under corrected evidence. "
        "Repeatable.", show_default=False)] = None,
    force: ForceOption = False,
) -> None:
    """Write, per store, the groups per (query, target), target-mapping rows, TREC qrels per
    target (qrels/STORE.TARGET.qrels: score each run against its own store's qrels) and the
    coverage summary, with a manifest."""
    from tiap.config import command_options
    from tiap.targets import targets_files

    tlist = split_targets(targets)
    with command_options({"items": "--items", "overlays": "--overlay"}):
        res = targets_files(items, queries, out, tlist, overlays=overlay or [], force=force)
    several = len(res.stores) > 1
    first = res.coverage[res.stores[0]]
    title = (f"coverage ({first.queries:,} queries; "
             + ", ".join(f"{s}: {res.coverage[s].n_items:,} items" for s in res.stores) + ")")
    t = Table(title=title, title_justify="left")
    cols = ("store", "target", "queries with a group", "zero-target", "groups", "mean group size")
    for col in cols:
        t.add_column(col, justify="left" if col in ("store", "target") else "right")
    for s in res.stores:
        for tc in res.coverage[s].targets:
            row = tc.to_json()
            t.add_row(s, tc.target, f"{row['defined']:,}", f"{row['zero_target']:,}",
                      f"{row['groups']:,}",
                      f"{row['mean_group_size']:.2f}" if row["mean_group_size"] else "-")
    console.print(t)
    for s in res.stores:
        unknown = res.coverage[s].unknown_evidence
        if unknown:
            err_console.print(f"[yellow]warning[/]: store {s}: {len(unknown):,} queries name "
                              "evidence units that no stored item reaches (listed in "
                              f"{out / 'coverage.json'})", highlight=False)
    if res.removed:
        err_console.print(f"replaced the earlier `tiap targets` run in {out}: "
                          f"{len(res.removed):,} of its files are not written again (first: "
                          f"{res.removed[0]})", highlight=False)
    if several:
        err_console.print("score each store's run against its own qrels "
                          "(qrels/STORE.TARGET.qrels): the relevant sets differ per store",
                          highlight=False)
    err_console.print(f"wrote {out}", highlight=False)
