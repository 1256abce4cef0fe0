"""Bad data files: each gives one clear message naming the file (never a traceback)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.datasets import DataSource, load
from tiap.datasets.files import manifest
from tiap.errors import ChecksumError, TiapError

LOCOMO_SHA = manifest("locomo")["locomo10.json"].stored_sha256


def _copy_locomo(data_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "locomo").mkdir(parents=True)
    shutil.copy(data_dir / "locomo" / "locomo10.json", root / "locomo" / "locomo10.json")
    return root


def test_truncated_file_names_file_and_expected_checksum(data_dir: Path, tmp_path: Path) -> None:
    root = _copy_locomo(data_dir, tmp_path)
    f = root / "locomo" / "locomo10.json"
    f.write_bytes(f.read_bytes()[:1000])
    with pytest.raises(ChecksumError) as exc:
        load("locomo", root).verify()
    msg = str(exc.value)
    assert str(f) in msg and LOCOMO_SHA in msg and "1000 bytes" in msg


def test_altered_file_same_size(data_dir: Path, tmp_path: Path) -> None:
    root = _copy_locomo(data_dir, tmp_path)
    f = root / "locomo" / "locomo10.json"
    b = bytearray(f.read_bytes())
    b[500] = ord("X") if b[500] != ord("X") else ord("Y")
    f.write_bytes(bytes(b))
    with pytest.raises(ChecksumError, match="sha256 mismatch: expected " + LOCOMO_SHA):
        list(load("locomo", root).queries_iter())


def test_cli_reports_checksum_error_without_traceback(data_dir: Path, tmp_path: Path,
                                                      capsys) -> None:
    root = _copy_locomo(data_dir, tmp_path)
    (root / "locomo" / "locomo10.json").write_text("[]")
    rc = main(["datasets", "stats", "locomo", "--data", str(root)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "locomo10.json" in err and LOCOMO_SHA in err and "Traceback" not in err


def test_malformed_record_names_file_and_record(data_dir: Path, tmp_path: Path, capsys) -> None:
    root = _copy_locomo(data_dir, tmp_path)
    f = root / "locomo" / "locomo10.json"
    data = json.loads(f.read_text())
    del data[3]["conversation"]["session_2"][4]["text"]
    f.write_text(json.dumps(data))
    with pytest.raises(TiapError) as exc:
        load("locomo", source=DataSource(root, verify=False)).stats()
    msg = str(exc.value)
    assert str(f) in msg and "record .[3].conversation.session_2[4].text" in msg
    assert "conv-42 session_2 turn 5: missing field 'text'; expected a string" in msg
    rc = main(["datasets", "stats", "locomo", "--data", str(root), "--no-verify"])
    assert rc == 2 and "session_2 turn 5" in capsys.readouterr().err


def test_invalid_json_names_line(data_dir: Path, tmp_path: Path) -> None:
    root = _copy_locomo(data_dir, tmp_path)
    f = root / "locomo" / "locomo10.json"
    f.write_text('[\n{"sample_id": "x",\n  oops}\n]')
    with pytest.raises(TiapError, match=r"locomo10.json:3: invalid JSON"):
        list(load("locomo", source=DataSource(root, verify=False)).bundles())


def test_truncated_gzip_is_a_clear_error(data_dir: Path, tmp_path: Path) -> None:
    name = "s_cleaned/38_28dc39ac.json.gz"
    root = tmp_path / "data"
    (root / "longmemeval" / "s_cleaned").mkdir(parents=True)
    src = (data_dir / "longmemeval" / name).read_bytes()
    (root / "longmemeval" / name).write_bytes(src[: len(src) // 2])
    ds = load("longmemeval/s", source=DataSource(root, verify=False, allow_download=False))
    with pytest.raises(TiapError, match="corrupt or truncated gzip"):
        next(ds.bundles())


def test_unknown_dataset_lists_known(capsys) -> None:
    with pytest.raises(TiapError, match="known: locomo, longmemeval/s"):
        load("locomo2")
    assert main(["datasets", "stats", "nope"]) == 2
    assert "unknown dataset 'nope'" in capsys.readouterr().err


def test_missing_data_folder(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="data folder does not exist"):
        DataSource(tmp_path / "absent")


def test_missing_file_offline_says_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    src = DataSource(tmp_path / "empty", cache_dir=tmp_path / "cache", allow_download=False)
    with pytest.raises(TiapError, match="pass --data DIR or set TIAP_DATA"):
        load("locomo", source=src).verify()
