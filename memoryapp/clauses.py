"""The clauses of a statement, each embedded on its own beside the whole (retrieval.py).

People state facts in passing: "the rent in Leeds is getting ridiculous, anyway can you help me
draft a complaint". One vector for the whole message is mostly about the request, so a question
about where the person lives finds it only weakly; the clause about the rent, embedded alone,
answers it. A message that is one clause gets no clause vectors (its vector already is one).

The split is the language's, not a data set's: sentence ends, semicolons, dashes between words,
and a comma before a word that opens a new remark (conjunctions, discourse markers, a request
or question addressed to the listener). Nothing here knows an attribute or a phrasing.
"""
import re

# A comma followed by one of these starts another remark: conjunctions and discourse markers
# ("and" is not one: "apples, pears, and plums" is one clause),
# or the start of a request or question to the listener.
_OPENERS = (
    r"anyway|anyways|but|so|btw|also|plus|though|although|because|since|which|while|whereas|"
    r"then|now|still|otherwise|honestly|lol|haha|ok|okay|"
    r"can|could|would|will|should|do|does|is|are|any|what|how|why|where|when|who|which|please|"
    r"tell|help|remind|recommend|suggest|give|show"
)
_BOUNDARY = re.compile(
    r"(?<=[.!?;…])\s+"                         # after a sentence end or a semicolon
    r"|\s+[—–]\s*|\s*[—–]\s+|\s+-{1,2}\s+"       # a dash between words
    rf"|,\s*(?=(?:{_OPENERS})\b)"               # a comma before a new remark
    r"|\s*\n+\s*",                             # a line break
    re.I,
)
MIN_WORDS = 2      # "yes." is no clause of its own
MAX_CLAUSES = 8    # a long message's first eight: enough for chat turns, bounded for documents
MAX_CHARS = 2000   # past this a statement is a document; its clauses are not worth a vector each


def statement_clauses(text: str) -> list[str]:
    """The clauses worth a vector of their own: [] when `text` is one clause (or too long)."""
    if not text or len(text) > MAX_CHARS:
        return []
    parts = [part.strip(" ,") for part in _BOUNDARY.split(text)]
    clauses = [part for part in parts if len(part.split()) >= MIN_WORDS]
    if len(clauses) < 2:
        return []
    return clauses[:MAX_CLAUSES]
