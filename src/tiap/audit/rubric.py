"""The semantic-audit rubric as data: the prompt template, its version and the verdict parser.

The rubric follows the paper's Stage III (section 3.3): a credited memory is judged against
the question and its reference answer for *semantic support* (``supports`` / ``partial`` /
``does_not_support``) and for *serving semantics* (``transformed_ok`` / ``raw_needed`` /
``either_ok``), and the judge answers with one JSON object whose keys are those of the
paper's released verdicts (``semantic_support_label``, ``serving_semantics_label``,
``notes``). The template text is versioned (:data:`RUBRIC_VERSION`); changing a word of it
changes the judge's settings hash, so cached verdicts of the old text are never reused.

Parsing (:func:`parse_verdict`), in order:

1. an empty reply is ``unscored`` (``empty response``);
2. a fenced block (```json ... ```) is unwrapped;
3. the text is read as JSON; failing that, the outermost ``{...}`` span
   (:data:`PARSE_PATTERN`, ``re.DOTALL``) is;
4. the semantic label is read from ``semantic_support_label`` (or ``semantic_label``,
   ``label``) and normalised (:func:`tiap.audit.labels.normalize_label`);
5. anything else (no JSON object, no label, a label outside the rubric) is ``unscored`` with
   the reason, and the reply is kept as ``raw_response``.

An unknown serving label does not unscore the verdict: ``serving_label`` is then ``None``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tiap.audit.labels import (
    SEMANTIC_LABELS,
    UNSCORED,
    Verdict,
    normalize_label,
    normalize_serving,
)

__all__ = [
    "PARSE_PATTERN",
    "RUBRIC_VERSION",
    "SYSTEM_TEMPLATE",
    "USER_TEMPLATE",
    "parse_verdict",
    "render_messages",
]

RUBRIC_VERSION = "tiap-semantic-audit-v1"

SYSTEM_TEMPLATE = """\
You audit retrieval credit in a conversational-memory benchmark. A memory system stored a \
transformed memory (a fact, observation, event or summary derived from a conversation turn). \
The benchmark credited it for a question because it derives from the turn labelled as \
evidence. Decide whether the memory itself supports the reference answer.

semantic_support_label:
- "supports": the memory alone states what the reference answer needs.
- "partial": the memory is relevant but incomplete: it gives part of the answer, drops a \
condition, changes the temporal scope, or still needs an inference the memory does not state.
- "does_not_support": the memory omits the answer or keeps only weakly related context.

serving_semantics_label (which stored form a system should serve for this question):
- "transformed_ok": the transformed memory serves the question at least as well as the raw turn.
- "raw_needed": the raw turn is needed; the transformation lost something the answer needs.
- "either_ok": either form serves equally.

Judge only from the texts given. Reply with one JSON object and nothing else:
{"semantic_support_label": "...", "serving_semantics_label": "...", "notes": "one sentence"}"""

USER_TEMPLATE = """\
Question: {question}
Reference answer: {answer}
Credited memory ({item_kind}): {item_text}"""

#: The span read as the verdict when the whole reply is not JSON: the outermost braces.
PARSE_PATTERN = r"\{.*\}"
_PARSE_RE = re.compile(PARSE_PATTERN, re.DOTALL)
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_LABEL_KEYS = ("semantic_support_label", "semantic_label", "label")
_SERVING_KEYS = ("serving_semantics_label", "serving_label")


def render_messages(fields: Mapping[str, Any], *, system: str = SYSTEM_TEMPLATE,
                    user: str = USER_TEMPLATE) -> list[dict[str, str]]:
    """The chat messages for one case (``fields`` as :meth:`Case.judged_fields`).

    The system message is sent as written; the user message is ``user.format(**fields)``
    (fields: ``question``, ``answer``, ``item_text``, ``item_kind``, ``raw_support_text``).
    """
    values = {k: ("" if v is None else str(v)) for k, v in fields.items()}
    values.setdefault("item_kind", "memory")
    if not values["item_kind"]:
        values["item_kind"] = "memory"
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user.format(**values)},
    ]


def _unscored(reason: str, raw: str | None) -> Verdict:
    return Verdict(label=UNSCORED, reason=reason, raw_response=raw)


def parse_verdict(content: str | None) -> Verdict:
    """A :class:`Verdict` from a judge's reply (see the module docstring for the steps)."""
    if content is None or not content.strip():
        return _unscored("empty response", content)
    text = content.strip()
    fence = _FENCE_RE.search(text)
    if fence:
        text = fence.group(1).strip()
    obj: Any
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as first:
        m = _PARSE_RE.search(text)
        if m is None:
            if "{" in text:  # an object that never closes (a cut reply)
                return _unscored(f"invalid JSON in the response ({first.msg})", content)
            return _unscored("no JSON object in the response", content)
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError as exc:
            return _unscored(f"invalid JSON in the response ({exc.msg})", content)
    if not isinstance(obj, dict):
        return _unscored(f"the response is JSON but not an object ({type(obj).__name__})",
                         content)
    raw_label = next((obj[k] for k in _LABEL_KEYS if k in obj), None)
    if raw_label is None:
        return _unscored("no semantic_support_label in the response", content)
    label = normalize_label(raw_label)
    if label is None:
        return _unscored(f"label {raw_label!r} is not one of {', '.join(SEMANTIC_LABELS)}",
                         content)
    raw_serving = next((obj[k] for k in _SERVING_KEYS if k in obj), None)
    notes = obj.get("notes")
    return Verdict(
        label=label,
        serving_label=normalize_serving(raw_serving),
        notes=None if notes is None else str(notes),
        raw_response=content,
    )
