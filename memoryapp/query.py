"""Query understanding for retrieval: what a search query tells us beyond its words.

Deliberately small and language-level (English question forms), never tied to a data set:
- the names it mentions (capitalised words that are not sentence-initial question words), so a
  memory of something that person said can be preferred;
- whether it asks *when* something happened, so memories that carry a time reference
  ("last Saturday", "in May", "two years ago") can be preferred;
- the calendar periods it names ("on 7 July, 2023", "November 11, 2023", "in June 2022", "during
  2024"), so memories of events from then can be preferred (query_periods);
- the text to match memories with: the query less the names of the people who speak in the
  subject's events. "What did Caroline research?" asks what Caroline said about research; every
  one of Caroline's messages is filed under her name, so the name is who said it (the speaker
  boost), and as words to match it only favours short messages that greet her
  ("Thanks, Caroline!"). What it adds on LoCoMo is in docs/benchmarks.md.
"""
import calendar
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

# A capitalised word, with its possessive if it has one ("Caroline's", "Caroline’s", "James'").
_CAPITALISED = re.compile(r"\b([A-Z][a-z]+(?:['’]s\b|['’](?!\w)|\b))")
_POSSESSIVE = re.compile(r"['’]s?$")
_WHEN = re.compile(r"^\s*(when|what (date|year|month|day|time)|how long|since when)\b|\bwhen did\b", re.I)
# Capitalised words that start questions or sentences and are not names.
_NOT_NAMES = frozenset(
    "what when where which who whom whose why how did does do is are was were has have had can could would "
    "should will the a an in on at of for to and or but if i my me we our you your he she they it this that "
    "these those there here would yes no not "
    # requests open with a verb, not a name
    "tell remind show give list find describe summarise summarize please remember recall explain".split()
)
# What a query can say besides its content words: left with only these, it asks about the name.
_FILLER = _NOT_NAMES | frozenset("about anything something everything know say said thing things much many".split())


@dataclass(frozen=True)
class QueryInfo:
    names: frozenset = field(default_factory=frozenset)  # lower-cased
    asks_when: bool = False
    keys: tuple = ()  # (key, weight): the attributes it asks about, from its embedding (keyroute.py)
    periods: tuple = ()  # (start, end) UTC datetimes of the calendar periods it names


def query_understand(query: str) -> QueryInfo:
    names = set()
    for word in _CAPITALISED.findall(query or ""):
        word = _POSSESSIVE.sub("", word).lower()
        if word not in _NOT_NAMES:
            names.add(word)
    return QueryInfo(names=frozenset(names), asks_when=bool(_WHEN.search(query or "")),
                     periods=query_periods(query or ""))


_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTH = "|".join(_MONTHS)
_ORDINAL = r"(?:st|nd|rd|th)?"
# Only dates with a year: "on 25 May" could be any year's, and guessing one would favour the
# wrong memories with confidence. ASCII only (re.A): no other script's digits or letters that
# case-fold to ASCII ("ſeptember"), and years 1900-2099 only.
_YEAR_DIGITS = r"((?:19|20)\d{2})"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}}){_ORDINAL} ({_MONTH}),? {_YEAR_DIGITS}\b", re.I | re.A)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH}) (\d{{1,2}}){_ORDINAL},? {_YEAR_DIGITS}\b", re.I | re.A)
_MONTH_YEAR = re.compile(rf"\b({_MONTH}),? {_YEAR_DIGITS}\b(?!\s+(?:[a-z]+s|people)\b)", re.I | re.A)
# A bare year only after a preposition that makes it a period ("in 2024"), and not when it
# counts something ("in 2000 photos").
_YEAR = re.compile(rf"\b(?:in|during) {_YEAR_DIGITS}\b(?!\s+(?:[a-z]+s|people)\b)", re.I | re.A)
# "since June 2022", "before 7 July, 2023": the period is a boundary, not when it happened.
_BOUNDARY = re.compile(r"\b(?:since|before|after|until|till|by)\s+(?:the\s+)?(?:end\s+of\s+)?$", re.I | re.A)
_BOUNDARY_REACH = 30  # characters before a date that can hold its boundary word


def _day(year: str, month: str, day: str) -> tuple | None:
    try:
        start = datetime(int(year), _MONTHS[month.lower()], int(day), tzinfo=timezone.utc)
    except (ValueError, KeyError):  # 31 February
        return None
    return start, start + timedelta(days=1)


