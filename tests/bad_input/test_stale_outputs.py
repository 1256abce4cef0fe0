"""Kind 3 of the bad-input campaign: an output folder describes exactly one run.

The mechanism is :func:`tiap.io.output_folder`: a step builds its whole folder in a hidden
sibling and swaps it in at the end. An earlier output of the same step is replaced whole
(no ``per_query/`` partition of another system, no ``qrels/`` of targets no longer asked for,
no old ``design_*.csv``); anything else (a folder of the user's, another step's output, a
file the manifest does not list) is refused with ``error[stale-output]``, exit 2, unless
``--force``; a failure or Ctrl-C mid-write leaves the previous folder byte for byte and no
temporary folder. Every input is built here in ``tmp_path``.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tiap import io
from tiap.cli.main import main
from tiap.errors import TiapError

# A store of one conversation: turns u1, u2 (raw items t1, t2), fact f1 from u1 and f2 from
# both; q1 asks about u1 and u2, q2 about u2.
ITEMS = [
    {"item_id": "t1", "kind": "raw", "sources": ["u1"], "store": "mem"},
    {"item_id": "t2", "kind": "raw", "sources": ["u2"], "store": "mem"},
    {"item_id": "f1", "kind": "fact", "sources": ["u1"], "store": "mem"},
    {"item_id": "f2", "kind": "fact", "sources": ["u1", "u2"], "store": "mem"},
]
QUERIES = [
    {"query_id": "q1", "question": "?", "answer": "a", "category": "c", "evidence": ["u1", "u2"]},
    {"query_id": "q2", "question": "?", "answer": "a", "category": "c", "evidence": ["u2"]},
]
RESCORE_FILES = {"per_query.csv", "summary.csv", "pairwise.csv", "zero_targets.csv",
                 "target_sizes.csv", "intervals.csv", "undetermined.csv", "queries.csv",
                 "integrity.csv", "inferred.csv", "flip_pairs.csv", "manifest.json"} | (
    {"cost.csv"} if importlib.util.find_spec("bpe_openai") else set())  # the cost extra


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def inputs(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "in"
    d.mkdir()
    return {
        "items": _jsonl(d / "items.jsonl", ITEMS),
        "queries": _jsonl(d / "queries.jsonl", QUERIES),
        "A": _jsonl(d / "a.jsonl", [{"query_id": "q1", "system": "A", "ranking": ["f2", "t1"]},
                                    {"query_id": "q2", "system": "A", "ranking": ["t2"]}]),
        "B": _jsonl(d / "b.jsonl", [{"query_id": "q1", "system": "B", "ranking": ["t1"]},
                                    {"query_id": "q2", "system": "B", "ranking": ["f1"]}]),
    }


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes): compares folders exactly."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _hidden(parent: Path) -> list[str]:
    """Temporary siblings (``.NAME.PID.*.tmp``) left in ``parent``."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def _systems(out: Path) -> set[str]:
    with open(out / "per_query.csv", newline="") as fh:
        return {r["system"] for r in csv.DictReader(fh)}


def _rescore(inputs: dict[str, Path], out: Path, *extra: str, run: str = "A") -> int:
    return main(["rescore", "--items", str(inputs["items"]), "--queries", str(inputs["queries"]),
                 "--run", str(inputs[run]), "--out", str(out), *extra])


def _refused(capsys: pytest.CaptureFixture[str], folder: Path) -> str:
    err = capsys.readouterr().err
    assert "error[stale-output]" in err and str(folder) in err and "--force" in err, err
    assert "Traceback" not in err
    return err


# -- rescore ---------------------------------------------------------------------------------


