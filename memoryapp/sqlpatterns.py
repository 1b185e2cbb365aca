"""Text matched literally inside a LIKE pattern.

PostgreSQL's LIKE treats `%` and `_` as wildcards and backslash as its escape character, so a
namespace, a key or an erased string put into a pattern has all three escaped first: "user_1"
must not match "userX1", nor "50%" everything after "50".
"""


def like_escape(value: str) -> str:
    """`value` with LIKE's wildcards and escape character escaped (default escape: backslash)."""
    return value.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")
