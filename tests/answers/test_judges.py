"""The offline answer judges (tiap.answers.judges) and LoCoMo's normalisation
(tiap.answers.normalize): expected values worked by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.answers.judges import (
    AbstentionJudge,
    ExactMatchJudge,
    F1Judge,
    judge_answers,
    locomo_f1,
)
from tiap.answers.normalize import answer_tokens, exact_match, normalize_answer, token_f1
from tiap.answers.records import Answer, AnswerSet, read_answers, write_answers
from tiap.audit.run import VerdictCache
from tiap.errors import TiapError
from tiap.sensitivity import answers as alignment


def A(system: str, qid: str, text: str | None, reference: str | None = None,
      category: str | None = None, source_id: str | None = None) -> Answer:
    return Answer("locomo", system, qid, text, question="Q?", reference=reference,
                  category=category, source_id=source_id)


def test_locomo_normalisation_order() -> None:
    # commas go first ("1,000" -> "1000", not "1 000"), then case, punctuation, the words
    # a/an/the/and, spaces
    assert normalize_answer("The 1,000 dogs, and a cat!") == "1000 dogs cat"
    assert normalize_answer("An apple-pie") == "applepie"  # '-' is punctuation: dropped
    assert normalize_answer("“Oh”") == "“oh”"  # LoCoMo keeps typographic quotes
    assert normalize_answer("“Oh”", typographic=True) == "oh"


def test_porter_stemming_is_nltks() -> None:
    # NLTK's extensions (LoCoMo's PorterStemmer()): dying -> die, skies -> sky; the
    # original Porter algorithm gives dy and ski
    assert answer_tokens("dying skies running marathons") == ["die", "sky", "run", "marathon"]
    assert answer_tokens("dying skies", stem=False) == ["dying", "skies"]


def test_token_f1_by_hand() -> None:
    # "She is running marathons" -> she, is, run, marathon; "ran a marathon" -> ran,
    # marathon: one common token, P = 1/4, R = 1/2, F1 = 2 * 1/8 / (3/4) = 1/3
    assert token_f1("She is running marathons", "ran a marathon") == pytest.approx(1 / 3)
    # unstemmed, nothing is common: 0
    assert token_f1("She is running marathons", "ran a marathon", stem=False) == 0.0
    # a repeated token counts once per occurrence in both: "paris paris" vs "paris":
    # c = 1, P = 1/2, R = 1, F1 = 2/3
    assert token_f1("Paris paris", "Paris") == pytest.approx(2 / 3)
    assert token_f1("", "") == 0.0  # LoCoMo: no common token, 0


def test_exact_match_compares_token_sets() -> None:
    assert exact_match("May 7, 2023", "7 May 2023")  # {may, 7, 2023} both
    assert exact_match("Paris Paris", "the Paris")
    assert not exact_match("Paris, France", "Paris")
    assert not exact_match("marathons", "marathon")  # no stemming in exact match


def test_the_category_rules() -> None:
    # multi-hop: parts at commas. "pottery, painting" vs "painting, camping, pottery": the
    # reference parts score 1, 0, 1 -> 2/3
    assert locomo_f1("pottery, painting", "painting, camping, pottery", "multi-hop") \
        == pytest.approx(2 / 3)
    # one response part "painting and pottery" -> paint, potteri: against "painting" c = 1,
    # P = 1/2, R = 1 -> 2/3; camping 0; pottery 2/3; mean 4/9
    assert locomo_f1("painting and pottery", "painting, camping, pottery", "1") \
        == pytest.approx(4 / 9)
    # the same texts as a single-hop question: F1 of the whole texts; response tokens
    # paint, potteri; reference paint, camp, potteri: c = 2, P = 1, R = 2/3 -> 0.8
    assert locomo_f1("painting and pottery", "painting, camping, pottery", "single-hop") \
        == pytest.approx(0.8)
    # open-domain: only the reference's part before ';'
    assert locomo_f1("likely yes", "Likely yes; she likes nature", "open-domain") == 1.0
    assert locomo_f1("likely yes", "Likely yes; she likes nature", "temporal") \
        == pytest.approx(2 * 1 * (2 / 5) / (1 + 2 / 5))  # c = 2 of 2 and of 5 tokens
    # adversarial: the phrases, no reference read
    assert locomo_f1("No information available.", None, "5") == 1.0
    assert locomo_f1("It is NOT MENTIONED anywhere", "Melanie", "adversarial") == 1.0
    assert locomo_f1("Melanie", "Melanie", "adversarial") == 0.0


def test_f1_judge_threshold_and_unscored(tmp_path: Path) -> None:
    s = AnswerSet((
        A("X", "q1", "painting and pottery", "painting, camping, pottery", "multi-hop"),  # 4/9
        A("X", "q2", "May 7, 2023", "7 May 2023", "temporal"),  # 1
        A("X", "q3", "Melanie", None, "single-hop"),  # no reference: unscored
        A("X", "q4", "Not mentioned in the conversation", None, "adversarial"),  # 1
        A("X", "q5", None, "Paris", "single-hop"),  # no answer: judged by no one
    ))
    out = judge_answers(s, [F1Judge(), F1Judge(threshold=0.4, name="f1@0.4")],
                        cache=tmp_path / "c.sqlite")
    got = {(a.query_id, j): (a.verdict(j).label if a.verdict(j) else "-")
           for a in out for j in ("locomo-f1", "f1@0.4")}
    assert got == {("q1", "locomo-f1"): "wrong", ("q1", "f1@0.4"): "correct",  # 0.444
                   ("q2", "locomo-f1"): "correct", ("q2", "f1@0.4"): "correct",
                   ("q3", "locomo-f1"): None, ("q3", "f1@0.4"): None,
                   ("q4", "locomo-f1"): "correct", ("q4", "f1@0.4"): "correct",
                   ("q5", "locomo-f1"): "-", ("q5", "f1@0.4"): "-"}
    q1 = out.answers[0].verdict("locomo-f1")
    assert q1.reason == "F1 0.4444"
    assert out.answers[2].verdict("locomo-f1").reason == "no reference answer"
    assert out.configs["locomo-f1"].settings["threshold"] == 0.5
    assert out.configs["f1@0.4"].settings["threshold"] == 0.4
    assert out.configs["f1@0.4"].kind == "offline"
    assert out.warnings["no_answer"]["count"] == 1
    # the verdicts survive the answer-set file
    write_answers(out, tmp_path / "answers.jsonl")
    back = read_answers(tmp_path / "answers.jsonl")
    assert back.answers[0].verdict("f1@0.4").label == "correct"


def test_exact_match_judge() -> None:
    s = AnswerSet((A("X", "q1", "May 7, 2023", "7 May 2023", "2"),
                   A("X", "q2", "Paris, France", "Paris", "single-hop"),
                   A("X", "q3", "yes", "Yes; she does", "open-domain"),
                   A("X", "q4", "no information available", None, "adversarial")))
    out = judge_answers(s, ExactMatchJudge())
    assert [a.verdict("locomo-em").label for a in out] == ["correct", "wrong", "correct",
                                                          "correct"]


def test_abstention_judge_only_judges_abs_questions() -> None:
    s = AnswerSet((
        Answer("longmemeval", "X", "q1", "You never mentioned a dog.", source_id="7161e7e2_abs"),
        Answer("longmemeval", "X", "8e9d_abs", "Your dog is called Max."),
        Answer("longmemeval", "X", "8e9d", "I don't know."),  # not an abstention question
    ))
    out = judge_answers(s, AbstentionJudge())
    assert [a.verdict("longmemeval-abstention") and a.verdict("longmemeval-abstention").label
            for a in out] == ["correct", "wrong", None]
    # its own phrases: "Max" counts as abstaining, the first answer does not
    out = judge_answers(s, AbstentionJudge(phrases=["max"], name="max"))
    assert [a.verdict("max").label for a in out.answers[:2]] == ["wrong", "correct"]
    assert out.configs["max"].settings["phrases"] == ["max"]


def test_cached_verdicts_are_not_asked_again(tmp_path: Path) -> None:
    s = AnswerSet(tuple(A("X", f"q{i}", "Paris", "Paris") for i in range(3)))
    asked: list[tuple[str, int]] = []

    def progress(judge: str, done: int, total: int) -> None:
        asked.append((judge, total))

    cache = tmp_path / "verdicts.sqlite"
    judge_answers(s, F1Judge(), cache=cache, progress=progress)
    # the three answers make one request: the same texts, the same settings
    assert asked[-1] == ("locomo-f1", 1)
    asked.clear()
    judge_answers(s, F1Judge(), cache=cache, progress=progress)
    assert asked == [("locomo-f1", 0)]
    asked.clear()
    judge_answers(s, F1Judge(threshold=0.9), cache=cache, progress=progress)  # new request
    assert asked[-1] == ("locomo-f1", 1)
    with VerdictCache(cache) as c:
        assert len(c) == 2


def test_judge_answers_refuses_what_is_not_an_answer_judge() -> None:
    s = AnswerSet((A("X", "q1", "Paris", "Paris"),))
    from tiap.audit.judges import make_judge

    with pytest.raises(TiapError, match="not an answer judge"):
        judge_answers(s, [make_judge("lexical")])
    with pytest.raises(TiapError, match="runs: expected an integer from 1 to 1,000, got 0"):
        judge_answers(s, F1Judge(), runs=0)
    with pytest.raises(TiapError, match="two judges are named 'locomo-f1'"):
        judge_answers(s, [F1Judge(), F1Judge(threshold=0.2)])
    with pytest.raises(TiapError, match="threshold must be a number in"):
        F1Judge(threshold=1.5)


def test_the_alignment_keeps_its_scores() -> None:
    # tiap.sensitivity.answers uses the one normalisation, unstemmed, typographic quotes
    # dropped, and scores two empty texts 1 (its own rule)
    assert alignment.tokens("“The dogs,” and cats") == ["dogs", "cats"]
    assert alignment.token_f1("", "") == 1.0
    assert alignment.token_f1("running", "ran") == 0.0  # no stemming
    assert alignment.token_f1("the Paris", "Paris") == 1.0
