"""Contract extensions the LangGraph store reads and writes through: list by exact key, exact
namespace and metadata; a subject's namespaces; `exact_key` writes. Same scoping as the list."""
import json

import pytest

from tests.api.conftest import assert_error, post, write

pytestmark = pytest.mark.django_db


def listed(client, subject="alice", **params):
    response = client.get(f"/api/v1/subjects/{subject}/memories", params)
    assert response.status_code == 200, response.content
    return [m["id"] for m in response.json()["results"]]


def test_list_filters_by_exact_key_exact_namespace_and_metadata(client_a):
    top = write(client_a, "alice", "Top level fact about tea.", key="k1", metadata={"value": {"kind": "drink"}})
    inner = write(client_a, "alice", "Inner fact about coffee.", namespace="prefs", key="k1",
                  metadata={"value": {"kind": "drink", "hot": True}})
    deeper = write(client_a, "alice", "Deeper fact about juice.", namespace="prefs/cold", key="k2",
                   metadata={"value": {"kind": "drink", "hot": False}})
    assert set(listed(client_a, key="k1")) == {top["id"], inner["id"]}
    assert listed(client_a, namespace="prefs", namespace_match="exact") == [inner["id"]]
    assert set(listed(client_a, namespace="prefs")) == {inner["id"], deeper["id"]}  # prefix, as before
    assert listed(client_a, namespace_match="exact") == [top["id"]]  # no namespace: the top level
    assert listed(client_a, metadata=json.dumps({"value": {"hot": False}})) == [deeper["id"]]
    assert set(listed(client_a, metadata=json.dumps({"value": {"kind": "drink"}}))) == {
        top["id"], inner["id"], deeper["id"]}
    assert listed(client_a, key="k2", namespace="prefs", namespace_match="exact") == []


def test_list_extension_parameters_are_validated(client_a):
    assert_error(client_a.get("/api/v1/subjects/alice/memories", {"metadata": "[1]"}), 400, "invalid_request")
    assert_error(client_a.get("/api/v1/subjects/alice/memories", {"metadata": "{nope"}), 400, "invalid_request")
    assert_error(client_a.get("/api/v1/subjects/alice/memories", {"namespace_match": "fuzzy"}), 400,
                 "invalid_request")


def test_namespaces_lists_the_subjects_current_namespaces_with_counts(client_a):
    write(client_a, "alice", "A fact at the top.")
    write(client_a, "alice", "A first preference.", namespace="prefs")
    write(client_a, "alice", "A second preference.", namespace="prefs")
    write(client_a, "alice", "A cold one.", namespace="prefs/cold")
    write(client_a, "bob", "Bob's own namespace.", namespace="bobs")
    body = client_a.get("/api/v1/subjects/alice/namespaces").json()
    assert [(n["namespace"], n["memories"]) for n in body["namespaces"]] == [("", 1), ("prefs", 2),
                                                                            ("prefs/cold", 1)]
    assert body["next_cursor"] is None
    first = client_a.get("/api/v1/subjects/alice/namespaces", {"limit": 2}).json()
    assert [n["namespace"] for n in first["namespaces"]] == ["", "prefs"] and first["next_cursor"] == "prefs"
    rest = client_a.get("/api/v1/subjects/alice/namespaces", {"limit": 2, "cursor": first["next_cursor"]}).json()
    assert [n["namespace"] for n in rest["namespaces"]] == ["prefs/cold"] and rest["next_cursor"] is None
    only = client_a.get("/api/v1/subjects/alice/namespaces", {"prefix": "prefs/cold"}).json()
    assert [n["namespace"] for n in only["namespaces"]] == ["prefs/cold"]


def test_namespaces_and_filtered_lists_respect_tenant_and_key_binding(client_a, client_b, bound_alice):
    write(client_a, "alice", "Alice keeps this.", namespace="prefs", key="k1")
    write(client_a, "bob", "Bob keeps this.", namespace="prefs", key="k1")
    assert client_b.get("/api/v1/subjects/alice/namespaces").json()["namespaces"] == []
    assert listed(client_b, key="k1") == []
    assert_error(bound_alice.get("/api/v1/subjects/bob/namespaces"), 403, "subject_forbidden")
    assert_error(bound_alice.get("/api/v1/subjects/bob/memories", {"key": "k1"}), 403, "subject_forbidden")
    assert [n["namespace"] for n in bound_alice.get("/api/v1/subjects/alice/namespaces").json()["namespaces"]] == [
        "prefs"]


def test_exact_key_keeps_equal_text_under_two_keys_and_updates_metadata(client_a):
    one = write(client_a, "alice", "Done.", key="task-1", exact_key=True, metadata={"value": {"n": 1}})
    two = write(client_a, "alice", "Done.", key="task-2", exact_key=True, metadata={"value": {"n": 1}})
    assert two["id"] != one["id"] and two["key"] == "task-2"
    changed = write(client_a, "alice", "Done.", key="task-1", exact_key=True, metadata={"value": {"n": 2}})
    assert changed["supersedes"] == [one["id"]] and changed["metadata"] == {"value": {"n": 2}}
    same = write(client_a, "alice", "Done.", key="task-1", exact_key=True, metadata={"value": {"n": 2}})
    assert same["id"] == changed["id"]  # identical value under the same key: reinforced, not copied
    # Without exact_key, v1 behaviour is unchanged: the oldest identical active memory is reinforced.
    plain = write(client_a, "alice", "Done.", key="task-3")
    assert plain["id"] == two["id"] and plain["key"] == "task-2"


def test_exact_key_needs_a_key(client_a):
    response = post(client_a, "subjects/alice/memories", {"statement": "No key here.", "exact_key": True})
    assert_error(response, 400, "invalid_request")