def _month(year: str, month: str) -> tuple | None:
    try:
        y, m = int(year), _MONTHS[month.lower()]
    except (ValueError, KeyError):
        return None
    return datetime(y, m, 1, tzinfo=timezone.utc), datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=timezone.utc)


def _year(year: str) -> tuple:
    return datetime(int(year), 1, 1, tzinfo=timezone.utc), datetime(int(year) + 1, 1, 1, tzinfo=timezone.utc)


def query_periods(query: str) -> tuple:
    """The calendar periods `query` names, most precise first: days ("7 July, 2023", "November
    11th, 2023"), then months ("June 2022"), then years ("in 2024"). Each is matched only where
    no more precise one was, so "7 July, 2023" is one day, not also the month; one that bounds
    something ("since June 2022") is no period."""
    periods, rest = [], query
    for pattern, period in (
        (_DAY_MONTH_YEAR, lambda m: _day(m[3], m[2], m[1])),
        (_MONTH_DAY_YEAR, lambda m: _day(m[3], m[1], m[2])),
        (_MONTH_YEAR, lambda m: _month(m[2], m[1])),
        (_YEAR, lambda m: _year(m[1])),
    ):
        for match in pattern.finditer(rest):
            found = period(match)
            before = max(match.start() - _BOUNDARY_REACH, 0)
            if found is not None and not _BOUNDARY.search(rest, before, match.start()):
                periods.append(found)
        rest = pattern.sub(" ", rest)
    return tuple(dict.fromkeys(periods))


def _keep_case(original: str, word: str) -> str:
    return word.capitalize() if original[:1].isupper() else word


# How a question refers to the person the memories are about: "the user" (an agent asking about
# them), "you" (an agent asking them). Their statements say "I" and "my", so the query is
# matched as they would say it; and "user" is no content word to match (every derived
# statement says "The user ...", so it matched them all).
_SUBJECT_REFERENCES = [
    (re.compile(r"\b(?:the\s+)?user['’]s\b", re.I), "my"),
    (re.compile(r"\b(?:the\s+)?users['’](?!\w)", re.I), "my"),
    (re.compile(r"\b(?:the\s+)?user\b", re.I), "I"),
    # Contractions first: "you're" is "I'm", not "I're".
    (re.compile(r"\byou['’]re\b", re.I), "I'm"),
    (re.compile(r"\byou['’](ve|ll|d)\b", re.I), r"I'\1"),
    (re.compile(r"\b(are|were)\s+you\b", re.I), lambda m: _keep_case(m[1], "am" if m[1].lower() == "are" else "was")
     + " I"),
    (re.compile(r"\byourself\b", re.I), "myself"),
    (re.compile(r"\byours\b", re.I), "mine"),
    (re.compile(r"\byour\b", re.I), "my"),
    (re.compile(r"\byou\b", re.I), "I"),
]


def query_in_first_person(query: str) -> str:
    """`query` with its references to the subject ("the user", "user's", "you", "your") put in
    the first person: "Where does the user live?" is matched as "Where does I live?"."""
    for pattern, replacement in _SUBJECT_REFERENCES:
        query = pattern.sub(replacement, query)
    return query


_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([?.!,;:])")
_LEADING_PUNCTUATION = re.compile(r"^[\s,;:.]+")
_WORDS = re.compile(r"[a-z]+")


def query_match_text(query: str, speakers: frozenset) -> str:
    """`query` without the names (and their possessive 's) of `speakers`, lower-cased words of the
    subject's speakers' names. Only capitalised words are names here, as in query_understand, so
    "will" survives a speaker called Will. A query left with no content word ("Who is Caroline?",
    "Tell me about Caroline") asks about the person, and is kept whole."""
    if not speakers or not query:
        return query

    def drop(match: re.Match) -> str:
        return "" if _POSSESSIVE.sub("", match.group(1)).lower() in speakers else match.group(0)

    stripped = _SPACES.sub(" ", _CAPITALISED.sub(drop, query))
    stripped = _LEADING_PUNCTUATION.sub("", _SPACE_BEFORE_PUNCTUATION.sub(r"\1", stripped)).strip()
    if not any(word not in _FILLER for word in _WORDS.findall(stripped.lower())):
        return query
    return stripped
