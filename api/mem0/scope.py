"""mem0's entity ids and filters → one of our subjects plus labels to match.

- `user_id` is the subject; `agent_id` alone is the subject `agent:<id>`; with a subject-bound
  key and neither, the key's subject.
- `agent_id`, `run_id`, `app_id` beside the subject are labels, stored with each memory (in
  `metadata["mem0"]`) or on the event it is drawn from, and matched exactly; `run_id` is also
  the event's `session_id`.
- `metadata` matches exactly, key by key.
- Flat filters and `AND` of the above. `OR`, `NOT`, `"*"` and operators (`in`, `gte`, …) would
  reach across subjects or need a query language we do not have: a 400 that says so, never an
  empty answer that looks like "no memories".
"""
from dataclasses import dataclass, field

from api.parsers import json_problem
from api.views.base import SUBJECT_ID, SubjectForbidden
from memoryapp.errors import ApplicationError

ENTITY_IDS = ("user_id", "agent_id", "run_id", "app_id")
LABELS_KEY = "mem0"  # reserved key of a memory's (or event's) metadata holding the labels
MAX_ID = 200
SUPPORTED = ("Supported filters: user_id, agent_id, run_id, app_id (exact strings) and metadata (exact values), "
             "flat or combined with AND. One request reads one subject (user_id, or agent_id alone).")


class UnsupportedFilter(ApplicationError):
    def __init__(self, what: str, details: dict | None = None):
        super().__init__("unsupported_filter", f"{what} {SUPPORTED}", details or {}, status=400)


@dataclass
class Scope:
    user_id: str = ""
    agent_id: str = ""
    run_id: str = ""
    app_id: str = ""
    metadata: dict = field(default_factory=dict)

    @property
    def subject(self) -> str:
        if self.user_id:
            return self.user_id
        return f"agent:{self.agent_id}" if self.agent_id else ""

    @property
    def labels(self) -> dict:
        """The ids kept beside the subject (agent_id only when the subject is a user)."""
        names = ("agent_id", "run_id", "app_id") if self.user_id else ("run_id", "app_id")
        return {n: getattr(self, n) for n in names if getattr(self, n)}

    def wanted(self) -> dict:
        """What a memory's metadata must contain (JSON containment) to match."""
        wanted = dict(self.metadata)
        if self.labels:
            wanted[LABELS_KEY] = self.labels
        return wanted


def _merge_id(scope: Scope, name: str, value) -> None:
    if value == "*":
        raise UnsupportedFilter(f"The wildcard '*' for {name} is not supported: it reaches across subjects.")
    if isinstance(value, dict):
        raise UnsupportedFilter(f"Operators on {name} ({', '.join(map(str, value))}) are not supported.")
    if isinstance(value, list):
        raise UnsupportedFilter(f"A list of values for {name} is not supported.")
    if not isinstance(value, str) or not value or len(value) > MAX_ID or json_problem(value):
        raise ApplicationError("invalid_request", f"{name} must be a non-empty string of at most {MAX_ID} "
                               "characters (no NUL, no lone surrogate).", {name: "invalid"})
    current = getattr(scope, name)
    if current and current != value:
        raise UnsupportedFilter(f"Two different values for {name} ({current!r} and {value!r}) match nothing.")
    setattr(scope, name, value)


def _merge_metadata(scope: Scope, value) -> None:
    if not isinstance(value, dict):
        raise UnsupportedFilter("metadata must be an object of exact values.")
    for key, item in value.items():
        if not isinstance(key, str) or key == LABELS_KEY:
            raise UnsupportedFilter(f"The metadata key {key!r} is reserved." if key == LABELS_KEY
                                    else "metadata keys are strings.")
        if isinstance(item, (dict, list)):
            raise UnsupportedFilter(f"Operators or nested values on metadata.{key} are not supported.")
        # Filters may arrive as a Python literal in the query string: bytes, sets and the like
        # decode there, and no body parser has looked at them.
        if not isinstance(item, (str, int, float, bool, type(None))) or json_problem({key: item}):
            raise ApplicationError("invalid_request", f"metadata.{key} must be a string, a finite number, "
                                   "true, false or null (no NUL, no lone surrogate).", {"metadata": "invalid"})
        if key in scope.metadata and scope.metadata[key] != item:
            raise UnsupportedFilter(f"Two different values for metadata.{key} match nothing.")
        scope.metadata[key] = item


def scope_merge(scope: Scope, filters, depth: int = 0) -> Scope:
    """Add `filters` (mem0's filter object) to `scope`, refusing what we cannot answer exactly."""
    if filters is None:
        return scope
    if not isinstance(filters, dict) or depth > 8:
        raise UnsupportedFilter("filters must be an object.")
    for key, value in filters.items():
        if key == "AND":
            if not isinstance(value, list):
                raise UnsupportedFilter("AND takes a list of filter objects.")
            for part in value:
                scope_merge(scope, part, depth + 1)
        elif key in ("OR", "NOT"):
            raise UnsupportedFilter(f"{key} filters are not supported.")
        elif key in ENTITY_IDS:
            _merge_id(scope, key, value)
        elif key == "metadata":
            _merge_metadata(scope, value)
        else:
            raise UnsupportedFilter(f"The filter {key!r} is not supported.", {"filter": str(key)[:100]})
    return scope


def scope_subject(request, scope: Scope) -> str:
    """The one subject this request reads or writes: from the ids, else the key's own subject.
    A subject-bound key reaches nothing else (403, as on the v1 API)."""
    bound = request.api_key.subject_ref
    subject = scope.subject or bound
    if not subject:
        raise UnsupportedFilter("Name whose memories: a user_id (or an agent_id) is required.")
    if not SUBJECT_ID.match(subject):
        raise ApplicationError(
            "invalid_subject",
            "user_id and agent_id are 1-200 URL-safe characters (letters, digits, ._~:@-), other than '.' and '..'.",
        )
    if bound and subject != bound:
        raise SubjectForbidden()
    return subject


def contains(have, wanted: dict) -> bool:
    """JSON containment (PostgreSQL's @>) of flat-or-nested objects, in Python: for search hits."""
    if not isinstance(have, dict):
        return False
    for key, value in wanted.items():
        if isinstance(value, dict):
            if not contains(have.get(key), value):
                return False
        elif key not in have or have[key] != value:
            return False
    return True
