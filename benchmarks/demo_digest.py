"""The sha256 of every file `make demo` writes, less what legitimately changes from run to run.

A refactoring that keeps behaviour must leave the demo's outputs byte-identical. This script
prints one line per output file, ``<sha256>  <path>``, sorted by path, after masking only:

- timestamps (ISO 8601 date-times) and wall-clock durations (``seconds``,
  ``elapsed_seconds``), which differ on every run;
- the output folder's own path, absolute or as given on the command line (``--out out``),
  so two runs in different folders compare;
- the package versions a manifest records (``versions``): they tell the environment, and
  an environment with other extras installed lists other packages;
- the commit TIAP records about itself (``tiap_commit`` in a manifest, "commit `<sha>`" in
  the target card), which a refactoring changes by definition;
- the sha256 of another output file (a trace names its store's manifest, a manifest names its
  inputs): it is replaced by that file's path, whose own masked content is digested on its
  line, so a timestamp in one manifest does not spread to every file that names it (its
  recorded size goes too: it counts the folder's path).

Skipped: ``.steps/`` (the step cache records the code's digest) and the report's
``index.html`` (it embeds the timestamps and plots as images). The SQLite verdict cache is
digested as its rows in key order, without their ``created`` and ``timing`` columns.

    python benchmarks/demo_digest.py out > before.txt
    ... change the code, run `make demo` again ...
    python benchmarks/demo_digest.py out | diff before.txt -
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
from pathlib import Path

_TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_SECONDS = re.compile(rb'("(?:seconds|elapsed_seconds)":\s*)[0-9.eE+-]+')
_COMMIT = re.compile(rb'("tiap_commit":\s*)"[^"]*"')
_CARD_COMMIT = re.compile(rb"(commit `)[0-9a-f]{40}(?:\+dirty)?`")
_HEX = re.compile(rb"\b[0-9a-f]{64}\b")
_NAMED_BYTES = re.compile(rb'(<sha256 of [^>]+>",\s*"bytes":\s*)\d+')
_VERSIONS = re.compile(rb'("versions":\s*)\{[^{}]*\}')
_SKIP_COLUMNS = {"created", "timing"}


def _masked(data: bytes, root: bytes | re.Pattern[bytes],
            names: dict[bytes, bytes]) -> bytes:
    data = _HEX.sub(lambda m: names.get(m.group(0), m.group(0)), data)
    data = _NAMED_BYTES.sub(rb"\1<bytes>", data)  # its size holds the folder's path too
    data = root.sub(b"<out>", data) if isinstance(root, re.Pattern) else data.replace(
        root, b"<out>")
    data = _VERSIONS.sub(rb"\1<versions>", data)
    data = _TIME.sub(b"<time>", data)
    data = _SECONDS.sub(rb"\1<seconds>", data)
    data = _CARD_COMMIT.sub(rb"\1<commit>`", data)
    return _COMMIT.sub(rb'\1"<commit>"', data)


def _sqlite_rows(path: Path, root: re.Pattern[bytes], names: dict[bytes, bytes]) -> bytes:
    # immutable: reading leaves no -wal/-shm files behind to be digested next time
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        out = []
        tables = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            keep = [c for c in cols if c not in _SKIP_COLUMNS]
            out.append(f"# {table}: {', '.join(keep)}")
            query = f"SELECT {', '.join(keep)} FROM {table} ORDER BY {keep[0]}"
            out.extend(repr(row) for row in con.execute(query))
        return _masked("\n".join(out).encode(), root, names)
    finally:
        con.close()


def digest(out: Path) -> list[tuple[str, str]]:
    given = re.escape(str(out).rstrip("/").encode())
    # the absolute path anywhere; the path as given where it starts a path ("out/locomo/...")
    # or is a whole JSON string or --out's value (the command line), never inside prose
    root = re.compile(re.escape(str(out.resolve()).encode()) + rb"|(?<![\w./-])" + given
                      + rb"(?=/)|(?<=\")" + given + rb'(?=")|(?<=--out )' + given
                      + rb"(?=[\s`])")
    files = sorted(p for p in out.rglob("*") if p.is_file())
    names = {hashlib.sha256(p.read_bytes()).hexdigest().encode():
             f"<sha256 of {p.relative_to(out).as_posix()}>".encode() for p in files}
    rows = []
    for path in files:
        rel = path.relative_to(out).as_posix()
        if "/.steps/" in f"/{rel}" or rel.endswith("report/index.html"):
            continue
        if path.suffix == ".sqlite":
            data = _sqlite_rows(path, root, names)
        else:
            data = _masked(path.read_bytes(), root, names)
        rows.append((hashlib.sha256(data).hexdigest(), rel))
    return rows


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        print("usage: python benchmarks/demo_digest.py OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    if not out.is_dir():
        print(f"error: {out} is not a folder", file=sys.stderr)
        return 2
    for sha, rel in digest(out):
        print(f"{sha}  {rel}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
