"""The client's rules that need no server: namespace label encoding (reversible, and always a
segment the API accepts), which failures are retried for which calls, and error mapping."""
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tests.doors.python_client  # noqa: F401  (this checkout's memory_client first)
from api.serializers import NAMESPACE_SEGMENT
from memory_client import _calls as calls
from memory_client.errors import (
    BadRequestError, MemoryApiError, NotFoundError, PolicyRejectedError, RateLimitedError, ServerError, error_for,
)
from memory_client.langgraph import MemoryStore, decode_segment, encode_label

# What LangGraph accepts as a label (no ".", no NUL, not empty), short enough to encode.
labels = st.text(st.characters(blacklist_characters=".\x00", blacklist_categories=("Cs",)), min_size=1).filter(
    lambda s: len(s.encode()) <= 45)


@given(labels)
def test_every_langgraph_label_encodes_to_an_api_segment_and_back(label):
    segment = encode_label(label)
    assert NAMESPACE_SEGMENT.match(segment)
    assert decode_segment(segment) == label


def test_plain_labels_stay_readable_and_long_odd_ones_are_refused():
    assert encode_label("support-agent") == "support-agent"
    assert encode_label("a b") != "a b"
    with pytest.raises(ValueError):
        encode_label("é" * 40)


def test_the_subject_label_is_taken_out_and_put_back_where_it_was():
    store = MemoryStore(base_url="http://127.0.0.1:9", api_key="k", subject_index=1)
    assert store._split(("memories", "alice", "work")) == ("alice", "memories/work")
    assert store._tuple("alice", "memories/work") == ("memories", "alice", "work")
    with pytest.raises(ValueError):
        store._split(("memories",))
    fixed = MemoryStore(base_url="http://127.0.0.1:9", api_key="k", subject="alice")
    assert fixed._split(("memories", "work")) == ("alice", "memories/work")


def test_writes_carry_a_fresh_idempotency_key_each_and_keep_a_given_one():
    one = calls.memory_write("alice", "x", idempotency_key=None, extra={})
    two = calls.memory_write("alice", "x", idempotency_key=None, extra={})
    assert one.headers["Idempotency-Key"] != two.headers["Idempotency-Key"]
    assert calls.memory_write("alice", "x", idempotency_key="mine", extra={}).headers["Idempotency-Key"] == "mine"


@pytest.mark.parametrize(("call", "error", "status", "retried"), [
    (calls.memory_get("alice", "mem_1"), httpx.ReadError("reset"), None, True),
    (calls.memory_write("alice", "x", idempotency_key=None, extra={}), httpx.ReadTimeout("slow"), None, True),
    (calls.memory_write("alice", "x", idempotency_key=None, extra={}), None, 502, True),
    (calls.memory_forget("alice", "mem_1"), httpx.ReadError("reset"), None, False),  # it may have happened
    (calls.memory_forget("alice", "mem_1"), httpx.ConnectError("refused"), None, True),  # it never left
    (calls.memory_forget("alice", "mem_1"), None, 500, False),
    (calls.memory_forget("alice", "mem_1"), None, 503, True),
    (calls.subject_erase("alice"), None, 429, True),
    (calls.memory_get("alice", "mem_1"), None, 404, False),
    (calls.memory_write("alice", "x", idempotency_key=None, extra={}), None, 422, False),
])
def test_which_failures_are_retried(call, error, status, retried):
    delay = calls.retry_delay(call, 0, backoff=0.1, error=error, status=status)
    assert (delay is not None) is retried


def test_retry_after_is_honoured():
    assert calls.retry_delay(calls.health(), 0, backoff=0.01, status=429, retry_after=2) >= 2


def test_error_answers_map_to_exceptions_with_the_contract_code():
    body = {"error": {"code": "policy_rejected", "message": "No.", "details": {"reason": "secret"}}}
    error = error_for(422, body)
    assert isinstance(error, PolicyRejectedError) and error.code == "policy_rejected" and error.status == 422
    assert error.details == {"reason": "secret"}
    assert isinstance(error_for(404, {"error": {"code": "memory_not_found", "message": ""}}), NotFoundError)
    assert isinstance(error_for(400, {"error": {"code": "invalid_request", "message": ""}}), BadRequestError)
    limited = error_for(429, {"error": {"code": "rate_limited", "message": "", "details": {"retry_after": 3}}})
    assert isinstance(limited, RateLimitedError) and limited.retry_after == 3
    html = error_for(502, None)
    assert isinstance(html, ServerError) and html.code == "http_502"
    assert type(error_for(418, {})) is MemoryApiError
