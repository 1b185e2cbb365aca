"""Bad input is a clear 4xx with the error shape: never a 500, never HTML."""
import json

import pytest
from django.test import override_settings

from tests.api.conftest import assert_error, post

pytestmark = pytest.mark.django_db


def raw(client, path, body: bytes, content_type="application/json"):
    return client.generic("POST", f"/api/v1/{path}", body, content_type=content_type)


def test_bad_json_is_400(client_a):
    assert_error(raw(client_a, "subjects/alice/search", b"{not json"), 400, "invalid_json")
    assert_error(raw(client_a, "subjects/alice/search", b'{"query": NaN}'), 400, "invalid_json")
    assert_error(raw(client_a, "subjects/alice/search", b"\xff\xfe"), 400, "invalid_json")


def test_text_postgres_cannot_store_is_400_not_500(client_a):
    assert_error(raw(client_a, "subjects/alice/memories", b'{"statement": "a\\u0000b"}'), 400)
    assert_error(raw(client_a, "subjects/alice/memories", b'{"statement": "a\\ud800b"}'), 400)
    assert_error(raw(client_a, "subjects/alice/events",
                     b'{"event_id": "e", "role": "user", "content": "x", "metadata": {"k\\u0000": 1}}'), 400)


def test_deeply_nested_json_is_400(client_a):
    assert_error(raw(client_a, "subjects/alice/search", b'{"query": ' + b"[" * 5000 + b"]" * 5000 + b"}"), 400)


def test_non_json_content_type_is_415(client_a):
    assert_error(raw(client_a, "subjects/alice/search", b"query=x", "application/x-www-form-urlencoded"), 415,
                 "unsupported_media_type")


def test_body_over_the_limit_is_413(client_a):
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000):
        body = json.dumps({"query": "x" * 2000}).encode()
        assert_error(raw(client_a, "subjects/alice/search", body), 413, "payload_too_large")


def test_body_that_is_not_an_object_is_400(client_a):
    for body in [b"[]", b"42", b'"text"', b"null"]:
        assert_error(raw(client_a, "subjects/alice/search", body), 400)


@pytest.mark.parametrize("subject", ["a" * 201, "al%20ice", "%C3%A9", "al*ice"])
def test_subject_ids_that_are_not_url_safe_or_too_long_are_400(client_a, subject):
    assert_error(client_a.get(f"/api/v1/subjects/{subject}/memories"), 400, "invalid_subject")


@pytest.mark.parametrize("body", [
    {"statement": "x", "confidence": 2}, {"statement": "x", "importance": -0.1}, {"statement": "x", "sensitivity": "top"},
    {"statement": "x", "memory_type": "dream"}, {"statement": "x", "source": "oracle"},
    {"statement": "x", "valid_from": "2026-13-40"}, {"statement": "x", "valid_from": "9999-12-31T23:59:59-12:00"},
    {"statement": "x", "namespace": "/".join(["a"] * 9)}, {"statement": "x", "namespace": "a b"},
    {"statement": "x", "metadata": {"k": "v" * 20_000}}, {"statement": "x" * 32_001}, {"statement": ""},
    {"statement": 5}, {"statement": "x", "expires_at": True},
])
def test_invalid_memory_fields_are_400(client_a, body):
    assert_error(post(client_a, "subjects/alice/memories", body), 400, "invalid_request")


def test_unknown_endpoint_and_wrong_method_answer_json(client_a):
    assert_error(client_a.get("/api/v1/nothing/here"), 404, "not_found")
    assert_error(client_a.get("/api/v2/subjects/alice/memories"), 404, "not_found")
    assert_error(client_a.put("/api/v1/subjects/alice/memories", {}, format="json"), 405, "method_not_allowed")
    assert_error(client_a.get("/api/v1/subjects/alice/search"), 405)
    # An encoded slash is decoded before routing: no route matches, still a JSON answer.
    assert_error(client_a.get("/api/v1/subjects/al%2Fice/memories"), 404, "not_found")
