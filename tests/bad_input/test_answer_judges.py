"""Bad judge prompt templates (tiap.answers.llm_judge.read_prompt): every problem located,
reported together, before any request. A template with no placeholder or without the
system's or the reference answer, a missing file, a typo of a placeholder (``{respnse}``) are
errors; another ``{name}`` is sent as it is and counted as a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.answers.judges import judge_answers
from tiap.answers.llm_judge import LLMAnswerJudge, read_prompt
from tiap.answers.records import Answer, AnswerSet
from tiap.errors import TiapError


def _write(tmp_path: Path, text: str, name: str = "judge.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_a_template_with_no_placeholder(tmp_path: Path) -> None:
    p = _write(tmp_path, "# a judge\nIs the answer right? Say yes or no.\n")
    with pytest.raises(TiapError, match="the template has no placeholder") as exc:
        read_prompt(p)
    assert exc.value.code == "input" and exc.value.problems[0].file == str(p)


def test_a_template_that_never_shows_the_response(tmp_path: Path) -> None:
    p = _write(tmp_path, "Question: {question}\nGold: {answer}\n")
    with pytest.raises(TiapError, match=r"no \{response\} \(the system's answer\)"):
        read_prompt(p)
    p = _write(tmp_path, "Question: {question}\nSaid: {generated_answer}\n")
    with pytest.raises(TiapError, match=r"no \{answer\} \(the reference answer\)"):
        read_prompt(p)


def test_a_missing_template_file(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="prompt template file not found") as exc:
        read_prompt(tmp_path / "nowhere.txt")
    assert exc.value.code == "io"
    with pytest.raises(TiapError, match="prompt template file not found"):  # and before any request
        LLMAnswerJudge(tmp_path / "nowhere.txt", model="m", base_url="http://127.0.0.1:9/v1")


def test_a_placeholder_typo_is_an_error_on_its_line(tmp_path: Path) -> None:
    p = _write(tmp_path, "# comment\n\n--- SYSTEM ---\nBe fair to {respnse}.\n\n"
                         "--- USER TEMPLATE ---\nQ: {question}\nGold: {answr}\n"
                         "Said: {response}\n")
    with pytest.raises(TiapError) as exc:
        read_prompt(p)
    # both typos, each on its own line of the file, reported together
    got = [(pr.line, pr.message.split(";")[0]) for pr in exc.value.problems]
    assert got == [(4, "unknown placeholder {respnse} (did you mean 'response'?)"),
                   (8, "unknown placeholder {answr} (did you mean 'answer'?)")]


def test_other_brace_text_is_sent_as_it_is_and_counted(tmp_path: Path) -> None:
    p = _write(tmp_path, 'Gold {answer}, said {response}. Reply {"label": X} or {verdict}.\n')
    t = read_prompt(p)
    assert t.unknown == ("verdict",)
    (msg,) = t.render("q", "Paris", "Rome")
    assert msg["content"] == 'Gold Paris, said Rome. Reply {"label": X} or {verdict}.'
    judge = LLMAnswerJudge(p, model="m", base_url="http://127.0.0.1:9/v1")
    assert judge.template_warnings[0]["message"] == \
        "prompt judge: {verdict} is no placeholder and was sent as it is"


def test_the_warning_reaches_the_judged_set(tmp_path: Path) -> None:
    # no request is made for an answer with no text, so no server is needed here
    p = _write(tmp_path, "Gold {answer}, said {response}; {verdict}\n")
    s = AnswerSet((Answer("locomo", "X", "q1", None),))
    out = judge_answers(s, LLMAnswerJudge(p, model="m", base_url="http://127.0.0.1:9/v1"),
                        cache=tmp_path / "c.sqlite")
    assert out.warnings["template_text"]["judges"] == {"m|judge|r0": 1}
    assert out.warnings["no_answer"]["count"] == 1


def test_bad_sections(tmp_path: Path) -> None:
    p = _write(tmp_path, "Hello\n--- SYSTEM ---\nsys\n--- SYSTEM ---\nmore\n")
    with pytest.raises(TiapError) as exc:
        read_prompt(p)
    msgs = [(pr.line, pr.message) for pr in exc.value.problems]
    assert (4, "section '--- SYSTEM ---' is given 2 times") in msgs
    assert (1, "text before the first section marker ('--- SYSTEM ---')") in msgs
    assert (None, "a '--- SYSTEM ---' section but no '--- USER TEMPLATE ---' section") in msgs
    p = _write(tmp_path, "--- SYSTEM ---\nsys {answer} {response}\n--- USER TEMPLATE ---\n\n")
    with pytest.raises(TiapError, match="the user template is empty"):
        read_prompt(p)


def test_bad_judge_settings(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="run must be an integer >= 0"):
        LLMAnswerJudge(model="m", base_url="http://127.0.0.1:9/v1", run=-1)
    with pytest.raises(TiapError, match="temperature"):
        LLMAnswerJudge(model="m", base_url="http://127.0.0.1:9/v1", temperature=-1.0)
    with pytest.raises(TiapError, match="unknown local model 'gpt-4o'"):
        LLMAnswerJudge(model="gpt-4o")  # no base_url: the local server, which serves no gpt-4o


def test_judge_files_refuses_bad_specs_before_writing(tmp_path: Path) -> None:
    from tiap.answers.judges import judge_files

    a = _write(tmp_path, '{"dataset": "locomo", "system": "A", "query_id": "q1", '
                         '"answer": "May 7, 2023", "reference": "7 May 2023"}\n', "a.jsonl")
    cases = [
        (["locomo-f2"], {}, "unknown answer judge 'locomo-f2' (did you mean 'locomo-f1'?)"),
        (["locomo-f1(treshold=0.4)"], {}, "takes no argument 'treshold'"),
        (["locomo-f1(threshold='high')"], {}, "threshold must be a number in [0, 1]"),
        (["locomo-f1"], {"runs": 0}, "runs: expected an integer from 1 to 1,000, got 0"),
        (["locomo-f1"], {"temperature": 3.0}, "temperature: expected a number from 0 to 2"),
        (["llm(prompt='none.txt')"], {}, "prompt template file not found"),
        (["locomo-f1(threshold=0.5"], {}, "invalid judge spec"),
    ]
    for specs, kw, said in cases:
        with pytest.raises(TiapError) as exc:
            judge_files(a, tmp_path / "bad", specs, **kw)
        assert said in str(exc.value), (specs, str(exc.value))
    assert not (tmp_path / "bad").exists()  # nothing written
    s, man = judge_files(a, tmp_path / "ok", ["locomo-f1(threshold=0.9)", "locomo-em"])
    assert [v.label for v in s.answers[0].verdicts] == ["correct", "correct"]
    assert man["options"]["judges"] == ["locomo-f1(threshold=0.9)", "locomo-em"]
