"""``tiap cache``: merge the caches that workers or machines filled, one file each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiap.cache import tables_of
from tiap.cli.common import err_console
from tiap.errors import TiapError

app = typer.Typer(help="Merge verdict and embedding caches filled on several workers or "
                  "machines (keys are content addresses: a request's or a text's sha256).",
                  no_args_is_help=True, rich_markup_mode="markdown")


def _kind(path: Path) -> str:
    """``verdicts`` or ``embeddings``: what the SQLite file at ``path`` holds."""
    if path.is_dir():
        if (path / "embeddings.sqlite3").is_file():
            return "embeddings"
        if any(path.glob("*.jsonl")):
            return "verdicts"  # a folder of an engine's verdict shards
        raise TiapError("neither an embedding cache folder nor a folder of verdict shards",
                        file=path, code="cache")
    tables = tables_of(path)
    if "verdicts" in tables:
        return "verdicts"
    if "vectors" in tables:
        return "embeddings"
    raise TiapError("not a TIAP cache (it has neither a verdicts nor a vectors table)",
                    file=path, code="cache")


@app.command("merge")
def merge_cmd(
    sources: Annotated[list[Path], typer.Argument(
        help="Caches to merge in: verdict caches (cache.sqlite, or a folder of an engine's "
        "*.jsonl shards) or embedding caches (embeddings.sqlite3 or its folder).")],
    into: Annotated[Path, typer.Option(
        "--into", help="The cache that receives them (created if absent; of the same kind "
        "as the sources: an embedding cache is named by its folder).")],
) -> None:
    """Add to --into every verdict or vector it lacks from each source. A key present on
    both sides keeps --into's value; a differing one is counted (a network judge asked
    twice may answer differently; another machine may round a vector differently)."""
    from tiap.audit import VerdictCache
    from tiap.retrieval import EmbeddingCache

    kinds = {_kind(s) for s in sources}
    if len(kinds) > 1:
        raise TiapError("the sources mix verdict and embedding caches; merge each kind into "
                        "its own --into", code="usage")
    kind = kinds.pop()
    if (into.is_file() or (into / "embeddings.sqlite3").is_file()) and _kind(into) != kind:
        raise TiapError(f"--into is not {'a verdict' if kind == 'verdicts' else 'an embedding'}"
                        " cache", file=into, code="usage")
    cache = (VerdictCache(into) if kind == "verdicts"
             else EmbeddingCache(into.parent if into.suffix == ".sqlite3" else into))
    with cache:
        for src in sources:
            own = src / "embeddings.sqlite3" if src.is_dir() and kind == "embeddings" else src
            if own.resolve() == Path(str(cache.path)).resolve():
                raise TiapError("a source is the --into cache itself", file=src, code="usage")
            n = cache.merge_from(src)
            err_console.print(f"{src}: {n['added']:,} added, {n['same']:,} already there, "
                              f"{n['differing']:,} differing (kept --into's)", highlight=False)
            if n["differing"]:
                err_console.print(f"[yellow]warning[/]: {n['differing']:,} {kind} of {src} "
                                  f"differ from --into's for the same key; --into's are kept",
                                  highlight=False)
        total = len(cache) if kind == "verdicts" else cache.count()
    err_console.print(f"{into} holds {total:,} {kind}", highlight=False)
