"""Where benchmark files live, and proof that they are the files we expect.

Every file a loader reads is pinned in the package (``checksums/<folder>.tsv``, the same
figures as the data folder's ``MANIFEST.tsv``): its stored path, its official source
(repository, commit, path) and the sha256 of both forms.

Resolution order for a file:

1. the data folder: ``--data DIR``, else ``$TIAP_DATA``, else ``../shared/data`` (from the
   working directory or from the project checkout) when it exists; the file there must match
   the pinned *stored* sha256;
2. the download cache (``$TIAP_CACHE`` or ``~/.cache/tiap``), matched against the pinned
   *source* sha256;
3. a download of the official file (from ``$TIAP_MIRROR`` or raw GitHub at the pinned
   commit) into that cache, verified before it is renamed into place. Set
   ``TIAP_OFFLINE=1`` to forbid downloads.

``verify=False`` (``--no-verify``) reads local files without checking them, for data a user
has corrected on purpose. Otherwise a file that exists but does not match is never used: the
error names the file, the size and checksum expected, and what was found. Either way every
record is type-checked as it is read (:mod:`tiap.datasets.reading`).
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import os
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tiap.cache import cache_dir as tiap_cache_dir
from tiap.errors import ChecksumError, TiapError
from tiap.io import sha256_file

DEFAULT_MIRROR = "https://raw.githubusercontent.com"
FOLDERS = ("locomo", "longmemeval", "beam", "locomo-audit")


@dataclass(frozen=True)
class DataFile:
    """One pinned benchmark file."""

    folder: str
    stored_path: str
    source_repo: str
    source_path: str
    source_commit: str
    source_bytes: int
    source_sha256: str
    stored_bytes: int
    stored_sha256: str

    @property
    def cache_path(self) -> str:
        """Path inside the cache: the source form (a stored ``.gz`` of a plain source is kept
        plain)."""
        if self.stored_path.endswith(".gz") and not self.source_path.endswith(".gz"):
            return self.stored_path[: -len(".gz")]
        return self.stored_path

    def url(self, mirror: str | None = None) -> str:
        base = (mirror or os.environ.get("TIAP_MIRROR") or DEFAULT_MIRROR).rstrip("/")
        return f"{base}/{self.source_repo}/{self.source_commit}/{self.source_path}"


@functools.cache
def manifest(folder: str) -> dict[str, DataFile]:
    """The pinned files of one data folder, by stored path."""
    if folder not in FOLDERS:
        raise TiapError(f"unknown data folder {folder!r}; known: {', '.join(FOLDERS)}")
    text = resources.files("tiap.datasets").joinpath(f"checksums/{folder}.tsv").read_text("utf-8")
    out: dict[str, DataFile] = {}
    for row in csv.DictReader(text.splitlines(), delimiter="\t"):
        f = DataFile(
            folder=folder,
            stored_path=row["stored_path"],
            source_repo=row["source_repo"],
            source_path=row["source_path"],
            source_commit=row["source_commit"],
            source_bytes=int(row["source_bytes"]),
            source_sha256=row["source_sha256"],
            stored_bytes=int(row["stored_bytes"]),
            stored_sha256=row["stored_sha256"],
        )
        out[f.stored_path] = f
    return out


def _checkout_root() -> Path | None:
    """The project checkout this package runs from (editable installs), if any."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists() and (parent / "src" / "tiap").exists():
            return parent
    return None


