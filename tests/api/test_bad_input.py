"""Bad input found by probing the running service: each is a JSON 4xx naming the problem, never a
500 and never an HTML page, whichever layer (DRF, Django, gunicorn) meets it first."""
import base64
import json
import socket
import time
import uuid

import pytest
from django.test import Client

from tests.api.conftest import assert_error, post, write

pytestmark = pytest.mark.django_db



def cursor(when: str) -> str:
    return base64.urlsafe_b64encode(f"{when}|{uuid.uuid4().hex}".encode()).decode().rstrip("=")


# -- time-zone offsets: PostgreSQL refuses beyond ±15:59, no place on earth is beyond ±14:00 --

@pytest.mark.parametrize("when", ["2026-01-01T00:00:00-23:59", "2026-01-01T00:00:00+16:00",
                                  "2026-01-01T00:00:00+14:01", "0001-01-01T00:00:00+14:00"])
def test_list_cursor_with_an_impossible_time_is_400(client_a, when):
    response = client_a.get("/api/v1/subjects/alice/memories", {"cursor": cursor(when)})
    assert_error(response, 400, "invalid_cursor")


def test_list_cursor_with_a_real_offset_still_pages(client_a):
    response = client_a.get("/api/v1/subjects/alice/memories", {"cursor": cursor("2026-01-01T00:00:00+14:00")})
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("offset", ["+16:00", "-23:59", "+14:30"])
@pytest.mark.parametrize("path, field, body", [
    ("memories", "valid_from", {"statement": "I live in Lisbon."}),
    ("memories", "expires_at", {"statement": "I live in Lisbon."}),
    ("events", "occurred_at", {"event_id": "e1", "role": "user", "content": "hello"}),
    ("search", "as_of", {"query": "where"}),
])
def test_times_with_an_offset_beyond_14_hours_are_400_naming_the_field(client_a, offset, path, field, body):
    response = post(client_a, f"subjects/alice/{path}", {**body, field: f"2026-03-01T09:00:00{offset}"})
    details = assert_error(response, 400, "invalid_request")["error"]["details"]
    assert field in details and "offset" in str(details[field])


def test_correction_with_an_offset_beyond_14_hours_is_400(client_a):
    memory = write(client_a, "alice", "I live in Lisbon.")
    response = client_a.patch(f"/api/v1/subjects/alice/memories/{memory['id']}",
                              {"valid_from": "2026-03-01T09:00:00+16:00"}, format="json")
    assert "valid_from" in assert_error(response, 400, "invalid_request")["error"]["details"]


def test_times_at_the_real_extremes_are_accepted(client_a):
    for offset in ["+14:00", "-12:00"]:
        memory = write(client_a, "alice", f"I moved on 1 March ({offset}).", valid_from=f"2026-03-01T09:00:00{offset}")
        assert memory["valid_from"].startswith("2026-")


def test_out_of_range_years_are_still_refused(client_a):
    response = post(client_a, "subjects/alice/memories", {"statement": "x", "valid_from": "2300-01-01T00:00:00Z"})
    assert "valid_from" in assert_error(response, 400)["error"]["details"]


# -- never HTML under /api/ --

@pytest.mark.parametrize("method, path", [
    ("POST", "/api/v1/subjects/x/memories/"), ("PUT", "/api/v1/nope"), ("DELETE", "/api/v1/nope/"),
    ("PATCH", "/api/v2/anything"), ("POST", "/api/"),
])
def test_unknown_api_paths_are_json_404_for_every_method_even_without_a_csrf_token(method, path):
    client = Client(enforce_csrf_checks=True)
    response = client.generic(method, path, b"{}", content_type="application/json")
    assert_error(response, 404, "not_found")


def test_wrong_method_on_a_known_route_is_json_405(client_a):
    assert_error(client_a.put("/api/v1/subjects/alice/memories", {}, format="json"), 405, "method_not_allowed")
    assert_error(client_a.generic("FETCH", "/api/v1/subjects/alice/search"), 405, "method_not_allowed")


@pytest.mark.parametrize("path", ["/api/v1/health", "/api/v1/subjects/alice/memories", "/api/v1/nope"])
def test_a_foreign_host_header_is_json_400_under_api(path):
    response = Client().get(path, HTTP_HOST="evil.example")
    assert response["Content-Type"] == "application/json"
    assert_error(response, 400, "bad_request")


def test_a_foreign_host_header_keeps_the_html_page_in_the_console():
    response = Client().get("/console/", HTTP_HOST="evil.example")
    assert response.status_code == 400 and response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize("status, code", [(400, "bad_request"), (403, "forbidden"), (404, "not_found"),
                                          (500, "internal_error")])
def test_project_error_handlers_answer_json_under_api_and_html_elsewhere(rf, status, code):
    from django.urls import get_resolver

    handler = get_resolver().resolve_error_handler(status)
    kwargs = {} if status == 500 else {"exception": Exception("boom")}
    api = handler(rf.get("/api/v1/whatever"), **kwargs)
    assert api.status_code == status and api["Content-Type"] == "application/json"
    assert json.loads(api.content)["error"]["code"] == code
    console = handler(rf.get("/console/whatever"), **kwargs)
    assert console.status_code == status and console["Content-Type"].startswith("text/html")


# -- subject ids and statements --

