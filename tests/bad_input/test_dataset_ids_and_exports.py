"""Issue 33, item 4: dataset exports and ids.

- A pinned file a dataset reads is never left out: a BEAM-100K chat whose ``chat.json`` is
  missing is refused (``error[io]``, nothing written) exactly as LoCoMo's missing file is,
  never an export of 19 chats with ``verified: true``. BEAM-1M, whose release ships 9 of 35
  chats, says which pinned files it did not read and why (``pinned_not_read``).
- One id rule (:func:`tiap.ids.id_problem`) for all text a loader makes ids of (LoCoMo
  ``sample_id`` / ``dia_id``, LongMemEval ``question_id`` / session ids, BEAM message ids and
  abilities): whitespace and control characters are refused with a located error.

Every input is built here, in a temporary folder (the shared data is never touched), and
read with ``--no-verify`` (the files are not the pinned releases) and downloads off.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tiap.cli.main import main
from tiap.datasets import DataSource, load
from tiap.datasets.beam import read_chat
from tiap.datasets.export import export_dataset
from tiap.datasets.locomo import read_locomo
from tiap.datasets.longmemeval import read_question
from tiap.errors import TiapError
from tiap.ids import id_problem

# -- inputs ----------------------------------------------------------------------------------

CHAT = [{"batch_number": 1, "time_anchor": "March-15-2024",
         "turns": [[{"id": 0, "role": "user", "content": "I moved to Lyon."},
                    {"id": 1, "role": "assistant", "content": "Nice city."}]]}]
QUESTIONS = {"information_extraction": [{"question": "Where?", "answer": "Lyon",
                                         "source_chat_ids": [0]}]}
#: The chats BEAM's release ships a chat.json for (the pins in checksums/beam.tsv).
RELEASE = {"100K": [str(c) for c in range(1, 21)],
           "1M": ["3", "4", "6", "7", "8", "9", "10", "31", "32"]}


def beam_tree(root: Path, tier: str, *, without: str | None = None) -> Path:
    """A BEAM folder of small chats: questions for every chat of the tier (20 or 35),
    chat.json for those of the release, but ``without``."""
    n = 20 if tier == "100K" else 35
    for c in range(1, n + 1):
        d = root / "beam" / tier / str(c)
        d.mkdir(parents=True)
        (d / "probing_questions.json").write_text(json.dumps(QUESTIONS))
        if str(c) in RELEASE[tier] and str(c) != without:
            (d / "chat.json").write_text(json.dumps(CHAT))
    return root


CONV: dict[str, Any] = {
    "sample_id": "conv-1",
    "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                     "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                                   {"speaker": "Bob", "dia_id": "D1:2", "text": "hello"}]},
    "qa": [{"question": "who?", "answer": "Ann", "evidence": ["D1:1"], "category": 4}],
}

QUESTION: dict[str, Any] = {
    "question_id": "q1", "question_type": "single-session-user", "question": "Where?",
    "answer": "Lyon", "question_date": "2023/05/30", "answer_session_ids": ["s1"],
    "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/20"],
    "haystack_sessions": [[{"role": "user", "content": "I moved to Lyon.", "has_answer": True}]],
}


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Downloads off and an empty cache: a missing file can only be missing."""
    monkeypatch.setenv("TIAP_OFFLINE", "1")
    monkeypatch.setenv("TIAP_CACHE", str(tmp_path / "cache"))


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    rc = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, [ln for ln in err.splitlines() if ln.startswith("error")]