def test_rescore_rerun_holds_only_the_second_run(inputs, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _rescore(inputs, out, "--parquet", run="A") == 0
    # with --parquet, per_query/ partitioned by system and target, one file each
    assert set(_tree(out)) == RESCORE_FILES | {
        f"per_query/system=A/target={t}/part-0.parquet" for t in ("raw", "source", "canonical")}
    assert _rescore(inputs, out, run="B") == 0
    # the old per_query/ of system A is gone; every file is the second run's
    assert set(_tree(out)) == RESCORE_FILES
    assert _systems(out) == {"B"}
    man = json.loads((out / "manifest.json").read_text())
    assert set(man["systems"]) == {"B"} and "run:A" not in man["inputs"]
    # the same as a run into a new folder (the manifest differs by its timestamp only)
    fresh = tmp_path / "fresh"
    assert _rescore(inputs, fresh, run="B") == 0
    a, b = _tree(out), _tree(fresh)
    assert {k: v for k, v in a.items() if k != "manifest.json"} == {
        k: v for k, v in b.items() if k != "manifest.json"}
    assert _hidden(tmp_path) == []


def test_rescore_refuses_a_folder_of_the_users(inputs, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    (out / "sub").mkdir(parents=True)
    (out / "thesis.tex").write_text("chapter 1\n")
    (out / "sub" / "data.csv").write_text("1,2\n")
    before = _tree(out)
    assert _rescore(inputs, out) == 2
    err = _refused(capsys, out)
    assert "no manifest of `tiap rescore`" in err
    assert _tree(out) == before and _hidden(tmp_path) == []
    # --force replaces it whole
    assert _rescore(inputs, out, "--force") == 0
    assert set(_tree(out)) == RESCORE_FILES


def test_rescore_refuses_another_steps_output(inputs, tmp_path: Path, capsys) -> None:
    out = tmp_path / "t"
    assert main(["targets", "--items", str(inputs["items"]), "--queries",
                 str(inputs["queries"]), "--out", str(out)]) == 0
    capsys.readouterr()
    before = _tree(out)
    assert _rescore(inputs, out) == 2
    assert "holds the output of `tiap targets`, not of `tiap rescore`" in _refused(capsys, out)
    assert _tree(out) == before


def test_rescore_refuses_a_file_beside_the_outputs(inputs, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert _rescore(inputs, out) == 0
    (out / "my_notes.txt").write_text("do not lose\n")
    capsys.readouterr()
    before = _tree(out)
    assert _rescore(inputs, out, run="B") == 2
    assert "'my_notes.txt'" in _refused(capsys, out)
    assert _tree(out) == before


def test_rescore_failure_mid_write_keeps_the_previous_output(
        inputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from tiap.scoring import folder

    out = tmp_path / "out"
    assert _rescore(inputs, out, run="A") == 0
    before = _tree(out)

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(folder, "_write_dicts", broken)  # after per_query.csv is written
    assert _rescore(inputs, out, run="B") == 2
    assert "error[disk-full]" in capsys.readouterr().err
    assert _tree(out) == before and _hidden(tmp_path) == []

    def interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(folder, "_write_dicts", interrupted)
    assert _rescore(inputs, out, run="B") == 130
    assert _tree(out) == before and _hidden(tmp_path) == []


def test_out_that_is_a_file_is_refused(inputs, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.write_text("a file\n")
    assert _rescore(inputs, out) == 2
    err = capsys.readouterr().err
    assert "error[usage]" in err and str(out) in err and "a file" in err
    assert out.read_text() == "a file\n"


# -- targets ---------------------------------------------------------------------------------


def _targets(inputs: dict[str, Path], out: Path, targets: str, *extra: str) -> int:
    return main(["targets", "--items", str(inputs["items"]), "--queries", str(inputs["queries"]),
                 "--out", str(out), "--targets", targets, *extra])


def test_targets_rerun_holds_only_the_second_target_set(inputs, tmp_path: Path, capsys) -> None:
    out = tmp_path / "t"
    assert _targets(inputs, out, "raw,source") == 0
    assert sorted(p.name for p in (out / "qrels").iterdir()) == ["mem.raw.qrels",
                                                                 "mem.source.qrels"]
    capsys.readouterr()
    assert _targets(inputs, out, "canonical") == 0
    # raw and source: their qrels and their subtopic qrels
    assert "4 of its files are not written again" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "qrels").iterdir()) == ["mem.canonical.qrels"]
    # canonical of q1: f1 (u1), f2 (u1, u2) credited; q2: f2 -> lines by hand
    assert (out / "qrels" / "mem.canonical.qrels").read_text().split("\n")[:-1] == [
        "q1 0 f1 1", "q1 0 f2 1", "q2 0 f2 1"]
    man = json.loads((out / "manifest.json").read_text())
    assert set(_tree(out)) == {"manifest.json", *man["outputs"]}
    assert [t["name"] for t in man["targets"]] == ["canonical"]
    assert _hidden(tmp_path) == []


def test_targets_refuses_a_folder_of_the_users(inputs, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "qrels").write_text("my own qrels, not a folder\n")
    before = _tree(out)
    assert _targets(inputs, out, "raw") == 2
    _refused(capsys, out)
    assert _tree(out) == before


def test_targets_failure_mid_write_keeps_the_previous_output(
        inputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tiap.targets import folder as export

    out = tmp_path / "t"
    assert _targets(inputs, out, "raw,source") == 0
    before = _tree(out)

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt  # Ctrl-C after the qrels were written

    monkeypatch.setattr(export, "write_coverage", broken)
    assert _targets(inputs, out, "canonical") == 130
    assert _tree(out) == before and _hidden(tmp_path) == []


# -- sensitivity -----------------------------------------------------------------------------


@pytest.fixture()
def rescored(inputs, tmp_path: Path) -> Path:
    r = tmp_path / "r"
    assert main(["rescore", "--items", str(inputs["items"]), "--queries", str(inputs["queries"]),
                 "--run", str(inputs["A"]), "--run", str(inputs["B"]), "--out", str(r)]) == 0
    return r


def _sensitivity(rescored: Path, out: Path, *extra: str) -> int:
    return main(["sensitivity", str(rescored), "--out", str(out), "--resamples", "50",
                 "--no-answers", *extra])


def test_sensitivity_rerun_holds_only_the_second_run(rescored: Path, tmp_path: Path) -> None:
    out = tmp_path / "s"
    assert _sensitivity(rescored, out, "--configs", "g=A,B") == 0
    assert any(n.startswith("design_") for n in _tree(out))
    assert _sensitivity(rescored, out) == 0
    assert not any(n.startswith("design_") for n in _tree(out))
    # byte for byte what a run into a new folder writes (its manifest has no timestamp);
    # the manifests differ only in the command line each run recorded (its --out)
    fresh = tmp_path / "fresh"
    assert _sensitivity(rescored, fresh) == 0
    got, want = _tree(out), _tree(fresh)
    man_got, man_want = (json.loads(t.pop("manifest.json")) for t in (got, want))
    assert got == want
    for man, folder in ((man_got, out), (man_want, fresh)):
        line = man.pop("command_line")
        assert line[line.index("--out") + 1] == str(folder)
    assert man_got == man_want
    assert _hidden(tmp_path) == []


def test_sensitivity_refuses_its_input_folder(rescored: Path, tmp_path: Path, capsys) -> None:
    before = _tree(rescored)
    assert _sensitivity(rescored, rescored) == 2
    assert "holds the output of `tiap rescore`" in _refused(capsys, rescored)
    assert _tree(rescored) == before


def test_sensitivity_refuses_a_folder_of_the_users(rescored: Path, tmp_path: Path,
                                                   capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "design_notes.csv").write_text("mine\n")
    before = _tree(out)
    assert _sensitivity(rescored, out) == 2
    _refused(capsys, out)
    assert _tree(out) == before


def test_sensitivity_failure_mid_write_keeps_the_previous_output(
        rescored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    analyze = importlib.import_module("tiap.sensitivity.analyze")  # the package's
    # ``analyze`` attribute is the function of that name
    out = tmp_path / "s"
    assert _sensitivity(rescored, out, "--configs", "g=A,B") == 0
    before = _tree(out)
    real = analyze.write_table
    calls = []

    def broken(path, table):  # type: ignore[no-untyped-def]
        calls.append(path)
        if len(calls) == 3:
            raise RuntimeError("writer failed after two tables")
        real(path, table)

    monkeypatch.setattr(analyze, "write_table", broken)
    with pytest.raises(RuntimeError):
        _sensitivity(rescored, out)
    assert len(calls) == 3
    assert _tree(out) == before and _hidden(tmp_path) == []


# -- the mechanism itself --------------------------------------------------------------------


def test_keep_survives_the_swap_and_a_symlink_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "manifest.json").write_text(json.dumps({"command": "step", "outputs": ["a.csv"]}))
    (real / "a.csv").write_text("old\n")
    (real / "cache.sqlite").write_text("finished work\n")
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    with io.output_folder(link, "step", keep=("cache.sqlite",)) as tmp:
        (tmp / "manifest.json").write_text(json.dumps({"command": "step", "outputs": ["b.csv"]}))
        (tmp / "b.csv").write_text("new\n")
    assert link.is_symlink() and link.resolve() == real
    assert set(_tree(real)) == {"manifest.json", "b.csv", "cache.sqlite"}
    assert (real / "cache.sqlite").read_text() == "finished work\n"
    assert _hidden(tmp_path) == []


def test_without_an_atomic_exchange_the_result_is_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(io, "_exchange", lambda a, b: False)
    out = tmp_path / "out"
    for content in ("first", "second"):
        with io.output_folder(out, "step") as tmp:
            (tmp / "manifest.json").write_text(json.dumps({"command": "step"}))
            (tmp / f"{content}.csv").write_text(content)
    assert set(_tree(out)) == {"manifest.json", "second.csv"}
    assert _hidden(tmp_path) == []


def test_a_folder_filled_during_the_run_is_not_replaced(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(TiapError) as err, io.output_folder(out, "step") as tmp:
        (tmp / "manifest.json").write_text("{}")
        out.mkdir()
        (out / "yours.txt").write_text("arrived meanwhile\n")
    assert err.value.problems[0].code == "stale-output"
    assert _tree(out) == {"yours.txt": b"arrived meanwhile\n"} and _hidden(tmp_path) == []


# -- report ----------------------------------------------------------------------------------


def test_report_rerun_holds_only_the_second_report(rescored: Path, tmp_path: Path,
                                                   capsys) -> None:
    with_design, without = tmp_path / "s1", tmp_path / "s2"
    assert _sensitivity(rescored, with_design, "--configs", "g=A,B") == 0
    assert _sensitivity(rescored, without) == 0
    out = tmp_path / "rep"
    assert main(["report", str(with_design), "--out", str(out)]) == 0
    assert any("design" in n for n in _tree(out))
    assert main(["report", str(without), "--out", str(out)]) == 0
    assert not any("design" in n for n in _tree(out))
    man = json.loads((out / "manifest.json").read_text())
    assert set(_tree(out)) == {"manifest.json", *man["outputs"]}
    capsys.readouterr()
    before = _tree(without)
    assert main(["report", str(without), "--out", str(without)]) == 2
    assert "holds the output of `tiap sensitivity`" in _refused(capsys, without)
    assert _tree(without) == before and _hidden(tmp_path) == []


# -- property: whatever the folder holds, the outcome is one of two -------------------------

NAMES = st.sampled_from(["manifest.json", "a.csv", "b.csv", "notes.txt", "cache.sqlite",
                         "sub", ".hidden"])
MANIFESTS = st.one_of(
    st.none(),  # no manifest.json written
    st.binary(max_size=20),  # not JSON, or not an object
    st.fixed_dictionaries({"command": st.sampled_from(["step", "other", 3])},
                          optional={"outputs": st.one_of(
                              st.lists(st.sampled_from(["a.csv", "sub/x", "b.csv", 5])),
                              st.dictionaries(st.sampled_from(["a.csv", "b.csv"]),
                                              st.just({})), st.just("a.csv"))}),
)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAMES, unique=True, max_size=5), manifest=MANIFESTS,
       force=st.booleans(), fail=st.booleans())
def test_output_folder_replaces_whole_or_refuses_untouched(
        tmp_path_factory: pytest.TempPathFactory, names: list[str], manifest: object,
        force: bool, fail: bool) -> None:
    """Any existing folder either is refused (``stale-output``) and left byte-identical, or
    ends up holding exactly the new run's files plus the kept cache; a failing run leaves
    it byte-identical. Never another exception, never a temporary sibling left."""
    parent = tmp_path_factory.mktemp("p")
    out = parent / "out"
    out.mkdir()
    for n in names:
        if n == "manifest.json":
            continue
        if n == "sub":
            (out / "sub").mkdir()
            (out / "sub" / "x").write_text("x")
        else:
            (out / n).write_text(n)
    if manifest is not None:
        (out / "manifest.json").write_bytes(
            manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode())
    before = _tree(out)
    accepted = force or _may_replace({p.name for p in out.iterdir()}, manifest)
    event(f"accepted={accepted} fail={fail}")
    new = {"manifest.json": json.dumps({"command": "step", "outputs": ["c.csv"]}).encode(),
           "c.csv": b"new"}
    try:
        with io.output_folder(out, "step", force=force, keep=("cache.sqlite",)) as tmp:
            for rel, data in new.items():
                (tmp / rel).write_bytes(data)
            if fail:
                raise RuntimeError("the run failed")
    except TiapError as exc:
        assert exc.problems[0].code == "stale-output" and not accepted
        assert _tree(out) == before
    except RuntimeError:
        assert accepted and fail
        assert _tree(out) == before
    else:
        assert accepted and not fail
        kept = {"cache.sqlite": before["cache.sqlite"]} if "cache.sqlite" in before else {}
        assert _tree(out) == {**new, **kept}
    assert _hidden(parent) == []


def _may_replace(entries: set[str], manifest: object) -> bool:
    """The documented policy, restated: an empty folder, or the same step's folder holding
    only what its manifest lists (top-level names), the manifest and the kept cache (which
    is never lost, so a folder of it alone counts as empty)."""
    if not entries - {"cache.sqlite"}:
        return True
    if not isinstance(manifest, dict) or manifest.get("command") != "step":
        return False
    outputs = manifest.get("outputs")
    if not isinstance(outputs, list | dict):
        return True  # a manifest without a list of outputs: the step's folder, whole
    listed = {o.split("/")[0] for o in outputs if isinstance(o, str)}
    return entries <= {"manifest.json", "cache.sqlite", *listed}


def test_a_cache_made_in_place_during_the_first_run_is_kept(tmp_path: Path) -> None:
    """A resumable cache (the judge's cache.sqlite) is used at its place in --out while the
    step runs; the first run creates it there, and the swap keeps it."""
    out = tmp_path / "out"
    with io.output_folder(out, "step", keep=("cache.sqlite",)) as tmp:
        out.mkdir()
        (out / "cache.sqlite").write_text("verdicts\n")
        (tmp / "manifest.json").write_text(json.dumps({"command": "step"}))
    assert _tree(out) == {"cache.sqlite": b"verdicts\n",
                          "manifest.json": b'{"command": "step"}'}
    assert _hidden(tmp_path) == []


def test_a_file_of_the_users_inside_a_listed_subfolder_is_refused(inputs, tmp_path: Path,
                                                                   capsys) -> None:
    """The swap replaces the whole tree: a file of yours in qrels/ (which the manifest lists
    file by file) would be deleted with it, so the folder is refused, left byte-identical."""
    out = tmp_path / "t"
    assert _targets(inputs, out, "raw") == 0
    (out / "qrels" / "mine.qrels").write_text("q1 0 f9 1\n")
    before = _tree(out)
    capsys.readouterr()
    assert _targets(inputs, out, "raw") == 2
    assert "'qrels/mine.qrels'" in _refused(capsys, out)
    assert _tree(out) == before
    assert _targets(inputs, out, "raw", "--force") == 0
    assert not (out / "qrels" / "mine.qrels").exists()


def test_folders_never_replaced_even_with_force(inputs, tmp_path: Path, capsys,
                                                monkeypatch) -> None:
    """--force replaces a folder whole: never the current directory (or one holding it),
    the home folder, or a source tree."""
    tree = tmp_path / "project"
    (tree / ".git").mkdir(parents=True)
    (tree / "src.py").write_text("print('mine')\n")
    before = _tree(tree)
    for out, here, why in [(tree, tmp_path.parent, "it holds a .git folder"),
                           (tmp_path, tree, "it holds the current directory")]:
        monkeypatch.chdir(here)
        for extra in ((), ("--force",)):
            assert _rescore(inputs, out, *extra) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"error[stale-output]: {out}: refusing to replace this "
                                  f"folder (even with --force): {why}"), err
    assert _tree(tree) == before
    monkeypatch.setenv("HOME", str(tree / "home"))
    (tree / "home").mkdir()
    monkeypatch.chdir(tmp_path.parent)
    assert _rescore(inputs, tree / "home", "--force") == 2
    assert "it is your home folder" in capsys.readouterr().err