@pytest.mark.parametrize("subject", [".", ".."])
def test_dot_and_dot_dot_are_not_subject_ids(client_a, subject):
    body = assert_error(client_a.get(f"/api/v1/subjects/{subject}/memories"), 400, "invalid_subject")
    assert "'.'" in body["error"]["message"]
    assert_error(post(client_a, f"subjects/{subject}/memories", {"statement": "x"}), 400, "invalid_subject")


def test_a_subject_id_ending_in_a_newline_is_400(client_a):
    assert_error(client_a.get("/api/v1/subjects/alice%0A/memories"), 400, "invalid_subject")


def test_subject_ids_with_dots_inside_are_fine(client_a):
    for subject in ["...", ".alice", "a.b"]:
        assert client_a.get(f"/api/v1/subjects/{subject}/memories").status_code == 200


@pytest.mark.parametrize("statement", ["   ", "\n\t", "\u00a0\u2003"])
def test_whitespace_only_statements_are_400(client_a, statement):
    response = post(client_a, "subjects/alice/memories", {"statement": statement})
    assert "statement" in assert_error(response, 400, "invalid_request")["error"]["details"]
    memory = write(client_a, "alice", "I live in Lisbon.")
    response = client_a.patch(f"/api/v1/subjects/alice/memories/{memory['id']}", {"statement": statement},
                              format="json")
    assert "statement" in assert_error(response, 400, "invalid_request")["error"]["details"]


def test_statements_keep_their_surrounding_whitespace(client_a):
    assert write(client_a, "alice", "  I live in Lisbon. ")["statement"].strip() == "I live in Lisbon."


# -- event metadata: its namespace becomes memories' namespace, so it obeys the same rules --

@pytest.mark.parametrize("namespace", [{"a": 1}, 42, None, True, ["a"], "a" * 301, "a b", "a/../b",
                                       "/".join(["a"] * 9), "ünï"])
def test_event_metadata_namespace_is_validated_like_a_memory_namespace(client_a, namespace):
    event = {"event_id": "e1", "role": "user", "content": "I live in Lisbon.", "metadata": {"namespace": namespace}}
    details = assert_error(post(client_a, "subjects/alice/events", event), 400, "invalid_request")["error"]["details"]
    assert "namespace" in details["metadata"]
    details = assert_error(post(client_a, "subjects/alice/events", {"events": [event]}), 400)["error"]["details"]
    assert "namespace" in str(details["events"]) and "metadata" in str(details["events"])


def test_event_metadata_with_a_good_namespace_is_accepted_and_other_keys_are_free(client_a):
    event = {"event_id": "e1", "role": "user", "content": "I live in Lisbon.",
             "metadata": {"namespace": "support-agent/travel", "anything": {"else": [1, 2]}}}
    assert post(client_a, "subjects/alice/events", event).status_code == 202
    event = {"event_id": "e2", "role": "user", "content": "Hi.", "metadata": {"other": 1}}
    assert post(client_a, "subjects/alice/events", event).status_code == 202


# -- gunicorn answers some requests itself, before Django: those must be JSON too --

def _raw_request(port: int, request: bytes, timeout: float = 60) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def gunicorn_server(django_db_setup):
    from tests.conftest import running_gunicorn

    with running_gunicorn(workers=1) as port:
        yield port


@pytest.mark.slow
def test_gunicorn_answers_a_uri_over_its_limit_with_a_json_414(gunicorn_server):
    answer = _raw_request(gunicorn_server, b"GET /api/v1/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 414 "), lines
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body) and headers["connection"] == "close"
    error = json.loads(body)["error"]
    assert error["code"] == "uri_too_long" and error["message"] and error["details"] == {}
    # A request line gunicorn cannot parse at all is JSON as well.
    answer = _raw_request(gunicorn_server, b"GET /api/v1/health HTTP/9.9\r\nHost: localhost\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 ") and json.loads(answer.partition(b"\r\n\r\n")[2])["error"]["code"]


@pytest.mark.slow
def test_a_keep_alive_connection_idle_for_a_few_seconds_still_answers(gunicorn_server):
    # Clients pool connections for seconds (httpx 5 s): a server that closed them sooner would
    # lose the request a client sends just as it closes (gunicorn's default is 2 s).
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", gunicorn_server, timeout=30)
    connection.request("GET", "/api/v1/health")
    first = connection.getresponse()
    first.read()
    socket_used = connection.sock
    time.sleep(3)
    connection.request("GET", "/api/v1/health")
    second = connection.getresponse()
    second.read()
    assert first.status == second.status == 200 and connection.sock is socket_used
    connection.close()


@pytest.mark.parametrize("statement", ["\u200b", "\ufeff", "\u200b\u200c\u200d", "\u0301", ".", " \u00a0"])
def test_a_statement_with_nothing_visible_to_say_is_400(client_a, statement):
    response = post(client_a, "subjects/alice/memories", {"statement": statement})
    assert "statement" in assert_error(response, 400, "invalid_request")["error"]["details"]


@pytest.mark.parametrize("content", ["\u200b", "   ", "\ufeff\u200b"])
def test_event_content_with_nothing_visible_is_400_but_an_emoji_is_a_message(client_a, content):
    response = post(client_a, "subjects/alice/events", {"event_id": "e1", "role": "user", "content": content})
    assert_error(response, 400, "invalid_request")
    assert post(client_a, "subjects/alice/events", {"event_id": "e2", "role": "user", "content": "👍"}).status_code == 202


def test_api_answers_are_never_cached(client_a):
    write(client_a, "alice", "I live in Lisbon.")
    response = client_a.get("/api/v1/subjects/alice/memories")
    assert response["Cache-Control"] == "no-store"