def export_cli(root: Path, dataset: str, out: Path,
               capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    return run(["datasets", "export", dataset, "--out", str(out), "--data", str(root),
                "--no-verify"], capsys)


# -- a pinned file missing -------------------------------------------------------------------

def test_beam_100k_missing_chat_is_refused_like_locomo(tmp_path: Path, capsys) -> None:
    root = beam_tree(tmp_path / "data", "100K", without="7")
    out = tmp_path / "out"
    rc, lines = export_cli(root, "beam/100k", out, capsys)
    assert rc == 2 and not out.exists()  # before the fix: exit 0, 19 chats, verified true
    assert len(lines) == 1
    assert lines[0].startswith("error[io]: beam/100K/7/chat.json not found ("
                               f"{root / 'beam' / '100K' / '7' / 'chat.json'}; cache ")
    # LoCoMo's file missing: the same error, from the same place (DataSource.path)
    (root / "locomo").mkdir()
    rc, lo = export_cli(root, "locomo", out, capsys)
    assert rc == 2 and lo[0].startswith("error[io]: locomo/locomo10.json not found (")
    # every loader, not only the export: the Python API refuses the same way
    ds = load("beam/100k", source=DataSource(root, verify=False))
    with pytest.raises(TiapError) as info:
        ds.stats()
    assert info.value.code == "io" and "beam/100K/7/chat.json not found" in str(info.value)
    with pytest.raises(TiapError, match="beam/100K/7/chat.json not found"):
        export_dataset(ds, tmp_path / "api")
    assert not (tmp_path / "api").exists()
    assert ds.missing_chats() == [] and ds.unread_files() == {}  # 7 is pinned: not "absent"


def test_beam_100k_whole_exports_and_says_what_was_checked(tmp_path: Path, capsys) -> None:
    root = beam_tree(tmp_path / "data", "100K")
    out = tmp_path / "out"
    rc, lines = export_cli(root, "beam/100k", out, capsys)
    assert rc == 0 and lines == []
    man = json.loads((out / "manifest.json").read_text())
    assert len(man["inputs"]) == 40 and man["pinned_not_read"] == []
    # --no-verify: nothing was checked against a pin, so nothing is claimed
    assert man["verified"] is False
    assert man["counts"]["turns"] == 40 and man["counts"]["queries"] == 20  # 2 and 1 per chat


def test_beam_1m_partial_release_is_explicit(tmp_path: Path, capsys) -> None:
    root = beam_tree(tmp_path / "data", "1M")
    out = tmp_path / "out"
    rc, lines = export_cli(root, "beam/1m", out, capsys)
    assert rc == 0 and lines == []
    man = json.loads((out / "manifest.json").read_text())
    missing = [str(c) for c in range(1, 36) if str(c) not in RELEASE["1M"]]
    assert len(missing) == 26
    assert man["pinned_not_read"] == [
        {"path": f"beam/1M/{c}/probing_questions.json",
         "reason": f"chat {c} has no chat.json in the BEAM release (not pinned)"}
        for c in missing]
    assert [i["path"] for i in man["inputs"]] == [
        f"beam/1M/{c}/{f}" for c in RELEASE["1M"] for f in ("chat.json", "probing_questions.json")]
    assert man["counts"]["queries"] == 9 and man["verified"] is False
    # a chat of the release missing here is refused, as in 100K
    (root / "beam" / "1M" / "31" / "chat.json").unlink()
    rc, lines = export_cli(root, "beam/1m", tmp_path / "out2", capsys)
    assert rc == 2 and lines[0].startswith("error[io]: beam/1M/31/chat.json not found")


def test_verified_is_true_only_for_files_checked_against_their_pins(
        data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export_dataset(load("locomo", source=DataSource(data_dir)), out)
    man = json.loads((out / "manifest.json").read_text())
    assert man["verified"] is True and [i["matches_pin"] for i in man["inputs"]] == [True]
    assert man["pinned_not_read"] == []


# -- one id rule -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "name"), [
    ("conv\t1", "a tab (U+0009)"), ("conv\n1", "a newline (U+000A)"),
    ("conv\x001", "a NUL (U+0000)"), ("conv\x1b1", "a control character (U+001B)"),
    ("conv\x7f1", "a control character (U+007F)"), ("conv\x851", "a control character (U+0085)"),
    ("conv 1", "a space (U+0020)"), ("conv\u00a01", "no-break space (U+00A0)"),
])
def test_id_rule_refuses_whitespace_and_control_characters(text: str, name: str) -> None:
    assert id_problem(text) == (f"holds {name} at character 5; ids may hold no whitespace and "
                                "no control character (TREC files split on whitespace)")


