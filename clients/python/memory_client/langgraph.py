"""A LangGraph `BaseStore` on the memory service: `MemoryStore(base_url=…, api_key=…)`.

Mapping (docs/integrations.md says the same for users):
- Namespace tuple → (subject, namespace). The label at `subject_index` (default 0) is the subject;
  the other labels, in order, are our slash-separated namespace. With `subject="…"` fixed, the
  whole tuple is the namespace. A label that is not already a namespace segment
  ([A-Za-z0-9][A-Za-z0-9_-]{0,63}) is written as "b64." + its URL-safe base64 (LangGraph labels
  never contain ".", so this is reversible); such labels may be at most 45 UTF-8 bytes.
- Item key → the memory's `key`; one active memory per (subject, namespace, key).
- Value → the statement: value["content"] when it is text (LangMem's shape), else the fields
  named by `index=[…]` on put, else the value as compact JSON; the whole value is kept in
  metadata["value"], so get() answers the dict that was put, and filters match its fields.
- put is an `exact_key` write that supersedes the key's current value; value None (delete) is a
  forget: invisible at once, deleted by a job, all earlier versions of the key with it.
- search with a query is our search (best first, score in [0, 1]); without one, our list
  (newest first). list_namespaces reads `GET subjects/{s}/namespaces`.

Operations run one after another (a batch is not atomic). TTLs are not supported.
"""
from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Generator, Iterable
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore, GetOp, Item, ListNamespacesOp, MatchCondition, Op, PutOp, Result, SearchItem, SearchOp,
)
from langgraph.store.base import validate_op_namespace
from langgraph.store.base.embed import get_text_at_path

from memory_client import _calls as calls
from memory_client.client import AsyncMemoryClient, MemoryClient
from memory_client.errors import NotFoundError

__all__ = ["MemoryStore", "encode_label", "decode_segment"]

SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
ENCODED = "b64."
MAX_DEPTH = 8
MAX_NAMESPACE = 300
SEARCH_FETCH = 100  # the API's largest k: fetched when filters or an offset thin the results
PAGE = 500
OPERATORS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def encode_label(label: str) -> str:
    if SEGMENT.match(label):
        return label
    encoded = ENCODED + base64.urlsafe_b64encode(label.encode()).decode().rstrip("=")
    if len(encoded) > 64:
        raise ValueError(f"Namespace label {label!r} is too long for the memory service (at most 45 UTF-8 bytes "
                         "when it is not plain letters, digits, '_' and '-').")
    return encoded


def decode_segment(segment: str) -> str:
    if segment.startswith(ENCODED):
        data = segment[len(ENCODED):]
        try:
            return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError):
            return segment
    return segment


def _namespace_string(labels: Iterable[str]) -> str:
    segments = [encode_label(label) for label in labels]
    if len(segments) > MAX_DEPTH:
        raise ValueError(f"The memory service keeps namespaces of at most {MAX_DEPTH} levels (beside the subject).")
    text = "/".join(segments)
    if len(text) > MAX_NAMESPACE:
        raise ValueError(f"The namespace is longer than {MAX_NAMESPACE} characters once encoded.")
    return text


def _labels(namespace: str) -> tuple[str, ...]:
    return tuple(decode_segment(s) for s in namespace.split("/")) if namespace else ()


def _is_operator(condition: Any) -> bool:
    return isinstance(condition, dict) and bool(condition) and set(condition) <= OPERATORS


