"""The ``heuristic`` parser: deterministic, offline, extractive facts from each turn.

The approach follows the heuristic parser of the paper authors' memory service (Pali):
split a turn into short statements, drop the ones that carry nothing to remember
(greetings, thanks, questions, reactions), rewrite the speaker's perspective so that a fact
stands on its own, and anchor it in time. This module is TIAP's own implementation of that
idea; the steps, in order:

1. **Clean**: code blocks, Markdown markers (headings, bullets, bold, links), table rows and
   BEAM's ``->-> 1,1`` turn markers are removed; each remaining line is split into
   **sentences** (on ``.``, ``!``, ``?`` followed by a space; common abbreviations such as
   ``Dr.`` and ``e.g.`` do not end a sentence). Questions are dropped.
2. **Clauses**: a sentence is split on ``;`` and, where a new subject follows, on a
   conjunction (``and``, ``but``, ``so``, ``yet``, ``plus``), a spaced dash or a comma:
   ``"I went to a support group yesterday and I loved it"`` gives two clauses, while
   ``"... and it was so powerful"`` stays with its clause (``it`` refers back) and
   ``"My kids and I went camping"`` is not split (the left part is too short to be a clause).
   **Finer candidates**: a turn's candidates come at three granularities, in the order
   spoken: the whole sentence when it holds several clauses, each clause, and each clause's
   sub-clause facts (:func:`_refine`: coordinated verb phrases with the subject copied,
   subordinate clauses with their own subject, relative clauses after a name, lists of
   short noun phrases, named relatives such as ``"my sister Anna"``). The coarser candidate
   stays, so the cap chooses among overlapping facts (as the authors' service stores a turn
   whole and sentence by sentence).
3. **Clean-up of a clause**: leading interjections and vocatives (``"Wow, Caroline!"``,
   ``"Thanks, Mel!"``, ``"Yeah,"``) are removed; what is left must have three words or a
   number, must not open like a question, and must not be a closing (``"Talk to you soon"``).
4. **Score** (information content), from the clause as spoken::

       score = 1.0 * min(capitalised words after the first, 3)      # names, places, titles
             + 1.0 * min(numbers, 2)                                # "4 years", "18th"
             + 1.0 * [a time expression]                            # "yesterday", "last week"
             + 0.75 * min(event or preference verbs, 2)             # went, adopted, love, plan
             + 0.15 * min(content words, 12)                        # length, saturating
             + 0.5  * [the speaker talks about themself]            # I / my / me
             - 0.75 * [the clause opens with it/that/this/there]    # refers back
             - 1.5  * [a reaction: "sounds great", "so proud of you"]
             - 2.0  * [assistant boilerplate: "hope this helps", "feel free"]
             - 0.5  * [over 45 words]

   Clauses scoring below :data:`MIN_SCORE` are not facts; so a turn may yield none.
5. **Select** the ``max_facts`` best candidates of the turn (ties: earlier clause first; equal
   texts once), keep them in the order spoken.
6. **Rewrite** each selected clause: first person becomes the speaker (``I`` -> ``Caroline``,
   ``my`` -> ``Caroline's``, ``I'm`` -> ``Caroline is``, ``I love`` -> ``Caroline loves``),
   second person the other speaker (LongMemEval and BEAM roles: ``the user`` and
   ``the assistant``); a dropped subject is restored (``"Gonna continue ..."`` ->
   ``"Caroline is gonna continue ..."``); the session date is put in front
   (``"On 8 May 2023, ..."``) when the session has one.

Example (LoCoMo ``conv-26:D1:3``, Caroline speaking to Melanie on 8 May 2023)::

    "I went to a LGBTQ support group yesterday and it was so powerful."
    -> "On 8 May 2023, Caroline went to a LGBTQ support group yesterday and it was so powerful."

The parser uses no randomness: its output depends only on the turn, its speakers, its
session date and ``max_facts``.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping, Sequence
from datetime import date
from typing import Annotated, Any, NamedTuple

from tiap.config import Settings, ranged
from tiap.datasets.base import Bundle
from tiap.errors import TiapError
from tiap.memory.dates import anchor_text
from tiap.memory.parsers import FACT_KIND, Parser, register_parser, turn_contexts
from tiap.memory.store import Item

__all__ = ["MIN_SCORE", "Candidate", "HeuristicParser", "candidates", "extract_facts", "heuristic"]

MIN_SCORE = 0.9
LONG_CLAUSE = 45

# -- cleaning --------------------------------------------------------------------------------

_BEAM_MARKER = re.compile(r"\s*->->\s*[\d,\s]*")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_QUOTE_PAIRS = (("\u2019", "'"), ("\u2018", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u00a0", " "))
_MD_LINE_PREFIX = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|>[ \t]*|[-*+\u2022][ \t]+|\d{1,3}[.)][ \t]+|[a-z][.)][ \t]+)+", re.M
)
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_SPACES = re.compile(r"\s+")

# -- sentences and clauses -------------------------------------------------------------------

_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_ABBREV = re.compile(
    r"(?:\b(?:mr|mrs|ms|dr|st|sr|jr|prof|vs|etc|e\.g|i\.e|approx|no|vol|fig|inc|ltd|co|mt|ft|"
    r"a\.m|p\.m|u\.s|u\.k)|\b[A-Z])\.$",
    re.I,
)
_SUBJECT = (
    r"(?:I|I'm|I've|I'd|I'll|i|we|we're|we've|we'll|we'd|you|you're|you've|you'll|you'd|he|"
    r"he's|she|she's|they|they're|they've|they'll|my|our|your|his|their)\b"
)
# A clause boundary: ";" always; a conjunction, spaced dash or comma only before a new subject.
_CLAUSE_SPLIT = re.compile(
    r"(?=[\s;,\u2013\u2014-])(?:\s*;\s*|"  # quick test first: most positions fail here
    r"(?:\s+[-\u2013\u2014]+\s+|\s*[-\u2013\u2014]{2,}\s*|,?\s+(?:and|but|so|yet|plus)\s+|,\s+)"
    r"(?=" + _SUBJECT + "))"
)
# (written to open with a character set, so that the regex engine skips to a candidate in C)
_SEPARATOR = re.compile(r"[;,\u2013\u2014 ](?:(?<! )|-|(?:and|but|so|yet|plus) )")
# What a boundary other than ";" needs: a subject word after a comma or dash (and spaces) or
# after a conjunction and a space. Far cheaper than _CLAUSE_SPLIT, which tries its spaced
# alternatives at every space; few sentences have it, and those are nearly all that split.
_SUBJECT_WORD = r"(?:I|i|we|you|he|she|they|my|our|your|his|their)\b"  # _SUBJECT's stems
_CLAUSE_SPLIT_NEEDS = re.compile(
    r"[,;\-\u2013\u2014\s](?:(?<=[,;\-\u2013\u2014])\s*" + _SUBJECT_WORD
    + r"|(?<=\s)(?:and|but|so|yet|plus)\s+" + _SUBJECT_WORD + ")"
)
_SUBORDINATE_START = re.compile(
    r"(?:[A-Z][a-z]+,\s*)?(?:since|when|whenever|if|because|although|though|while|as|after|"
    r"before|until|once|by|whether|even if|even though|speaking of|as for|besides)\b", re.I
)
# Words: the clause with punctuation blanked, split on spaces (apostrophes and hyphens stay).
_PUNCT = str.maketrans({c: " " for c in ",.;:!?\"()[]{}<>/\\|*=#~^&+\u2013\u2014"})
# the same table for ASCII text as bytes (bytes.translate is much faster than str.translate)
_ASCII_PUNCT = bytes(k for k in _PUNCT if k < 128)
_PUNCT_ASCII = bytes.maketrans(_ASCII_PUNCT, b" " * len(_ASCII_PUNCT))


def _words(clause: str) -> list[str]:
    clause = clause.replace(" - ", " ")
    if clause.isascii():
        return clause.encode().translate(_PUNCT_ASCII).decode().split()
    return clause.translate(_PUNCT).split()


# -- clean-up of a clause --------------------------------------------------------------------

_INTERJECTION = (
    r"(?:hey|hi|hello|hiya|yo|yeah|yea|yep|yup|wow|woah|whoa|oh|ooh|ah|aw+|um+|uh|hmm+|well|"
    r"so|lol|haha+|omg|oops|congrats|congratulations|thanks|thank you|thx|absolutely|"
    r"definitely|totally|indeed|certainly|of course|alright|anyway|btw|by the way|actually|"
    r"honestly|plus)"
)
# words that also start statements ("No one came", "Great minds ...") are removed only
# before punctuation ("No, ...", "Great! ...")
_EXCLAIM = (
    r"(?:yes|no|nope|ok|okay|sure|cool|great|nice|awesome|amazing|true|right|good|sweet|"
    r"perfect|exactly|agreed)"
)
_LEAD = re.compile(
    r"^(?:" + _INTERJECTION + r"\b[\s,!.]*|" + _EXCLAIM + r"[,!.]+\s*|"
    r"(?:and|but|so|yet|plus|also|then)\s+)+", re.I
)
_THANKS = re.compile(
    r"(?:thanks|thank you|thx|congrats|congratulations|kudos|cheers)\b[\s,!.]*"
    r"(?:[A-Z][a-z]+[\s,!.]*)?(?:for|on|to)\b", re.I
)
_LEAD_NAME = re.compile(r"^[A-Z][a-z]+[,!.]+\s*")
_QUESTION_START = re.compile(
    r"^(?:what|who|whom|whose|when|where|why|how|which|did|does|do|is|are|was|were|can|could|"
    r"would|should|will|shall|am|isn't|aren't|don't|didn't|won't|wanna|anything|any)\b"
)
_CLOSING = re.compile(
    r"^(?:(?:it's |it is |so )?(?:good|great|nice|lovely) to (?:see|hear|meet|talk|chat|catch)|"
    r"(?:talk|speak|see|catch|chat)(?: to| with)? (?:you|ya|u)\b|take care|bye|good ?night|"
    r"good luck|have (?:a )?(?:great|good|nice|fun)|have fun|let me know|keep (?:it|up)|"
    r"(?:it's |it was )?(?:good|great|nice) (?:to|talking)|long time no|how's it going|"
    r"what's up|thank you|thanks for|appreciate|let's|let us|for|of)\b"
)

# -- scoring ---------------------------------------------------------------------------------

# Features are looked up word by word in sets (much faster than alternation regexes).
_NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
    "hundred thousand million dozen first second third half".split()
)
_TIME_WORDS = frozenset(
    "yesterday today tonight tomorrow recently lately ago anniversary birthday weekend "
    "christmas thanksgiving halloween easter summer winter spring autumn january february "
    "march april june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday".split()
)
_TIME_PREFIX = frozenset("last next this that since".split())
_TIME_UNITS = frozenset(
    "night week weekend month year time morning evening monday tuesday wednesday thursday "
    "friday saturday sunday summer winter spring fall".split()
)


def _forms(spec: str) -> frozenset[str]:
    """``"visit:ed,ing adopt:ed"`` -> the words ``visit visited visiting adopt adopted``."""
    out: set[str] = set()
    for entry in spec.split():
        stem, _, ends = entry.partition(":")
        out.add(stem)
        out.update(stem + e for e in ends.split(",") if e)
    return frozenset(out)


_EVENT_WORDS = _forms(
    "went gone visit:ed,ing,s bought buy:ing adopt:ed,ing,ion start:ed,ing,s began begun "
    "join:ed,ing,s moved moving married marry wedding got made took taken finish:ed,ing "
    "graduated graduating graduation painted painting ran running attend:ed,ing celebrate:d "
    "celebrating receive:d received receiving won lost learn:ed,ing,t wrote writing reading "
    "play:ed,ing,s travel:ed,led,ing,ling trip met meeting saw watch:ed,ing cook:ed,ing baked "
    "baking hiked hiking camped camping volunteer:ed,ing studied studying born sold signed "
    "applied hired quit retired fell broke injured injury love:s,d loving liked likes "
    "enjoy:ed,s,ing prefer:s,red hate:s,d favorite favourite plan:s,ned,ning decided deciding "
    "dream goal keen interested allergic own:ed,s named called gave given created built "
    "passed researching pursue:d pursuing taught teaching raised donated bake"
)
_EVENT_PAIRS = frozenset(
    "going to|works as|worked as|work as|works at|worked at|live in|lives in|lived in|"
    "living in|signed up|working on|working at".split("|")
)
_FIRST_PERSON_WORDS = frozenset("i i'm i've i'd i'll my me".split())
_ANAPHORIC_WORDS = frozenset(
    "it it's its that that's this these those there there's which they".split()
)


def _starting_with(first: str, pattern: re.Pattern[str]) -> re.Pattern[str]:
    """A regex whose :meth:`~re.Pattern.search` finds a match exactly where ``pattern``'s does,
    for a ``pattern`` whose every match starts with one of the characters ``first``.

    It opens with that character set, so that the regex engine skips to a candidate in C
    (a regex opening with ``\\b`` or a lookaround is tried at every position). Only for
    yes/no searches: its match is the first character alone.
    """
    return re.compile(f"[{first}](?<=(?={pattern.pattern}).)", pattern.flags)


_REACTION = _starting_with("slrvphgcwkymti", re.compile(
    r"\b(?:sounds? (?:great|good|fun|awesome|amazing|lovely|wonderful|cool|like (?:a|an|so|you))|"
    r"looks? (?:great|amazing|awesome|lovely|so|really)|(?:so|really|very) (?:cool|sweet|kind|"
    r"proud of you|happy for you|glad)|proud of you|happy for you|glad (?:to hear|you|that)|"
    r"good for you|can't wait|wish(?:ing)? you|keep (?:it up|up the)|you got this|"
    r"you're (?:so|doing|"
    r"such|an?|the) |you (?:look|both look|all look)|your (?:kind words|words|support)|"
    r"mean(?:s)? (?:a lot|so much)|that's (?:great|awesome|amazing|cool|so|really|wonderful|"
    r"fantastic|lovely|sweet|true|right|nice|gorgeous|beautiful)|what an? |love (?:that|it|this|"
    r"the)\b|i (?:totally |100% )?agree)"
))
_BOILERPLATE = _starting_with("hlfigaydkrmcs", re.compile(
    r"\b(?:happy to help|hope (?:this|that|it) helps|let me know|feel free|"
    r"here (?:are|is|'s) (?:a|an|"
    r"some|the|my)|i'd be (?:happy|glad)|great question|i can help|i'm here to|as an ai|"
    r"i'm (?:happy|glad) to|you're welcome|don't hesitate|keep in mind|remember to|make sure|"
    r"it's (?:important|essential|crucial|worth) to|consider|for example|such as)\b"
))
_STOP = frozenset(
    "a an the and or but so yet if then than that this these those there here it its it's is am "
    "are was were be been being do does did done have has had having i i'm i've i'd i'll me my "
    "mine myself you you're you've you'll you'd your yours yourself we we're we've our us they "
    "they're their them he she his her him to of in on at by for with about as from into over "
    "up down out off just really so very too also still even only much many more most some any "
    "all not no yes can could would should will shall may might must like get got what who how "
    "when where why which thing things stuff lot lots kind kinda gonna wanna gotta oh wow "
    "yeah".split()
)

# -- rewriting -------------------------------------------------------------------------------

_ADVERB = (
    r"really|also|just|still|actually|always|never|usually|totally|definitely|recently|finally|"
    r"often|sometimes|now|even|only|mostly|generally|personally|already|truly|absolutely|"
    r"honestly|sometimes|currently|seriously|genuinely|especially|normally|typically"
)
# (the look-ahead after \b: every match opens with one of these letters, so other words fail
# at once instead of trying each alternative)
_PRONOUN = re.compile(
    r"\b(?=[IiYyMm])(?:(?P<other>I'm|I am|I've|I have|I'd|I'll|I will|I was|i'm|i've|i'd|i'll|"
    r"[Yy]ou're|[Yy]ou are|[Yy]ou've|[Yy]ou have|[Yy]ou'll|[Yy]ou will|[Yy]ou'd|[Yy]ou were|"
    r"[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Yy]our|[Yy]ours|[Yy]ourself|[Yy]ourselves)\b(?![-'])"
    r"|(?P<subj>I|i|you|You)(?![.'\w]|,? [A-Z][a-z])(?P<rest>(?:\s+(?:" + _ADVERB + r"))?\s+"
    r"(?P<verb>(?!(?:me|my|mine|myself|you|your|yours|yourself)\b)[a-z]+(?:n't)?)\b)?)"
)
_OTHER_FORMS = {
    "i'm": "{s} is", "i am": "{s} is", "i've": "{s} has", "i have": "{s} has",
    "i'd": "{s} would", "i'll": "{s} will", "i will": "{s} will", "i was": "{s} was",
    "you're": "{a} is", "you are": "{a} is", "you've": "{a} has", "you have": "{a} has",
    "you'll": "{a} will", "you will": "{a} will", "you'd": "{a} would", "you were": "{a} was",
    "me": "{s}", "my": "{s}'s", "mine": "{s}'s", "myself": "themself",
    "your": "{a}'s", "yours": "{a}'s", "yourself": "themself", "yourselves": "themselves",
}
_IRREGULAR = {"am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "go": "goes",
              "don't": "doesn't", "haven't": "hasn't", "aren't": "isn't", "weren't": "wasn't"}
_BASE_VERBS = frozenset(
    "love like enjoy want need hope plan think feel know believe prefer hate miss wish work live "
    "play paint run write cook bake swim hike travel study teach learn keep try stay spend "
    "find make take get give see watch listen help use care remember forget mean agree tend "
    "practice volunteer own collect visit go come say tell ask look seem appreciate adore "
    "admire value cherish struggle worry wonder dream aim intend expect guess suppose "
    "understand usually enjoy draw sing dance garden write design build code teach lead "
    "attend join host organize support raise train coach mentor believe follow".split()
)
_PAST_LEAD = re.compile(
    r"^(?:(?:just|finally|recently|also|actually|already|really)\s+)?(?:went|got|made|took|had|did|saw|"
    r"met|ran|bought|found|started|finished|visited|joined|adopted|signed|tried|decided|learned|"
    r"painted|attended|spent|moved|received|won|lost|gave|came|left|wrote|read|baked|cooked|"
    r"hiked|watched|played|picked|booked|tried|ordered|built|created|launched|completed)\b"
)
_ING_LEAD = re.compile(
    r"^(?:(?:just|still|also|really|currently)\s+)?(?:gonna|going to|planning|hoping|trying|"
    r"thinking|looking|working|heading|getting|researching|learning|starting|considering|"
    r"volunteering|training|preparing|saving|feeling|loving|enjoying)\b"
)
# "Taking care of ourselves is vital": a gerund subject, not a dropped "I'm"
_HEAD_END = re.compile(r"[,;\u2013\u2014]| - ")
_FINITE = re.compile(r"\b(?:is|are|was|were|makes|helps|means|gives|brings|has been|can|will)\b")
_LOWER_AFTER_ANCHOR = frozenset(
    "the a an it it's its this that these those there there's we we're our they they're their "
    "he she his her some all both each every everyone everybody everything someone somebody "
    "something nothing nobody one many most now here here's since when while after before "
    "because although though once by until if as being having last next".split()
)


class Candidate(NamedTuple):
    """One clause of a turn: where it is, what it says, and its score."""

    position: int  # order in the turn (0-based)
    text: str  # the cleaned clause, as spoken
    score: float


def _clean(text: str) -> list[str]:
    """Lines of plain text: code, Markdown, tables and BEAM markers removed."""
    if not text.isascii():  # the table maps non-ASCII characters only
        for old, new in _QUOTE_PAIRS:  # one str.replace each: much faster than str.translate
            if old in text:
                text = text.replace(old, new)
    if "->->" in text:
        text = _BEAM_MARKER.sub(" ", text)
    if "```" in text:
        text = _FENCE.sub("\n", text)
    if "\n" in text or text[:1] in "#>-*+\u20220123456789":
        text = _MD_LINE_PREFIX.sub("", text)
    if "](" in text:
        text = _MD_LINK.sub(r"\1", text)
    if "http" in text:
        text = _URL.sub("", text)
    # emphasis and inline code: plain replacements (a regex here costs a quarter of the parse)
    for mark in ("**", "*", "`", "~~"):
        if mark in text:
            text = text.replace(mark, "")
    out = []
    for line in text.split("\n"):
        s = " ".join(line.split())
        if s and not s.startswith("|"):
            out.append(s)
    return out


def _sentences(line: str) -> Iterator[str]:
    parts = _SENT_END.split(line)
    buf = ""
    for p in parts:
        buf = f"{buf} {p}" if buf else p
        # an abbreviation (at most 6 characters before the dot) needs a word boundary just
        # before it: where the 6 characters before the last two are all letters or digits,
        # there is none (most sentences end in a long word)
        if (buf.endswith(".") and not (len(buf) >= 8 and buf[-8:-2].isalnum())
                and _ABBREV.search(buf, max(0, len(buf) - 8))):
            continue
        yield buf
        buf = ""
    if buf:
        yield buf


def _clauses(sentence: str) -> list[str]:
    if not _SEPARATOR.search(sentence):
        return [sentence]
    if ";" not in sentence and not _CLAUSE_SPLIT_NEEDS.search(sentence):
        return [sentence]  # what the split would give
    pieces = _CLAUSE_SPLIT.split(sentence)
    if len(pieces) == 1:
        return pieces
    # Join a piece back to the one before when that one is no clause of its own: too short
    # ("My kids and I ...", "Last Friday, I ...") or a subordinate clause ("since we met, I ...").
    out: list[str] = []
    pos = out_start = 0
    for p in pieces:
        start = sentence.find(p, pos)
        if out and (len(out[-1].split()) < 3 or _SUBORDINATE_START.match(_lead_cut(out[-1]))):
            out[-1] = sentence[out_start:start + len(p)]
        else:
            out.append(p)
            out_start = start
        pos = start + len(p)
    return out


def _units(sentence: str, names: tuple[str, ...]) -> Iterator[tuple[str, str, list[str]]]:
    """A sentence's candidate texts, coarse to fine, in the order spoken: the whole sentence
    when it holds several clauses, then each clause followed by its sub-clause facts
    (:func:`_refine`). Each is tidied (:func:`_tidy`); those left empty are no candidates.
    Each comes with its lower case and its words (:func:`_words`), which a clause shares
    with :func:`_refine`."""
    raws = _clauses(sentence)
    if len(raws) > 1:
        c = _tidy(sentence, names)
        if c:
            low = c.lower()
            yield c, low, _words(low)
    for raw in raws:
        c = _tidy(raw, names)
        if c:
            low = c.lower()
            words = _words(low)
            yield c, low, words
            for part in _refine(c, names, words=words):
                p = _tidy(part, names)
                if p:
                    low = p.lower()
                    yield p, low, _words(low)

def _tidy(clause: str, names: tuple[str, ...]) -> str:
    """Remove leading interjections, vocatives and conjunctions; strip end punctuation.

    Thanks and congratulations with their object ("Congrats on wrapping up ...") are no
    fact: they give ``""``.
    """
    c = clause.strip().strip("\"'")
    if _THANKS.match(c):
        return ""
    for _ in range(3):
        before = c
        c = _lead_cut(c)
        m = _LEAD_NAME.match(c)
        if m:
            word = m.group(0).rstrip(",!. ")
            if word in names or _is_nickname(word, names):
                c = c[m.end():]
        if c == before:
            break
    cut = c.rfind(", ")
    if cut >= 0:  # a vocative at the end: "..., Mel!"
        tail = c[cut + 2:].rstrip(".! ")
        if tail.isalpha() and tail[:1].isupper() and (tail in names or _is_nickname(tail, names)):
            c = c[:cut]
    return c.strip().rstrip(".!,;:- ").strip()


def _lead_cut(c: str) -> str:
    """``c`` without its leading interjections (``_LEAD.sub("", c)``; a match, not a sub: a
    sub would try the anchored regex at every position)."""
    m = _LEAD.match(c)
    return c[m.end():] if m else c


def _is_nickname(word: str, names: tuple[str, ...]) -> bool:
    return len(word) >= 3 and any(n.startswith(word) for n in names)


_PAIR_FIRST = frozenset(p.split()[0] for p in _EVENT_PAIRS)
_TIME_PAIRS = frozenset(f"{p} {u}" for p in _TIME_PREFIX for u in _TIME_UNITS)
_PAIR_OR_TIME_FIRST = _PAIR_FIRST | _TIME_PREFIX
_CAPS = re.compile(r"[A-Z](?<=\s[A-Z])[A-Za-z0-9]")  # after a space; a set first (see _SEPARATOR)
_HAS_DIGIT = re.compile(r"\d")
_DIGIT_WORD = re.compile(r"(?<![\w'])\d")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_MAY_DAY = re.compile(r"\bmay \d")


def score_clause(clause: str) -> float:
    """The information score of one cleaned clause (the formula in the module docstring)."""
    return _score(clause, _words(clause.lower()))


def _score(clause: str, words: list[str]) -> float:
    return round(_base_score(clause, words) - _penalties(clause), 6)


def _base_score(clause: str, low: list[str]) -> float:
    """The score without the phrase penalties (an upper bound of the score).

    ``low`` holds the clause's words in lower case (:func:`_words`).
    """
    # Set operations keep the per-word work in C: numbers and events count distinct words.
    n = len(low)
    toks = set(low)
    content = n - sum(map(_STOP.__contains__, low))
    caps = len(_CAPS.findall(clause))
    numbers = len(toks & _NUMBER_WORDS)
    if _HAS_DIGIT.search(clause):
        numbers += len(_DIGIT_WORD.findall(clause))
    events = len(toks & _EVENT_WORDS)
    time = not toks.isdisjoint(_TIME_WORDS)
    if not toks.isdisjoint(_PAIR_OR_TIME_FIRST):  # (few clauses hold one: one test for most)
        pair_events = not toks.isdisjoint(_PAIR_FIRST)
        pair_time = (not time and not toks.isdisjoint(_TIME_PREFIX)
                     and not toks.isdisjoint(_TIME_UNITS))
        if pair_events or pair_time:
            pairs = set(map(" ".join, zip(low, low[1:], strict=False)))
            events += len(pairs & _EVENT_PAIRS)
            time = time or not pairs.isdisjoint(_TIME_PAIRS)
    if not time and numbers:
        time = _YEAR.search(clause) is not None or (
            "may" in toks and _MAY_DAY.search(clause.lower()) is not None
        )
    s = 1.0 * min(caps, 3) + 1.0 * min(numbers, 2) + 0.75 * min(events, 2)
    s += 0.15 * min(content, 12)
    if time:
        s += 1.0
    if not toks.isdisjoint(_FIRST_PERSON_WORDS):
        s += 0.5
    if n and low[0] in _ANAPHORIC_WORDS:
        s -= 0.75
    if n > LONG_CLAUSE:
        s -= 0.5
    return s


def _penalties(clause: str) -> float:
    low = clause.lower()
    p = 0.0
    if _REACTION.search(low):
        p += 1.5
    if _BOILERPLATE.search(low):
        p += 2.0
    return p


def candidates(text: str, names: tuple[str, ...] = ()) -> list[Candidate]:
    """Every clause of a turn that passes the filters, with its score (before selection).

    ``names`` are the speakers' names (so ``"Thanks, Mel!"`` is recognised as a vocative).
    """
    return [Candidate(i, c, _score(c, w)) for i, c, w in _clause_iter(text, names)]


def _select(text: str, names: tuple[str, ...], max_facts: int) -> list[tuple[int, str]]:
    """The ``max_facts`` best clauses scoring at least :data:`MIN_SCORE` (ties: earlier first),
    as ``(index, clause)`` in the order spoken.

    The same choice as sorting :func:`candidates` by ``(-score, index)``, but the phrase
    penalties (the costly part of a score) are computed only for clauses whose upper bound
    (the score without penalties) still competes: a heap holds upper bounds and exact scores,
    and an exact score at the top is final.
    """
    return _choose(_bounds(text, names), max_facts)


_Bound = tuple[float, int, bool, str, float]  # (-bound or -score, index, exact, clause, base)


def _bounds(text: str, names: tuple[str, ...]) -> tuple[_Bound, ...]:
    """The clauses of a turn whose upper bound reaches :data:`MIN_SCORE`, as a heap."""
    heap: list[_Bound] = []
    for i, c, w in _clause_iter(text, names):
        base = _base_score(c, w)
        bound = round(base, 6)
        if bound >= MIN_SCORE:
            heap.append((-bound, i, False, c, base))
    heapq.heapify(heap)
    return tuple(heap)


def _choose(bounds: tuple[_Bound, ...], max_facts: int) -> list[tuple[int, str]]:
    heap = list(bounds)  # a heap already
    chosen: list[tuple[int, str]] = []
    while heap and len(chosen) < max_facts:
        neg, i, exact, c, base = heapq.heappop(heap)
        if -neg < MIN_SCORE:
            break
        if exact:
            chosen.append((i, c))
        else:
            heapq.heappush(heap, (-round(base - _penalties(c), 6), i, True, c, base))
    chosen.sort()
    return chosen


#: Turns whose candidate clauses are remembered (LongMemEval-S repeats a fifth of its turns'
#: texts across haystacks; a pipeline builds one dataset at several ``max_facts``). Keyed by
#: a 16-byte digest of the text and the names, so the cache holds no turn texts; an entry
#: of a long LongMemEval-S turn is about 2 KB, so the bound keeps a worker's cache near 35 MB.
_TURN_CACHE = 16384
_TURNS: OrderedDict[bytes, tuple[_Bound, ...]] = OrderedDict()
_TURNS_LOCK = threading.Lock()


def _turn_key(text: str, names: tuple[str, ...]) -> bytes:
    """A turn's key: a 16-byte digest of its text and the names it is parsed with (each
    part preceded by its length, so no two different turns give the same input)."""
    h = hashlib.blake2b(digest_size=16)
    for part in (text, *names):
        b = part.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.digest()


def _select_turn(text: str, names: tuple[str, ...], max_facts: int,
                 key: bytes | None = None) -> list[tuple[int, str]]:
    """:func:`_select`, the candidates remembered for the last :data:`_TURN_CACHE` turns
    (``key``: the turn's :func:`_turn_key`, when the caller has it)."""
    if key is None:
        key = _turn_key(text, names)
    with _TURNS_LOCK:
        bounds = _TURNS.get(key)
        if bounds is not None:
            _TURNS.move_to_end(key)
    if bounds is None:
        bounds = _bounds(text, names)
        with _TURNS_LOCK:
            _TURNS[key] = bounds
            if len(_TURNS) > _TURN_CACHE:
                _TURNS.popitem(last=False)
    return _choose(bounds, max_facts)


def _clause_iter(text: str, names: tuple[str, ...]) -> Iterator[tuple[int, str, list[str]]]:
    seen: set[str] = set()
    index = 0
    for line in _clean(text):
        for sent in _sentences(line):
            if sent.rstrip("\"') ").endswith("?"):
                continue
            for c, low, words in _units(sent, names):
                if low in seen:
                    continue
                if len(words) < 3 and not any(ch.isdigit() for ch in c):
                    continue
                if _QUESTION_START.match(low) or _CLOSING.match(low):
                    continue
                seen.add(low)
                yield index, c, words
                index += 1


def _inflect(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb not in _BASE_VERBS:
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


# -- finer candidates: sub-clause facts ------------------------------------------------------
#
# A clause may hold several facts: coordinated verb phrases ("I went to the beach and took
# photos"), a subordinate clause ("..., since I moved from my home country"), a relative
# clause on a name ("my friend Sam, who lives in Boston, ..."), a list ("I love painting,
# pottery and hiking") or a named relative ("my sister Anna"). Each is also offered as a
# candidate of its own, written as spoken (the subject copied where the part has none), so
# that the same rewriting and scoring apply. The clause stays a candidate too: a turn holds
# facts at several granularities (sentence, clause, sub-clause) and the cap chooses among them.

_SUBJECT_WORDS = {
    "i": "I", "i'm": "I", "i've": "I", "i'd": "I", "i'll": "I",
    "we": "we", "we're": "we", "we've": "we", "we'd": "we", "we'll": "we",
    "you": "you", "you're": "you", "you've": "you", "you'd": "you", "you'll": "you",
    "he": "he", "he's": "he", "she": "she", "she's": "she",
    "they": "they", "they're": "they", "they've": "they",
}
_POSSESSIVE_SUBJECT = frozenset("my our his her their".split())
# The first word of a verb phrase (after an optional adverb): finite verbs and auxiliaries.
_VERB_WORDS = (
    _BASE_VERBS
    | frozenset(_inflect(v) for v in _BASE_VERBS)
    | frozenset(
        "went got made took had did saw met ran bought found felt thought brought kept left came "
        "gave sold told said spent built taught wrote read won lost began became caught fell grew "
        "knew heard held paid put sat stood slept drove flew ate drank swam sang chose "
        "have has will would can could am was is are been decided started finished visited "
        "joined adopted signed tried learned painted attended moved received baked cooked hiked "
        "watched played picked booked ordered created launched completed loved liked enjoyed "
        "hated wanted needed hoped planned realized noticed helped volunteered studied traveled "
        "travelled celebrated graduated married raised donated shared posted organized hosted "
        "managed worked lived stayed returned explored discovered applied "
        "love likes loves enjoys wants needs".split()
    )
)
_VP_ADVERB = frozenset("also then just really even finally now still actually already".split())
# words that open an embedded clause or name another subject: after one of them, whose verb
# a coordinated phrase continues is unclear ("I'm excited to hear how you reach out and help")
_VP_EMBEDDED = frozenset(
    "how that what when if who which where because i you he she they we it it's they're "
    "you're your his their".split()
)
_VP_SPLIT = re.compile(r"(?:,\s*|\s+)(?:and then|and|but|then|plus)\s+(?=[a-z])")
_SUB_SPLIT = re.compile(
    r"[,\s]\s*(?:even though|even if|even when|because|since|when|whenever|while|"
    r"after|before|until|although|though|"
    r"once|cause|as soon as|so that)\s+"
    r"(?=(?:I|I'm|I've|I'd|I'll|we|we're|we've|you|you're|he|he's|she|she's|they|they're)\b"
    r"|[A-Z][a-z]+\s)"  # a subject pronoun or a name: "after my goals" is no clause
)
_REL_SPLIT = re.compile(r"(?<=[A-Za-z0-9]),\s+(?:who|which)\s+(?=[a-z])")
_SUBJECT_START = re.compile(_SUBJECT)
_LIST_TAIL = re.compile(r"^((?:[^,]+,\s+)*)([^,]+?),?\s+(?:and|or)\s+([^,]+)$")
_NAMED_RELATIVE = re.compile(
    r"\b[Mm]y (sister|brother|mom|mother|dad|father|husband|wife|partner|son|daughter|friend|"
    r"best friend|cousin|aunt|uncle|grandma|grandmother|grandpa|grandfather|boyfriend|"
    r"girlfriend|niece|nephew|boss|coworker|colleague|neighbor|neighbour|dog|cat|puppy|kitten)"
    r",? ([A-Z][a-z]+)\b"
)
_LIST_GOVERNOR = frozenset(
    "about with of for by in like including on to from at into through over than as me us "
    "him her them is are was were be been 's".split()
)
_LIST_NO_WORD = frozenset(  # an item holding one of these is a clause, not a noun phrase
    "it this that is are was were am be been have has had do does did will would can could "
    "should let all then up alone".split()
)
_LIST_NON_ITEM = _LIST_GOVERNOR | frozenset(
    "always just both off also very really so even too not never still more less".split()
)
_MAX_DEPTH = 3


def _part(text: str) -> str:
    return text.strip().rstrip(".!,;:- ").strip()


def _clause_subject(clause: str, names: tuple[str, ...]) -> str | None:
    """The subject a clause opens with (``I``, ``we``, ``my kids``, a speaker's name), if any."""
    words = clause.split(maxsplit=2)
    if not words:
        return None
    w0 = words[0]
    low = w0.lower()
    if low in _SUBJECT_WORDS:
        return _SUBJECT_WORDS[low]
    if low in _POSSESSIVE_SUBJECT and len(words) > 2 and words[1].isalpha():
        return f"{w0} {words[1]}"
    if w0 in names:
        return w0
    return None


def _split_relative(c: str, names: tuple[str, ...]) -> list[str]:
    """``"my friend Sam, who lives in Boston, came over"`` -> the main clause without the
    relative (``"my friend Sam came over"``) and, after a name, ``"Sam lives in Boston"``."""
    if "wh" not in c:  # the pattern needs "who" or "which": most clauses have neither
        return []
    m = _REL_SPLIT.search(c)
    if not m:
        return []
    cut = c.find(", ", m.end())
    rel = c[m.end():] if cut < 0 else c[m.end():cut]
    main = c[:m.start()] + ("" if cut < 0 else " " + c[cut + 2:])
    out = [_part(main)]
    before = c[:m.start()].split()
    if len(before) > 1 and before[-1][:1].isupper() and before[-1].isalpha():
        out.append(f"{before[-1]} {_part(rel)}")
    return out


def _split_subordinate(c: str, names: tuple[str, ...]) -> list[str]:
    """``"I've known them for 4 years, since I moved from ..."`` -> both clauses."""
    m = _SUB_SPLIT.search(c)
    if not m or m.start() == 0:
        return []
    return [_part(c[:m.start()]), _part(c[m.end():])]


def _split_verb_phrases(c: str, names: tuple[str, ...]) -> list[str]:
    """``"I went to the beach and took photos"`` -> ``"I went to the beach"``,
    ``"I took photos"``: coordinated verb phrases, the subject copied."""
    subject = _clause_subject(c, names)
    if subject is None:
        return []
    for m in _VP_SPLIT.finditer(c):
        rest = c[m.end():]
        words = rest.split(maxsplit=2)
        if words[0] in _VP_ADVERB:
            words = words[1:]
        left = c[:m.start()].split()
        # a verb with something after it ("... friends and mentors" is no verb phrase), not
        # an infinitive's second verb ("to design and build ...")
        if (len(words) > 1 and words[0].rstrip(",") in _VERB_WORDS and len(left) >= 3
                and "to" not in left[-3:] and _VP_EMBEDDED.isdisjoint(w.lower() for w in left[1:])):
            return [_part(c[:m.start()]), _part(f"{subject} {rest}")]
    return []


def _split_list(c: str, names: tuple[str, ...]) -> list[str]:
    """``"I love painting, pottery and hiking"`` -> one clause per item.

    The items are short noun phrases (at most three plain words; none opens with a subject,
    finite verb, gerund, adverb or preposition, none holds an auxiliary or ``it``/``that``,
    none is a speaker's name); the first item starts after the last preposition, verb
    or object pronoun before the first comma (``"watch | music videos, concerts and ..."``).
    """
    first_comma = c.find(", ")
    if first_comma < 0:
        return []
    head_part, rest = c[:first_comma], c[first_comma + 2:]
    m = _LIST_TAIL.match(rest)
    if not m:
        return []
    items = [x.strip() for x in m.group(1).split(",") if x.strip()] + [m.group(2), m.group(3)]
    if not _LIST_GOVERNOR.isdisjoint(" ".join(items[:-1]).lower().split()):
        return []  # "..., perfect for us and the pups": a phrase, not a list item
    for x in items:
        ws = x.split()
        w = ws[0].lower()
        if (len(ws) > 3 or _SUBJECT_START.match(x) or (w in _VERB_WORDS and w not in _BASE_VERBS)
                or w in _LIST_NON_ITEM or w.endswith(("ing", "ly")) or x in names
                or not all(v.isalpha() and v.lower() not in _LIST_NO_WORD
                           and not v.endswith("ing") for v in ws)):
            return []
    words = head_part.split()
    if "to" in (w.lower() for w in words[-4:]):  # "to take a break, breathe, and ...": verbs
        return []
    gov = max((i for i, w in enumerate(words) if w.lower() in _LIST_GOVERNOR
               or w.lower() in _VERB_WORDS), default=-1)
    first = words[gov + 1:]
    if gov < 1 or not 1 <= len(first) <= 3 or any(not w.isalpha() for w in first):
        return []
    head = " ".join(words[:gov + 1])
    return [_part(f"{head} {x}") for x in (" ".join(first), *items)]


# Each splitter with the words one of which its pattern needs (a word between spaces or a
# comma and a space, so one of the clause's words in lower case): a clause holding none of
# them is not tried (most hold none). Subordinate: "as soon as" needs "soon", "so that" "so".
_SPLITTERS = (
    (_split_relative, frozenset(("who", "which"))),
    (_split_subordinate, frozenset((
        "even", "because", "since", "when", "whenever", "while", "after", "before", "until",
        "although", "though", "once", "cause", "soon", "so"))),
    (_split_verb_phrases, frozenset(("and", "but", "then", "plus"))),
    (_split_list, frozenset(("and", "or"))),
)


def _refine(c: str, names: tuple[str, ...], depth: int = 0, *,
            words: list[str] | None = None) -> list[str]:
    """The sub-clause facts of a clause, coarse to fine, in the order spoken (see above).

    ``words``: the clause's words (:func:`_words`), when the caller has them."""
    out: list[str] = []
    toks = set(_words(c.lower()) if words is None else words)
    for split, needs in _SPLITTERS:
        if toks.isdisjoint(needs):
            continue
        parts = split(c, names)
        if parts:  # (most clauses have none: filter only what there is)
            parts = [p for p in parts if p and p != c]
        if parts:
            for p in parts:
                out.append(p)
                if depth + 1 < _MAX_DEPTH:
                    out.extend(_refine(p, names, depth + 1))
            break
    if depth == 0 and ("my " in c or "My " in c):  # the pattern needs one of them
        for m in _NAMED_RELATIVE.finditer(c):
            out.append(f"my {m.group(1)} is named {m.group(2)}")
    return out


_SUBORDINATOR_BEFORE = re.compile(
    r"(?:^|\b(?:that|when|if|because|since|as|while|so|but|although|though|until|before|after|"
    r"where|now|cause|'cause)\s+)$",
    re.I,
)


def resolve_person(clause: str, speaker: str, addressee: str | None) -> str:
    """First person -> ``speaker``, second person -> ``addressee`` (left as is when unknown)."""

    def sub(m: re.Match[str]) -> str:
        other = m.group("other")
        if other is not None:
            key = _SPACES.sub(" ", other.lower())
            form = _OTHER_FORMS[key]
            if "{a}" in form and addressee is None:
                return other
            return form.format(s=speaker, a=addressee)
        subj = m.group("subj")
        first = subj in ("I", "i")
        name = speaker if first else addressee
        if name is None:
            return m.group(0)
        rest = m.group("rest") or ""
        verb = m.group("verb")
        if verb and (first or _SUBORDINATOR_BEFORE.search(m.string, 0, m.start())):
            # "I" is always a subject, "you" where a clause starts: make the verb agree
            rest = rest[: len(rest) - len(verb)] + _inflect(verb)
        return name + rest

    return _PRONOUN.sub(sub, clause)


def _restore_subject(clause: str, speaker: str) -> str:
    low = clause.lower()
    head = _HEAD_END.split(low, maxsplit=1)[0]  # up to the first comma or dash
    if _ING_LEAD.match(low) and not _FINITE.search(head):
        return f"{speaker} is {clause[0].lower()}{clause[1:]}"
    if _PAST_LEAD.match(low):
        return f"{speaker} {clause[0].lower()}{clause[1:]}"
    if low.startswith("been "):
        return f"{speaker} has {clause}"
    return clause


def _keeps_capital(word: str, names: tuple[str, ...], text: str) -> bool:
    """Whether a clause's first word keeps its capital after the date anchor.

    Only common words lose it (function words, ``-ing`` and ``-ly`` words), unless the turn
    also writes them capitalised mid-sentence (a name such as "Reading" the town); names,
    titles and acronyms keep it.
    """
    core = word.split("'", 1)[0].strip(",.;:!\"")
    if not core[:1].isupper() or core in names or (len(core) > 1 and core.isupper()):
        return True
    low = core.lower()
    if not (low in _STOP or low in _LOWER_AFTER_ANCHOR or low.endswith(("ing", "ly"))):
        return True
    return _midsentence(core, text)


_MIDSENTENCE_BEFORE = frozenset("abcdefghijklmnopqrstuvwxyz,;:")


def _midsentence(word: str, text: str) -> bool:
    """Whether ``text`` writes ``word`` after a lower-case letter or a comma, as the regex
    ``[a-z,;:]\\s+WORD\\b`` finds it.

    The regex would be tried at every lower-case letter of a long turn; instead the engine
    finds ``WORD`` after a space (a literal first: a fast search in C), and the character
    before that run of spaces is checked here. (A word holding a space, which a clause's
    first word never does, could hide one place in another: the regex decides then.)
    """
    if len(word.split()) != 1:
        return re.search(r"[a-z,;:]\s+" + re.escape(word) + r"\b", text) is not None
    for m in _after_space(word).finditer(text):
        i = m.start() - 1  # a space
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if i > 0 and text[i - 1] in _MIDSENTENCE_BEFORE:
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _after_space(word: str) -> re.Pattern[str]:
    """``word`` as a whole word after a space (compiled once per word)."""
    w = re.escape(word)
    return re.compile(w + r"\b(?<=\s" + w + ")")


def rewrite(
    clause: str,
    speaker: str,
    addressee: str | None,
    when: date | None,
    *,
    names: tuple[str, ...] = (),
    text: str = "",
) -> str:
    """A selected clause as a stand-alone fact: persons resolved, anchored in time.

    ``names`` (the speakers) and ``text`` (the whole turn) decide whether the clause's first
    word keeps its capital after the anchor ("On 8 May 2023, last Friday ...").
    """
    fact = _restore_subject(clause, speaker)
    fact = resolve_person(fact, speaker, addressee)
    anchor = anchor_text(when)
    if anchor:
        first = fact.split(" ", 1)[0]
        if not _keeps_capital(first, (speaker, *(n for n in (addressee, *names) if n)), text):
            fact = fact[0].lower() + fact[1:]
        fact = f"On {anchor}, {fact}"
    elif fact[:1].islower():
        fact = fact[0].upper() + fact[1:]
    return fact + "."


def _known(speaker: str, addressee: str | None, names: tuple[str, ...]) -> tuple[str, ...]:
    """The names a turn is parsed with: its speaker, who they talk to, then the others."""
    return tuple(n for n in (speaker, addressee, *names) if n)


def extract_facts(
    text: str,
    speaker: str,
    addressee: str | None = None,
    when: date | None = None,
    max_facts: int = 5,
    *,
    names: tuple[str, ...] = (),
) -> list[str]:
    """At most ``max_facts`` facts from one turn, in the order spoken.

    >>> from datetime import date
    >>> extract_facts("I went to a LGBTQ support group yesterday and it was so powerful.",
    ...               "Caroline", "Melanie", date(2023, 5, 8), 1)
    ['On 8 May 2023, Caroline went to a LGBTQ support group yesterday and it was so powerful.']
    >>> extract_facts("Hey Mel! Good to see you! How have you been?", "Caroline", "Melanie")
    []
    """
    if max_facts < 1:
        raise TiapError(f"max_facts must be at least 1, got {max_facts}")
    known = _known(speaker, addressee, names)
    chosen = [c for _, c in _select_turn(text, known, max_facts)]
    return _facts(chosen, text, speaker, addressee, when, known)


def _facts(chosen: Sequence[str], text: str, speaker: str, addressee: str | None,
           when: date | None, known: tuple[str, ...]) -> list[str]:
    """The selected clauses of a turn rewritten as facts, each once."""
    out: list[str] = []
    for clause in chosen:
        fact = rewrite(clause, speaker, addressee, when, names=known, text=text)
        if fact not in out:
            out.append(fact)
    return out


class HeuristicParser(Parser):
    """Extractive facts, at most ``max_facts`` per turn (see the module docstring)."""

    derived_kinds = (FACT_KIND,)
    parallel = True

    def __init__(self, max_facts: int) -> None:
        self.max_facts = max_facts
        # the clauses chosen for a turn depend only on its text and names (_turn_key): a
        # build in worker processes hands them from worker to worker (Parser.memo_keys)
        self._given: Mapping[Hashable, Any] = {}
        self._done: dict[Hashable, Any] | None = None  # None: not sharing

    def memo_keys(self, bundle: Bundle) -> list[Hashable]:
        """Each turn's :func:`_turn_key`: a digest of its text and the names it is parsed with."""
        names = tuple(bundle.collection.speakers)
        return [_turn_key(ctx.turn.text, _known(ctx.speaker, ctx.addressee, names))
                for ctx in turn_contexts(bundle)]

    def memo(self, given: Mapping[Hashable, Any] | None = None) -> dict[Hashable, Any]:
        """Take the clauses chosen elsewhere for turns of these keys; give back those chosen
        here since the last call."""
        done, self._done = self._done or {}, {}
        self._given = given or {}
        return done

    def derive(self, bundle: Bundle) -> Iterator[Item]:
        names = tuple(bundle.collection.speakers)
        given, done = self._given, self._done
        for ctx in turn_contexts(bundle):
            text = ctx.turn.text
            known = _known(ctx.speaker, ctx.addressee, names)
            key = _turn_key(text, known)
            chosen = given.get(key)
            if chosen is None:  # the clauses, as a tuple (small to hand over)
                chosen = tuple([c for _, c in _select_turn(text, known, self.max_facts, key)])
                if done is not None:
                    done[key] = chosen
            facts = _facts(chosen, text, ctx.speaker, ctx.addressee, ctx.date, known)
            uid = ctx.turn.unit_id
            for j, fact in enumerate(facts, start=1):
                yield Item(f"{uid}#f{j}", FACT_KIND, (uid,), text=fact,
                           collection=ctx.turn.collection_id)


class HeuristicSettings(Settings):
    """The arguments of the ``heuristic`` parser."""

    subject = "parser 'heuristic'"

    max_facts: Annotated[int, ranged("max_facts")] = 5


@register_parser("heuristic", schema=HeuristicSettings)
def heuristic(max_facts: int = 5) -> HeuristicParser:
    """Deterministic extractive facts: at most ``max_facts`` per turn (densities 1, 5, 8)."""
    return HeuristicParser(HeuristicSettings(max_facts=max_facts).max_facts)
