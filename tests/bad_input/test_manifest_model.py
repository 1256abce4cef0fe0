"""The one manifest model (issue 34): every step writes its ``manifest.json`` through
:class:`tiap.provenance.Manifest` and every reader reads one back through
:func:`tiap.provenance.read_manifest` (on :func:`tiap.io.read_json`, the one strict JSON reader).

- Writing: the header (schema version, command, created, versions, command line), then the
  step's keys in the order :data:`tiap.provenance.STEPS` declares, then keys it does not
  name; non-ASCII text kept or escaped as the step declares. The expected bytes below are
  written out by hand.
- Reading: a manifest that is missing, not UTF-8, not JSON (``NaN`` and a key twice
  included), not an object or of another step than the one expected is a located error; :func:`peek_manifest` and
  :func:`tiap.io.output_step` answer ``None`` for each instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap import provenance
from tiap.errors import TiapError
from tiap.io import output_step
from tiap.provenance import STEPS, Manifest, peek_manifest, read_manifest


def _problem(exc: pytest.ExceptionInfo[TiapError]) -> tuple[str, str | None, int | None, str]:
    p = exc.value.problems[0]
    return p.message, p.file, p.line, p.code


# ------------------------------------------------------------------------------------------
# writing


def test_keys_follow_the_step_layout_and_non_ascii_is_kept_where_the_step_says() -> None:
    # sensitivity: no timestamp, layout inputs, options, datasets, answers, notes, outputs,
    # non-ASCII kept; the extras are given in another order than the layout's
    man = Manifest("sensitivity", 1, versions={"tiap": "0.1.0"},
                   inputs={"a": {"path": "é"}}, options={"seed": 1},
                   outputs={"t.csv": {"rows": 2}},
                   extra={"notes": ["n"], "answers": {}, "datasets": []})
    assert man.text() == (
        '{\n'
        '  "schema_version": 1,\n'
        '  "command": "sensitivity",\n'
        '  "versions": {\n'
        '    "tiap": "0.1.0"\n'
        '  },\n'
        '  "inputs": {\n'
        '    "a": {\n'
        '      "path": "é"\n'
        '    }\n'
        '  },\n'
        '  "options": {\n'
        '    "seed": 1\n'
        '  },\n'
        '  "datasets": [],\n'
        '  "answers": {},\n'
        '  "notes": [\n'
        '    "n"\n'
        '  ],\n'
        '  "outputs": {\n'
        '    "t.csv": {\n'
        '      "rows": 2\n'
        '    }\n'
        '  }\n'
        '}\n')


def test_an_import_step_escapes_non_ascii_and_puts_unnamed_keys_last() -> None:
    # "import generic" falls back to "import": system, store, format, inputs, counts,
    # warnings, outputs; "later" is not in the layout, so it comes last; é is \u00e9
    man = Manifest("import generic", 1, created="2026-01-01T00:00:00+00:00", versions={},
                   command_line=["tiap", "import"], inputs=[{"path": "é"}], warnings={},
                   outputs=["run.jsonl"],
                   extra={"later": 1, "counts": {"items": 1}, "format": "generic",
                          "store": "s", "system": "s"})
    assert man.text() == (
        '{\n'
        '  "schema_version": 1,\n'
        '  "command": "import generic",\n'
        '  "created": "2026-01-01T00:00:00+00:00",\n'
        '  "versions": {},\n'
        '  "command_line": [\n'
        '    "tiap",\n'
        '    "import"\n'
        '  ],\n'
        '  "system": "s",\n'
        '  "store": "s",\n'
        '  "format": "generic",\n'
        '  "inputs": [\n'
        '    {\n'
        '      "path": "\\u00e9"\n'
        '    }\n'
        '  ],\n'
        '  "counts": {\n'
        '    "items": 1\n'
        '  },\n'
        '  "warnings": {},\n'
        '  "outputs": [\n'
        '    "run.jsonl"\n'
        '  ],\n'
        '  "later": 1\n'
        '}\n')


def test_new_takes_the_version_from_the_table_and_records_the_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provenance, "command_line", ["tiap", "rescore", "x"])
    man = Manifest.new("audit graded", options={"k": 5}, more_versions={"parser": "p1"})
    doc = man.to_json()
    assert list(doc)[:5] == ["schema_version", "command", "created", "versions",
                             "command_line"]
    assert doc["schema_version"] == STEPS["audit graded"].version == 3
    assert doc["command_line"] == ["tiap", "rescore", "x"]
    assert doc["versions"]["parser"] == "p1" and "tiap" in doc["versions"]
    # a step that records no time (reruns write the same bytes) has no "created"
    assert "created" not in Manifest.new("sensitivity").to_json()


def test_a_step_not_declared_or_an_extra_key_naming_a_field_is_refused() -> None:
    with pytest.raises(KeyError, match="no manifest schema declared for step 'frobnicate'"):
        Manifest.new("frobnicate")
    with pytest.raises(ValueError, match=r"extra keys \['inputs'\] are fields"):
        Manifest("rescore", 1, extra={"inputs": {}}).to_json()


# ------------------------------------------------------------------------------------------
# reading


def test_what_is_written_reads_back_as_the_same_object(tmp_path: Path) -> None:
    man = Manifest.new("rescore", inputs={"q": {"path": "q.jsonl", "sha256": "0" * 64}},
                       options={"credit": "group"}, outputs=["per_query.csv"],
                       extra={"dataset": None, "systems": {}})
    man.write(tmp_path / "manifest.json")
    back = read_manifest(tmp_path, step="rescore")
    assert dict(back) == json.loads((tmp_path / "manifest.json").read_text("utf-8"))
    assert back.options == {"credit": "group"} and back.extra == {"dataset": None,
                                                                 "systems": {}}
    assert back.text() == (tmp_path / "manifest.json").read_text("utf-8")
    # a sidecar manifest is read by its file name
    man.write(tmp_path / "cases.jsonl.manifest.json")
    assert read_manifest(tmp_path / "cases.jsonl.manifest.json")["command"] == "rescore"


def test_a_read_manifest_keeps_missing_header_keys_missing(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"command": "rescore", "options": {}}\n')
    assert dict(read_manifest(tmp_path)) == {"command": "rescore", "options": {}}


BROKEN = {
    # name: (bytes, message start, line, code)
    "not JSON": (b'{\n  "command": "rescore",\n  oops\n}\n', "invalid JSON", 3, "input"),
    "not UTF-8": (b'{"command": "r\xffescore"}\n', "not valid UTF-8: byte(s) ff", 1,
                  "encoding"),
    "not an object": (b'["rescore"]\n', "a manifest must be a JSON object", None, "input"),
    # what Python's json module writes for a float('nan') unless told allow_nan=False, and
    # what it reads back in silence (the last of two keys wins): neither is JSON
    "NaN": (b'{"command": "rescore", "options": {"alpha": NaN}}\n',
            "NaN is not a JSON value", None, "invalid-value"),
    "a key twice": (b'{"command": "sensitivity", "command": "rescore"}\n',
                    "key 'command' occurs more than once", None, "duplicate"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_manifest_is_a_located_error(tmp_path: Path, name: str) -> None:
    data, message, line, code = BROKEN[name]
    (tmp_path / "manifest.json").write_bytes(data)
    with pytest.raises(TiapError) as exc:
        read_manifest(tmp_path, step="rescore")
    got = _problem(exc)
    assert got[0].startswith(message), got
    assert got[1:] == (str(tmp_path / "manifest.json"), line, code)
    assert peek_manifest(tmp_path) is None
    assert output_step(tmp_path) is None


def test_a_folder_without_a_manifest_or_of_another_step_names_both(tmp_path: Path) -> None:
    with pytest.raises(TiapError) as exc:
        read_manifest(tmp_path, step="rescore")
    assert _problem(exc) == ("not an output folder of 'tiap rescore' (no manifest.json)",
                             str(tmp_path), None, "input")
    assert peek_manifest(tmp_path) is None
    Manifest.new("sensitivity").write(tmp_path / "manifest.json")
    with pytest.raises(TiapError) as exc:
        read_manifest(tmp_path, step="rescore")
    assert _problem(exc)[0] == ("expected the output of 'tiap rescore', found 'sensitivity' "
                                "(run 'tiap report' on the output of 'tiap sensitivity')")
    with pytest.raises(TiapError) as exc:
        read_manifest(tmp_path, step="audit graded")
    assert _problem(exc)[0] == "expected the output of 'tiap audit graded', found 'sensitivity'"
    assert output_step(tmp_path) == "sensitivity"
