"""The text readers under every JSON / JSONL / line format (``tiap.io``): any byte string
either reads as the reference reader reads it or raises a located ``TiapError``; bytes that
are not UTF-8 name the line and the byte offset (code ``encoding``). The JSON Lines
reference is the one policy of :func:`tiap.io.iter_jsonl` (strict JSON: no key twice, no
NaN, no lone surrogate; a leading byte-order mark skipped)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tiap.errors import TiapError
from tiap.io import iter_jsonl, read_json

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])

#: JSON-ish bytes: fragments of valid JSONL mixed with noise, newlines and bad UTF-8
_PIECES = st.sampled_from([b'{"a": 1}', b'[1, 2]', b'"x"', b"\n", b"\r\n", b"\r", b" ",
                           b"{", b"}", b'"caf\xc3\xa9"', b"\xff", b"\xc3", b"\xe2\x82",
                           b"NaN", b"1e999", b"[" * 3, b"\x00", b"\xef\xbb\xbf", b"null"])
DATA = st.one_of(st.binary(max_size=200),
                 st.lists(_PIECES, max_size=30).map(b"".join))


def _strict_loads(line: str) -> object:
    """``json.loads`` that also refuses what the one JSON Lines policy refuses: a key twice
    in one object, NaN / Infinity, a lone surrogate in a string or key."""

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        if len({k for k, _ in items}) != len(items):
            raise ValueError("a key twice")
        return dict(items)

    def constant(token: str) -> object:
        raise ValueError(token)

    def surrogate(v: object) -> bool:
        if isinstance(v, str):
            return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
        if isinstance(v, list):
            return any(surrogate(x) for x in v)
        if isinstance(v, dict):
            return any(surrogate(k) or surrogate(x) for k, x in v.items())
        return False

    value = json.loads(line, object_pairs_hook=pairs, parse_constant=constant)
    if surrogate(value):
        raise ValueError("a lone surrogate")
    return value


def _reference_jsonl(data: bytes) -> list[tuple[int, object]] | None:
    """What a JSONL file holds, read independently (None: it must be refused): UTF-8, a
    byte-order mark at the start skipped, blank lines skipped, every other line strict JSON."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return None
    out = []
    for n, line in enumerate(io.StringIO(text, newline=None), 1):
        if not line.strip():
            continue
        try:
            out.append((n, _strict_loads(line)))
        except (ValueError, RecursionError):
            return None
    return out


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    return path


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # NaN == NaN


@SETTINGS
@given(data=DATA)
@example(data=b'{"a": 1}\n{"b": "\xff"}\n')
@example(data=b"[" * 100_000)
@example(data=b'{"a": ' + b"9" * 5000 + b"}")
@example(data=b'\xef\xbb\xbf{"a": 1}\n')  # a byte-order mark: skipped
@example(data=b'{"a": 1, "a": 2}\n')  # a key twice: refused
@example(data=b'[NaN]\n')  # not JSON: refused
@example(data=b'["\\ud800"]\n')  # a lone surrogate: refused
def test_iter_jsonl_reads_like_the_reference_or_raises(tmp_path_factory, data: bytes) -> None:
    if data.startswith(b"\x1f\x8b"):
        return  # gzip magic: the gzip test below
    path = _write(tmp_path_factory.mktemp("j"), data)
    expected = _reference_jsonl(data)
    try:
        got = list(iter_jsonl(path))
    except TiapError as exc:
        assert expected is None, (exc, expected)
        assert all(p.file == str(path) for p in exc.problems)
        return
    assert expected is not None and _same(got, expected)


@SETTINGS
@given(data=DATA)
@example(data=b'{"a": 1, "a": 2}')  # a key twice: refused
@example(data=b'[1, NaN]')  # not JSON: refused
@example(data=b'["\\ud800"]')  # a lone surrogate: refused
def test_read_json_reads_like_strict_json_loads_or_raises(tmp_path_factory, data: bytes,
                                                          ) -> None:
    """One document under the JSON Lines policy (:func:`_strict_loads`)."""
    if data.startswith(b"\x1f\x8b"):
        return
    path = _write(tmp_path_factory.mktemp("j"), data)
    try:
        expected = _strict_loads(data.decode("utf-8"))
        ok = True
    except (ValueError, RecursionError):
        ok = False
    try:
        got = read_json(path)
    except TiapError:
        assert not ok
        return
    assert ok and _same(got, expected)


@pytest.mark.parametrize("gz", [False, True])
def test_bad_utf8_names_line_and_byte(tmp_path: Path, gz: bool) -> None:
    data = b'{"a": 1}\n{"b": "caf\xc3\xa9"}\n{"c": "\xff"}\n'
    path = tmp_path / ("in.jsonl.gz" if gz else "in.jsonl")
    path.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(TiapError) as info:
        list(iter_jsonl(path))
    (p,) = info.value.problems
    assert p.code == "encoding" and p.file == str(path) and p.line == 3
    # 9 bytes of line 1, 15 of line 2 (é is two bytes), then 7: the bad byte is at 31
    assert "byte(s) ff at byte offset 31 " + ("of the decompressed text " if gz else "") \
        + "(invalid start byte)" in p.message


def test_a_truncated_gzip_is_located(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"a": 1}\n' * 1000)[:-20])
    with pytest.raises(TiapError, match="corrupt or truncated gzip") as info:
        list(iter_jsonl(path))
    assert info.value.problems[0].file == str(path)


def test_bad_utf8_across_a_block_boundary(tmp_path: Path) -> None:
    """The offset is exact when the bad byte follows a character split by the 1 MiB
    blocks the locator reads."""
    good = b"a" * ((1 << 20) - 2) + "é".encode()  # after the opening quote, é straddles
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'"' + good + b'"\n"\xff"\n')
    with pytest.raises(TiapError) as info:
        list(iter_jsonl(path))
    p = info.value.problems[0]
    assert p.line == 2 and f"byte(s) ff at byte offset {len(good) + 4:,} " in p.message
