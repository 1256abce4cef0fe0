"""The semantic-audit rubric as data: the prompt template, its version and the verdict parser.

The rubric follows the paper's Stage III (section 3.3): a credited memory is judged against
the question and its reference answer for *semantic support* (``supports`` / ``partial`` /
``does_not_support``) and for *serving semantics* (``transformed_ok`` / ``raw_needed`` /
``either_ok``), and the judge answers with one JSON object whose keys are those of the
paper's released verdicts (``semantic_support_label``, ``serving_semantics_label``,
``notes``). The template text is versioned (:data:`RUBRIC_VERSION`); changing a word of it
changes the judge's settings hash, so cached verdicts of the old text are never reused.
The same object as a JSON schema (:data:`VERDICT_SCHEMA`) is sent as the request's
``response_format`` where the server takes one (:class:`tiap.llm.client.StructuredOutput`).

Parsing (:func:`parse_verdict`), in order:

1. an empty reply is ``unscored`` (``empty response``);
2. a fenced block (```json ... ```) is unwrapped;
3. the text is read as JSON; failing that, the outermost ``{...}`` span
   (:data:`PARSE_PATTERN`, ``re.DOTALL``) is;
4. the semantic label is read from ``semantic_support_label`` (or ``semantic_label``,
   ``label``) and normalised (:func:`tiap.audit.labels.normalize_label`);
5. when the JSON is invalid (an unescaped quote in ``notes``, a reply cut after the labels),
   the labels are read from their ``"key": "value"`` pairs (:data:`LABEL_PAIR_PATTERN`, the
   keys of step 4 and of the serving label): when every pair of a semantic key names the
   same label of the rubric, the verdict has that label (and the serving label, read the same
   way), no ``notes``, and the reason ``label recovered from invalid JSON: ...``;
6. anything else (no JSON object, no label, a label outside the rubric) is ``unscored`` with
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
    SERVING_LABELS,
    UNSCORED,
    Verdict,
    normalize_label,
    normalize_serving,
)

__all__ = [
    "LABEL_PAIR_PATTERN",
    "PARSE_PATTERN",
    "RUBRIC_VERSION",
    "SYSTEM_TEMPLATE",
    "USER_TEMPLATE",
    "VERDICT_SCHEMA",
    "VERDICT_SCHEMA_NAME",
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

#: The verdict the templates ask for, as the JSON schema sent with ``response_format``
#: ``json_schema``: the two labels as enums, then the notes (last, so that a reply cut short
#: has its labels already); every key required (strict schemas need it) and no other key.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "semantic_support_label": {"type": "string", "enum": list(SEMANTIC_LABELS)},
        "serving_semantics_label": {"type": "string", "enum": list(SERVING_LABELS)},
        "notes": {"type": "string"},
    },
    "required": ["semantic_support_label", "serving_semantics_label", "notes"],
    "additionalProperties": False,
}
#: The schema's name in the request (``response_format.json_schema.name``).
VERDICT_SCHEMA_NAME = "verdict"

#: The span read as the verdict when the whole reply is not JSON: the outermost braces.
PARSE_PATTERN = r"\{.*\}"
_PARSE_RE = re.compile(PARSE_PATTERN, re.DOTALL)
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_LABEL_KEYS = ("semantic_support_label", "semantic_label", "label")
_SERVING_KEYS = ("serving_semantics_label", "serving_label")
#: A ``"key": "value"`` pair of invalid JSON (``{keys}``: the label keys, as alternatives).
LABEL_PAIR_PATTERN = r'"(?:{keys})"\s*:\s*"([^"\\]*)"'
_LABEL_PAIR = re.compile(LABEL_PAIR_PATTERN.format(keys="|".join(_LABEL_KEYS)))
_SERVING_PAIR = re.compile(LABEL_PAIR_PATTERN.format(keys="|".join(_SERVING_KEYS)))


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


def _recovered(span: str, content: str, problem: str) -> Verdict:
    """The labels read from the ``"key": "value"`` pairs of invalid JSON (step 5), else
    ``unscored`` with ``problem``."""
    labels = {normalize_label(v) for v in _LABEL_PAIR.findall(span)}
    if len(labels) != 1 or None in labels:  # none, one outside the rubric, or a conflict
        return _unscored(f"invalid JSON in the response ({problem})", content)
    servings = {normalize_serving(v) for v in _SERVING_PAIR.findall(span)}
    return Verdict(
        label=labels.pop(),  # type: ignore[arg-type]  # not None: checked above
        serving_label=servings.pop() if len(servings) == 1 else None,
        reason=f"label recovered from invalid JSON: {problem}; the notes were dropped",
        raw_response=content,
    )


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
                return _recovered(text[text.index("{"):], content, first.msg)
            return _unscored("no JSON object in the response", content)
        try:
            obj = json.loads(m.group(0))
        except json.JSONDecodeError as exc:
            return _recovered(m.group(0), content, exc.msg)
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