def test_id_rule_keeps_the_real_datasets_ids() -> None:
    for ok in ("conv-26", "D1:3", "chat-1:abstention:0", "gpt4_2655b836_abs",
               "answer_280352e9", "information_extraction", "ünïcode-ids"):
        assert id_problem(ok) is None
    assert id_problem("") == "is empty"


@pytest.mark.parametrize("sample_id", ["conv\t1", "conv\n1", "conv\x001"])
def test_locomo_sample_id_with_a_control_character_is_refused(
        tmp_path: Path, capsys, sample_id: str) -> None:
    root = tmp_path / "data"
    (root / "locomo").mkdir(parents=True)
    f = root / "locomo" / "locomo10.json"
    f.write_text(json.dumps([{**copy.deepcopy(CONV), "sample_id": sample_id}]))
    out = tmp_path / "out"
    rc, lines = export_cli(root, "locomo", out, capsys)
    assert rc == 2 and not out.exists()  # before the fix: exit 0, the id in every unit id
    assert lines == [(f"error[invalid-value]: {f}, record .[0].sample_id: conversation 0: "
                     f"sample_id {sample_id!r} {id_problem(sample_id)}; it would be copied "
                     "into unit, query and collection ids")]


def test_locomo_dia_ids_are_checked_all_at_once(tmp_path: Path) -> None:
    c = copy.deepcopy(CONV)
    c["conversation"]["session_1"][0]["dia_id"] = "D1: 1"
    c["conversation"]["session_1"][1]["dia_id"] = "D1:2\r"
    f = tmp_path / "locomo10.json"
    f.write_text(json.dumps([c]))
    with pytest.raises(TiapError) as info:
        read_locomo(f)
    assert [(p.record, p.code) for p in info.value.problems] == [
        (".[0].conversation.session_1[0].dia_id", "invalid-value"),
        (".[0].conversation.session_1[1].dia_id", "invalid-value")]
    assert "dia_id 'D1: 1' holds a space (U+0020) at character 4" in str(info.value)
    assert "dia_id 'D1:2\\r' holds a carriage return (U+000D)" in str(info.value)


def test_longmemeval_question_and_session_ids(tmp_path: Path) -> None:
    q = copy.deepcopy(QUESTION)
    q["question_id"] = "q\t1"
    q["haystack_session_ids"] = ["s\n1"]
    f = tmp_path / "0_q.json"
    f.write_text(json.dumps(q))
    with pytest.raises(TiapError) as info:
        read_question(f)
    assert [(p.record, p.code) for p in info.value.problems] == [
        (".question_id", "invalid-value"), (".haystack_session_ids[0]", "invalid-value")]
    assert "question_id 'q\\t1' holds a tab" in str(info.value)
    assert "session id 's\\n1' holds a newline" in str(info.value)
    f.write_text(json.dumps(QUESTION))  # the same file with clean ids reads
    assert [t.unit_id for t in read_question(f).turns] == ["q1:s1:1"]


def test_beam_message_ids_and_abilities(tmp_path: Path) -> None:
    chat = copy.deepcopy(CHAT)
    chat[0]["turns"][0][1]["id"] = "m\x001"
    cpath, qpath = tmp_path / "chat.json", tmp_path / "probing_questions.json"
    cpath.write_text(json.dumps(chat))
    qpath.write_text(json.dumps({"temporal\treasoning": QUESTIONS["information_extraction"]}))
    with pytest.raises(TiapError) as info:
        read_chat("chat-1", cpath, qpath)
    assert [(p.file, p.record, p.code) for p in info.value.problems] == [
        (str(cpath), ".[0].turns[0][1].id", "invalid-value"),
        (str(qpath), '.["temporal\\treasoning"]', "invalid-value")]
    assert "message id 'm\\x001' holds a NUL (U+0000)" in str(info.value)
    assert "ability 'temporal\\treasoning' holds a tab" in str(info.value)