def _matches(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    for field, condition in (filter or {}).items():
        actual = value.get(field)
        if _is_operator(condition):
            for op, expected in condition.items():
                try:
                    ok = {"$eq": lambda: actual == expected, "$ne": lambda: actual != expected,
                          "$gt": lambda: actual > expected, "$gte": lambda: actual >= expected,
                          "$lt": lambda: actual < expected, "$lte": lambda: actual <= expected}[op]()
                except TypeError:
                    ok = False
                if not ok:
                    return False
        elif actual != condition:
            return False
    return True


def _containment(filter: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a filter the service can apply (JSON containment on metadata["value"]);
    the exact check runs here afterwards anyway."""
    plain = {}
    for field, condition in (filter or {}).items():
        if _is_operator(condition):
            if "$eq" in condition:
                plain[field] = condition["$eq"]
        else:
            plain[field] = condition
    return {"value": plain} if plain else None


def _path_matches(labels: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(labels):
        return False
    part = labels[:len(path)] if condition.match_type == "prefix" else labels[len(labels) - len(path):]
    return all(p == "*" or p == label for p, label in zip(path, part))


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value)


class MemoryStore(BaseStore):
    """LangGraph's BaseStore on the memory service.

    `MemoryStore(base_url=…, api_key=…)`, or `MemoryStore(client=MemoryClient(…),
    async_client=AsyncMemoryClient(…))`. `subject_index` is the position of the subject in
    namespace tuples (default 0: `("user_123", "memories")`); `subject="user_123"` fixes the
    subject instead, and then the whole tuple is the namespace. Writes are `source` (default: none
    sent, so the service uses the highest source the key may claim, "user_explicit" for a key
    without a cap) and `memory_type` (default "semantic")."""

    supports_ttl = False

    def __init__(self, *, base_url: str | None = None, api_key: str | None = None,
                 client: MemoryClient | None = None, async_client: AsyncMemoryClient | None = None,
                 subject: str | None = None, subject_index: int = 0, source: str | None = None,
                 memory_type: str = "semantic"):
        if client is None and async_client is None and not (base_url and api_key):
            raise ValueError("Give base_url and api_key, or a client.")
        if subject_index < 0:
            raise ValueError("subject_index counts from the start of the namespace tuple (0 or more).")
        self._client = client or (MemoryClient(base_url, api_key) if base_url and api_key else None)
        self._aclient = async_client or (AsyncMemoryClient(base_url, api_key) if base_url and api_key else None)
        self.subject = subject
        self.subject_index = subject_index
        self.source = source
        self.memory_type = memory_type
        self._bound: tuple[bool, str | None] = (False, None)  # (asked, the key's subject)

    # Namespaces.

    def _split(self, namespace: tuple[str, ...]) -> tuple[str, str]:
        """(subject, our namespace) of a full namespace tuple."""
        if self.subject is not None:
            return self.subject, _namespace_string(namespace)
        if len(namespace) <= self.subject_index:
            raise ValueError(f"Namespace {namespace!r} has no label at subject_index={self.subject_index} to name "
                             "the subject.")
        rest = namespace[:self.subject_index] + namespace[self.subject_index + 1:]
        return namespace[self.subject_index], _namespace_string(rest)

    def _tuple(self, subject: str, namespace: str) -> tuple[str, ...]:
        labels = _labels(namespace)
        if self.subject is not None:
            return labels
        at = min(self.subject_index, len(labels))
        return labels[:at] + (subject,) + labels[at:]

    def _prefix(self, prefix: tuple[str, ...], bound: str | None) -> tuple[str, str]:
        """(subject, our namespace prefix) of a search prefix; one that stops before the subject
        label needs the key's own subject."""
        if self.subject is not None or len(prefix) > self.subject_index:
            return self._split(prefix)
        if bound is None:
            raise ValueError(f"The namespace prefix {prefix!r} does not reach the subject label (subject_index="
                             f"{self.subject_index}), and the key is not bound to a subject: include the subject.")
        return bound, _namespace_string(prefix)

    # Items.

    def _item(self, memory: dict[str, Any], score: float | None = None, search: bool = False) -> Item:
        metadata = memory.get("metadata") or {}
        value = metadata.get("value") if isinstance(metadata.get("value"), dict) else {"content": memory["statement"]}
        fields = dict(namespace=self._tuple(memory["subject"], memory["namespace"]),
                      key=memory.get("key") or memory["id"], value=value,
                      created_at=_time(memory["recorded_at"]), updated_at=_time(memory["recorded_at"]))
        return SearchItem(**fields, score=score) if search else Item(**fields)

    @staticmethod
    def _statement(value: dict[str, Any], index: Any) -> str:
        if isinstance(index, list) and index:
            texts = [t for path in index for t in get_text_at_path(value, path)]
            if texts:
                return "\n".join(texts)
        content = value.get("content")
        if isinstance(content, str) and content.strip():
            return content
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)

    # The operations, as generators of Calls (the same steps for batch and abatch).

    def _op(self, op: Op) -> Generator[calls.Call, Any, Result]:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return (yield from self._get(op))
        if isinstance(op, PutOp):
            if op.ttl is not None:
                raise NotImplementedError("The memory service store does not support TTLs (use expires_at on the "
                                          "REST API).")
            return (yield from (self._delete(op) if op.value is None else self._put(op)))
        if isinstance(op, SearchOp):
            return (yield from self._search(op))
        if isinstance(op, ListNamespacesOp):
            return (yield from self._list_namespaces(op))
        raise NotImplementedError(f"Unknown operation {type(op).__name__}.")

    def _current(self, subject: str, namespace: str, key: str, limit: int = 1):
        page = yield calls.memory_list(subject, metadata=None, extra={}, key=key, namespace=namespace,
                                       namespace_match="exact", status="active", limit=limit)
        return page["results"]

    def _get(self, op: GetOp):
        subject, namespace = self._split(op.namespace)
        found = yield from self._current(subject, namespace, op.key)
        return self._item(found[0]) if found else None

    def _put(self, op: PutOp):
        subject, namespace = self._split(op.namespace)
        if not isinstance(op.value, dict):
            raise TypeError("A LangGraph store value is a dict.")
        yield calls.memory_write(
            subject, self._statement(op.value, op.index), idempotency_key=None, extra={}, namespace=namespace,
            key=op.key, exact_key=True, metadata={"value": op.value}, source=self.source,
            memory_type=self.memory_type,
        )
        return None

    def _delete(self, op: PutOp):
        subject, namespace = self._split(op.namespace)
        for memory in (yield from self._current(subject, namespace, op.key, limit=50)):
            try:
                yield calls.memory_forget(subject, memory["id"])
            except NotFoundError:
                pass  # already forgotten (with an earlier one of its chain, or by someone else)
        return None

    def _bound_subject(self):
        if not self._bound[0]:
            info = yield calls.key_info()
            self._bound = (True, info.get("subject"))
        return self._bound[1]

    def _search(self, op: SearchOp):
        bound = None
        if self.subject is None and len(op.namespace_prefix) <= self.subject_index:
            bound = yield from self._bound_subject()
        subject, prefix = self._prefix(op.namespace_prefix, bound)
        wanted = op.offset + op.limit
        if op.query:
            k = SEARCH_FETCH if op.filter else min(max(wanted, 1), SEARCH_FETCH)
            answer = yield calls.search(subject, op.query, extra={}, k=k, namespace=prefix or None)
            items = [self._item(m, score=m.get("score"), search=True) for m in answer["results"]]
            items = [i for i in items if _matches(i.value, op.filter)]
            return items[op.offset:wanted]
        items: list[Item] = []
        cursor = None
        while len(items) < wanted:
            page = yield calls.memory_list(subject, metadata=_containment(op.filter), extra={},
                                           namespace=prefix or None, status="active", cursor=cursor,
                                           limit=min(PAGE, max(wanted, 1)) if not op.filter else PAGE)
            items += [i for i in (self._item(m, search=True) for m in page["results"]) if _matches(i.value, op.filter)]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        return items[op.offset:wanted]

    def _list_namespaces(self, op: ListNamespacesOp):
        conditions = tuple(op.match_conditions or ())
        subject = self.subject
        if subject is None:
            fixed = [c.path[self.subject_index] for c in conditions
                     if c.match_type == "prefix" and len(c.path) > self.subject_index
                     and c.path[self.subject_index] != "*"]
            subject = fixed[0] if fixed else (yield from self._bound_subject())
            if subject is None:
                raise ValueError("list_namespaces needs the subject: a prefix condition that names it (at "
                                 f"subject_index={self.subject_index}), a fixed subject, or a key bound to one.")
        namespaces: list[tuple[str, ...]] = []
        cursor = None
        while True:
            page = yield calls.namespaces(subject, cursor=cursor, limit=1000)
            for row in page["namespaces"]:
                labels = self._tuple(subject, row["namespace"])
                if self.subject is None and len(labels) <= self.subject_index:
                    continue  # too short to carry the subject where this store expects it
                if all(_path_matches(labels, c) for c in conditions):
                    namespaces.append(labels[:op.max_depth] if op.max_depth is not None else labels)
            cursor = page["next_cursor"]
            if cursor is None:
                break
        unique = sorted(set(namespaces))
        return unique[op.offset:op.offset + op.limit]

    # BaseStore.

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self._client is None:
            raise RuntimeError("This MemoryStore has only an async client: use abatch (or the a* methods).")
        return [self._drive(self._op(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self._aclient is None:
            raise RuntimeError("This MemoryStore has only a sync client: use batch.")
        return [await self._adrive(self._op(op)) for op in ops]

    def _drive(self, steps: Generator[calls.Call, Any, Result]) -> Result:
        try:
            call = next(steps)
            while True:
                try:
                    result = self._client._run(call)
                except Exception as exc:  # handed to the step that made the call (delete ignores 404)
                    call = steps.throw(exc)
                else:
                    call = steps.send(result)
        except StopIteration as done:
            return done.value

    async def _adrive(self, steps: Generator[calls.Call, Any, Result]) -> Result:
        try:
            call = next(steps)
            while True:
                try:
                    result = await self._aclient._run(call)
                except Exception as exc:
                    call = steps.throw(exc)
                else:
                    call = steps.send(result)
        except StopIteration as done:
            return done.value

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    async def aclose(self) -> None:
        if self._aclient is not None:
            await self._aclient.aclose()