def default_data_dir() -> Path | None:
    """``$TIAP_DATA``, else ``../shared/data`` beside the working directory or the checkout."""
    env = os.environ.get("TIAP_DATA")
    if env:
        return Path(env)
    candidates = [Path.cwd() / ".." / "shared" / "data"]
    root = _checkout_root()
    if root is not None:
        candidates.append(root / ".." / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c.resolve()
    return None


ProgressFn = Callable[[str, int, int], None]  # (label, done bytes, total bytes)


class DataSource:
    """Finds, verifies and (if allowed) downloads pinned benchmark files.

    >>> from pathlib import Path
    >>> Path("data").mkdir()
    >>> src = DataSource("data", cache_dir="cache", allow_download=False)
    >>> src.describe(), src.has("locomo", "locomo10.json")
    ('data', False)
    >>> src.path("locomo", "locomo10.json")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: locomo/locomo10.json not found (data/locomo/locomo10.json; cache
    cache/locomo/locomo10.json) and downloads are off (TIAP_OFFLINE); pass --data DIR or set
    TIAP_DATA

    A loaded dataset reads through its source (``tiap.datasets.load(id, source=...)``).
    """

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        cache_dir: str | Path | None = None,
        allow_download: bool | None = None,
        mirror: str | None = None,
        progress: ProgressFn | None = None,
        verify: bool = True,
    ) -> None:
        if data_dir is not None:
            data_dir = Path(data_dir)
            if not data_dir.is_dir():
                raise TiapError("data folder does not exist", file=data_dir, code="io")
        self.data_dir: Path | None = data_dir if data_dir is not None else default_data_dir()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else tiap_cache_dir()
        if allow_download is None:
            allow_download = os.environ.get("TIAP_OFFLINE", "") in ("", "0")
        self.allow_download = allow_download
        self.mirror = mirror
        self.progress = progress
        self.check = verify
        self._verified: dict[tuple[str, str], Path] = {}

    def describe(self) -> str:
        return str(self.data_dir) if self.data_dir else f"cache {self.cache_dir}"

    def has(self, folder: str, stored_path: str) -> bool:
        """Whether a pinned file is available locally (without verifying or downloading)."""
        f = manifest(folder)[stored_path]
        if self.data_dir is not None and (self.data_dir / folder / stored_path).exists():
            return True
        return (self.cache_dir / folder / f.cache_path).exists()

    def path(self, folder: str, stored_path: str) -> Path:
        """A verified local path for a pinned file (downloading it once if needed)."""
        key = (folder, stored_path)
        if key in self._verified:
            return self._verified[key]
        files = manifest(folder)
        if stored_path not in files:
            raise TiapError(f"file {folder}/{stored_path} is not pinned in TIAP's checksums")
        f = files[stored_path]
        found: Path | None = None
        if self.data_dir is not None:
            p = self.data_dir / folder / stored_path
            if p.exists():
                if self.check:
                    verify(p, f.stored_bytes, f.stored_sha256)
                found = p
        if found is None:
            p = self.cache_dir / folder / f.cache_path
            if p.exists():
                if self.check:
                    verify(p, f.source_bytes, f.source_sha256)
                found = p
        if found is None:
            found = self._download(f)
        self._verified[key] = found
        return found

    def _download(self, f: DataFile) -> Path:
        dest = self.cache_dir / f.folder / f.cache_path
        where = f"{self.data_dir / f.folder / f.stored_path}" if self.data_dir else "no data folder"
        if not self.allow_download:
            raise TiapError(
                f"{f.folder}/{f.stored_path} not found ({where}; cache {dest}) and downloads are "
                "off (TIAP_OFFLINE); pass --data DIR or set TIAP_DATA", code="io"
            )
        url = f.url(self.mirror)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.part")
        h = hashlib.sha256()
        done = 0
        try:
            with urllib.request.urlopen(url, timeout=60) as resp, open(tmp, "wb") as out:
                while block := resp.read(1 << 16):
                    out.write(block)
                    h.update(block)
                    done += len(block)
                    if self.progress:
                        self.progress(f.stored_path, done, f.source_bytes)
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise TiapError(
                f"could not download {f.folder}/{f.stored_path} from {url} ({exc}); "
                f"it is not in the data folder ({where}): pass --data DIR or set TIAP_DATA",
                code="io",
            ) from exc
        if done != f.source_bytes or h.hexdigest() != f.source_sha256:
            tmp.unlink()
            raise ChecksumError(
                f"downloaded file does not match its pin: expected {f.source_bytes} bytes, "
                f"sha256 {f.source_sha256}; got {done} bytes, sha256 {h.hexdigest()}",
                file=url,
            )
        os.replace(tmp, dest)
        return dest


def verify(path: Path, size: int, sha256: str) -> None:
    """Raise :class:`ChecksumError` unless ``path`` has the pinned size and sha256."""
    actual_size = path.stat().st_size
    if actual_size != size:
        raise ChecksumError(
            f"file is {actual_size} bytes, expected {size} (sha256 {sha256}); it is truncated "
            "or altered: restore it from its source or delete it to download it again",
            file=path,
        )
    digest = sha256_file(path)
    if digest != sha256:
        raise ChecksumError(
            f"sha256 mismatch: expected {sha256}, found {digest}; the file is altered: restore "
            "it from its source or delete it to download it again",
            file=path,
        )
