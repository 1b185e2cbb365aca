"""The mem0 routes and the v1 metadata filters refuse input PostgreSQL cannot store or compare
with a 400 naming it (never a 500), and a bare DELETE never means "everything of my subject"."""
import pytest

from tests.api.conftest import make_client, write

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("filters", [
    "{'metadata': {'a': b'x'}}", "{'metadata': {'a': {1, 2}}}", "{'metadata': {'a': 'x\\x00'}}",
    "{'run_id': 'a\\x00b'}", "{'metadata': {'a': 1e999}}",
])
def test_mem0_filters_in_the_query_string_that_cannot_be_stored_are_a_400(tenant_a, filters):
    client = make_client(tenant_a)
    write(client, "alice", "I like tea.")
    response = client.get("/v1/memories/", {"user_id": "alice", "filters": filters})
    assert response.status_code == 400, response.content[:300]
    assert response.json()["detail"]


def test_mem0_filters_in_a_body_with_an_infinite_number_are_a_400(tenant_a):
    client = make_client(tenant_a)
    response = client.post("/v3/memories/", '{"user_id": "alice", "filters": {"metadata": {"a": 1e999}}}',
                           content_type="application/json")
    assert response.status_code == 400, response.content[:300]


@pytest.mark.parametrize("raw", ['{"a": NaN}', '{"a": 1e999}', '{"a": "\\u0000"}', '{"a": "\\ud800"}'])
def test_v1_metadata_filter_that_cannot_be_stored_is_a_400(tenant_a, raw):
    client = make_client(tenant_a)
    response = client.get("/api/v1/subjects/alice/memories", {"metadata": raw})
    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"]["code"] == "invalid_request"


def test_v1_write_with_an_infinite_number_in_metadata_is_a_400(tenant_a):
    client = make_client(tenant_a)
    response = client.post("/api/v1/subjects/alice/memories",
                           '{"statement": "I like tea.", "metadata": {"a": 1e999}}', content_type="application/json")
    assert response.status_code == 400, response.content[:300]


def test_a_mem0_label_written_through_v1_does_not_break_the_mem0_routes(tenant_a):
    client = make_client(tenant_a)
    write(client, "alice", "I like tea.", metadata={"mem0": "x"})
    response = client.get("/v1/memories/", {"user_id": "alice"})
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    results = body["results"] if isinstance(body, dict) else body
    assert [m["memory"] for m in results] == ["I like tea."]


def test_a_bare_mem0_delete_all_with_a_bound_key_deletes_nothing(tenant_a):
    bound = make_client(tenant_a, "alice")
    write(bound, "alice", "I like tea.")
    response = bound.delete("/v1/memories/")
    assert response.status_code == 400, response.content[:300]
    listed = bound.get("/api/v1/subjects/alice/memories").json()
    assert [m["statement"] for m in listed["results"]] == ["I like tea."]
