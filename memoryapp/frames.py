"""Two statements that answer the same question with different values, told from their words.

"I prefer coffee" and "I prefer tea now" share a frame, "I prefer _", and differ in one short
span, the value: the later one answers what the earlier one answered, so it is the current
answer. A client that never sends a `key` (mem0's, MCP's remember) still gets its facts
superseded this way. The comparison is of the statements' own words, so it knows no attribute
and no phrasing: what it needs is that both are said the same way, which is how people and
agents restate a fact ("User prefers window seats" / "User prefers aisle seats").

- same_frame(): one differing span of at most MAX_VALUE_WORDS words on each side, at least
  MIN_SHARED_WORDS words in common, words of change ("now", "no longer") left out of both;
  or the same words where the later one says the earlier no longer holds ("I eat meat" /
  "I no longer eat meat").
- says_change(): the statement says something changed. Only then is a write-time supersession
  certain enough to retire the earlier statement (memory_write); without it the later
  statement is ranked first at read time and the earlier one stays current (retrieval.py).
"""
import difflib
import re

_WORD = re.compile(r"[\w']+", re.UNICODE)
# Words with which people say that something changed or stopped. A closed class of English,
# like retrieval.CHANGE_CUES, with "now": in a statement of a fact (not an event) it dates it.
_CHANGE_WORDS = frozenset(
    "now nowadays instead anymore switched switching changed moved relocated updated update actually "
    "longer".split()
)
_CHANGE_PHRASES = re.compile(
    r"\b(no longer|not any ?more|any ?more|these days|nowadays|now|instead|switched|changed|moved|relocated|"
    r"updated?|used to|gave up|stopped|quit)\b",
    re.I,
)
_ENDED = re.compile(r"\b(no longer|not any ?more|any ?more|stopped|quit|gave up|used to)\b", re.I)
_FILLER = frozenset("these days no not don't doesn't do does any more used to".split())
# Words that say nothing of what a statement is about (English function words).
_FUNCTION_WORDS = frozenset(
    "i i'm i've i'd i'll me my mine you your he she it they them their his her its is am are was were be been "
    "being do does did have has had a an the this that these those so very really just too and or but of to in "
    "on at for with by from as not no yes it's that's there here what which who oh ok okay well also "
    # how agents name the person, like "I": "The user works as a pilot" / "The user lives in Oslo"
    "user user's users".split()
)
MAX_VALUE_WORDS = 4
MIN_SHARED_WORDS = 2


# "we" for "I": a person speaks for their household ("we live in Leeds").
_SAME_PERSON = {"we": "i", "our": "my", "us": "me", "ours": "mine", "we're": "i'm", "we've": "i've",
                "we'd": "i'd", "we'll": "i'll"}


def _words(text: str) -> list[str]:
    words = (_SAME_PERSON.get(w, w) for w in _WORD.findall(text.lower().replace("’", "'")))
    return [w for w in words if w not in _CHANGE_WORDS]


def says_change(text: str) -> bool:
    return bool(_CHANGE_PHRASES.search(text or ""))


def same_frame(earlier: str, later: str) -> bool:
    """Whether `later` answers the question `earlier` answers, with another value (or says
    that the earlier value no longer holds)."""
    a, b = _words(earlier), _words(later)
    if not a or not b:
        return False
    if a == b:
        return False  # the same statement again (dedup's business), unless it says it ended
    blocks = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    changed = [op for op in blocks if op[0] != "equal"]
    shared = [w for tag, i1, i2, _, _ in blocks if tag == "equal" for w in a[i1:i2]]
    # The frame must say what is asked about: "I'm so _" shares only function words.
    if len(shared) < MIN_SHARED_WORDS or set(shared) <= _FUNCTION_WORDS:
        return False
    if _ENDED.search(later) and not _ENDED.search(earlier):
        # "I no longer eat meat": the same words, less those that say it ended.
        rest = [op for op in changed if not (op[0] == "insert" and set(b[op[3]:op[4]]) <= _FILLER)]
        if not rest:
            return True
    if len(changed) != 1 or changed[0][0] != "replace":
        return False
    _, i1, i2, j1, j2 = changed[0]
    return i2 - i1 <= MAX_VALUE_WORDS and j2 - j1 <= MAX_VALUE_WORDS


def ended_or_replaced(earlier: str, later: str) -> bool:
    """same_frame, and the later statement says the change in words: certain enough to retire
    the earlier one at write time."""
    return says_change(later) and same_frame(earlier, later)
