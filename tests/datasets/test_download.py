"""Downloads, for real, from a local HTTP server that serves the pinned files."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tiap.datasets import DataSource, load
from tiap.datasets.files import manifest
from tiap.errors import ChecksumError, TiapError


class _Mirror:
    """Serves ``/<repo>/<commit>/<source_path>`` from the shared data folder (source form)."""

    def __init__(self, data_dir: Path) -> None:
        self.routes: dict[str, Path] = {}
        self.hits: list[str] = []
        self.corrupt = False
        for folder in ("locomo", "longmemeval", "beam"):
            for f in manifest(folder).values():
                self.routes[f"/{f.source_repo}/{f.source_commit}/{f.source_path}"] = (
                    data_dir / folder / f.stored_path
                )

    def body(self, path: str) -> bytes | None:
        p = self.routes.get(path)
        if p is None or not p.exists():
            return None
        data = p.read_bytes()
        if p.name.endswith(".gz") and not path.endswith(".gz"):
            data = gzip.decompress(data)
        if self.corrupt:
            data = data[:-10] + b"0123456789"
        return data


@pytest.fixture()
def mirror(data_dir: Path) -> Iterator[tuple[str, _Mirror]]:
    m = _Mirror(data_dir)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            m.hits.append(self.path)
            body = m.body(self.path)
            if body is None:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", m
    finally:
        server.shutdown()
        server.server_close()


def _source(tmp_path: Path, url: str) -> DataSource:
    empty = tmp_path / "nodata"
    empty.mkdir(exist_ok=True)
    return DataSource(empty, cache_dir=tmp_path / "cache", allow_download=True, mirror=url)


def test_download_once_then_cache(tmp_path: Path, mirror) -> None:
    url, m = mirror
    ds = load("locomo", source=_source(tmp_path, url))
    assert ds.stats().queries == 1986
    cached = tmp_path / "cache" / "locomo" / "locomo10.json"
    assert cached.exists()
    assert len(m.hits) == 1
    # a new process (new DataSource) uses the verified cache: no second download
    ds2 = load("locomo", source=_source(tmp_path, url))
    assert ds2.stats().turns == 5882
    assert len(m.hits) == 1


def test_download_of_gzip_stored_file_keeps_source_form(tmp_path: Path, mirror) -> None:
    url, m = mirror
    src = _source(tmp_path, url)
    p = src.path("longmemeval", "s_cleaned/38_28dc39ac.json.gz")
    assert p == tmp_path / "cache" / "longmemeval" / "s_cleaned" / "38_28dc39ac.json"
    assert p.stat().st_size == manifest("longmemeval")["s_cleaned/38_28dc39ac.json.gz"].source_bytes


def test_corrupt_download_is_rejected_and_not_kept(tmp_path: Path, mirror) -> None:
    url, m = mirror
    m.corrupt = True
    with pytest.raises(ChecksumError, match="does not match its pin"):
        load("locomo", source=_source(tmp_path, url)).verify()
    folder = tmp_path / "cache" / "locomo"
    assert not any(folder.iterdir())


def test_unreachable_mirror_is_a_clear_error(tmp_path: Path) -> None:
    src = _source(tmp_path, "http://127.0.0.1:9")  # discard port: connection refused
    with pytest.raises(TiapError, match="could not download locomo/locomo10.json"):
        load("locomo", source=src).verify()
