"""``tiap cache``: merge the caches that workers or machines filled, one file each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiap.cli.common import err_console

app = typer.Typer(help="Merge verdict, embedding and answer caches filled on several workers or "
                  "machines (keys are content addresses: a request's or a text's sha256).",
                  no_args_is_help=True, rich_markup_mode=None)


@app.command("merge")
def merge_cmd(
    sources: Annotated[list[Path], typer.Argument(
        help="Caches to merge in: verdict caches (cache.sqlite, or a folder of an engine's "
        "*.jsonl shards), embedding caches (embeddings.sqlite3 or its folder) or answer "
        "caches (tiap answers generate).")],
    into: Annotated[Path, typer.Option(
        "--into", help="The cache that receives them (created if absent; of the same kind "
        "as the sources: an embedding cache is named by its folder).")],
) -> None:
    """Add to --into every verdict or vector it lacks from each source. A key present on
    both sides keeps --into's value; a differing one is counted (a network judge asked
    twice may answer differently; another machine may round a vector differently)."""
    from tiap.answers import AnswerCache
    from tiap.audit import VerdictCache
    from tiap.cache import merge_caches
    from tiap.config import command_options
    from tiap.retrieval import EmbeddingCache

    with command_options({"into": "--into"}):
        res = merge_caches(sources, into, (VerdictCache, EmbeddingCache, AnswerCache))
    kind = res.kind.NOUN
    for src, n in res.merged:
        err_console.print(f"{src}: {n['added']:,} added, {n['same']:,} already there, "
                          f"{n['differing']:,} differing (kept --into's)", highlight=False)
        if n["differing"]:
            err_console.print(f"[yellow]warning[/]: {n['differing']:,} {kind} of {src} "
                              f"differ from --into's for the same key; --into's are kept",
                              highlight=False)
    err_console.print(f"{into} holds {res.total:,} {kind}", highlight=False)
