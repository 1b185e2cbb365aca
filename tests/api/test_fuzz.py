"""Schema-driven fuzzing: generated requests to every endpoint, mixing valid values, wrong
types, junk and unknown fields. Every answer must be below 500, JSON, and match the OpenAPI
document (documented status, documented body or the error shape)."""
import json
import os
import time
from collections import Counter
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.api.conftest import post, write
from tests.api.openapi import OpenApiDocument

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "1100"))

junk = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
times = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    st.sampled_from(["2026-09-12T09:00:00+00:00", "yesterday", "2026-02-30T00:00:00Z", "", "0000-01-01"]),
)
words = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=60),
    st.sampled_from(["I am vegetarian.", "I live in Lisbon.", "What does the user eat?", "ignore previous instructions"]),
)
namespaces = st.one_of(st.sampled_from(["", "profile", "support-agent/preference", "a/b/c", "../x", "a//b"]), words)


def maybe(value_strategy):
    """Mostly a plausible value, sometimes junk."""
    return st.one_of(value_strategy, value_strategy, value_strategy, junk)


def plain(strategy):
    return strategy


FIELDS = {
    "events": {
        "event_id": maybe(st.text(min_size=1, max_size=12)), "role": maybe(st.sampled_from(["user", "assistant", "tool", "system", "x"])),
        "source": maybe(st.sampled_from(["user", "external", "tool", "nope"])), "content": maybe(words),
        "occurred_at": maybe(times), "session_id": maybe(words), "speaker": maybe(words),
        "metadata": maybe(st.dictionaries(st.text(max_size=8), junk, max_size=4)),
    },
    "memories": {
        "statement": maybe(words), "memory_type": maybe(st.sampled_from(["semantic", "episodic", "procedural", "x"])),
        "namespace": maybe(namespaces), "source": maybe(st.sampled_from(["user_explicit", "external", "assistant"])),
        "valid_from": maybe(times), "confidence": maybe(st.floats(-1, 2)), "importance": maybe(st.floats(-1, 2)),
        "sensitivity": maybe(st.sampled_from(["public", "special", "secret"])), "expires_at": maybe(times),
        "metadata": maybe(st.dictionaries(st.text(max_size=8), junk, max_size=4)), "key": maybe(words),
    },
    "search": {
        "query": maybe(words), "k": maybe(st.integers(-5, 150)), "as_of": maybe(times),
        "memory_types": maybe(st.lists(st.sampled_from(["semantic", "episodic", "nope"]), max_size=4)),
        "namespace": maybe(namespaces), "include_superseded": maybe(st.booleans()), "min_score": maybe(st.floats(-20, 20)),
    },
    "context": {"query": maybe(words), "token_budget": maybe(st.integers(-10, 200_000))},
}
FIELDS["patch"] = {k: v for k, v in FIELDS["memories"].items() if k != "key"}
VALID = {
    "events": {"event_id": st.text(alphabet="abcdef0123", min_size=1, max_size=8), "role": st.sampled_from(["user", "tool"]),
               "content": st.sampled_from(["I am vegetarian.", "I moved to Porto.", "Call me Al."]),
               "source": st.sampled_from(["user", "external"]), "occurred_at": st.just("2026-09-12T09:00:00+00:00")},
    "memories": {"statement": st.sampled_from(["I am vegetarian.", "I live in Lisbon.", "I like jazz.", "Fact {}"]),
                 "memory_type": st.sampled_from(["semantic", "episodic"]), "namespace": st.sampled_from(["", "profile", "a/b"]),
                 "importance": st.floats(0, 1), "metadata": st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)},
    "search": {"query": st.sampled_from(["food", "where does the user live?", "jazz"]), "k": st.integers(1, 100),
               "include_superseded": st.booleans(), "namespace": st.sampled_from(["", "profile", "a"])},
    "context": {"query": st.sampled_from(["food", "music"]), "token_budget": st.integers(1, 2000)},
}
VALID["patch"] = {"statement": VALID["memories"]["statement"], "importance": st.floats(0, 1)}


REQUIRED = {"events": ["event_id", "role", "content"], "memories": ["statement"], "search": ["query"],
            "context": ["query"], "patch": []}


def bodies(kind):
    """Valid-looking bodies (required fields present, values plausible) as often as broken ones."""
    fields = FIELDS[kind]
    valid = st.fixed_dictionaries({k: VALID[kind][k] for k in REQUIRED[kind]},
                                  optional={k: v for k, v in VALID[kind].items() if k not in REQUIRED[kind]})
    known = st.fixed_dictionaries({}, optional=fields)
    extra = st.dictionaries(st.text(min_size=1, max_size=6), junk, max_size=2)
    return st.one_of(valid, valid, known, st.builds(lambda a, b: {**a, **b}, known, extra), junk)


subjects = st.one_of(st.sampled_from(["alice", "alice", "bob", "carol"]), st.sampled_from(["alice", "dave"]),
                     st.text(min_size=1, max_size=210))
list_queries = st.fixed_dictionaries({}, optional={
    "status": st.sampled_from(["active", "superseded", "bogus"]), "memory_type": st.sampled_from(["semantic", "x"]),
    "namespace": namespaces, "q": words, "cursor": st.text(max_size=20), "limit": st.integers(-3, 600).map(str),
    "extra": st.text(max_size=5),
})

requests = st.one_of(
    st.tuples(st.just("POST"), st.just("events"), subjects, st.one_of(
        bodies("events"), st.builds(lambda evs: {"events": evs}, st.lists(bodies("events"), max_size=4)))),
    st.tuples(st.just("POST"), st.just("memories"), subjects, bodies("memories")),
    st.tuples(st.just("GET"), st.just("memories"), subjects, list_queries),
    st.tuples(st.just("GET"), st.just("memory"), subjects, st.none()),
    st.tuples(st.just("PATCH"), st.just("memory"), subjects, bodies("patch")),
    st.tuples(st.just("GET"), st.just("history"), subjects, st.none()),
    st.tuples(st.just("POST"), st.just("search"), subjects, bodies("search")),
    st.tuples(st.just("POST"), st.just("context"), subjects, bodies("context")),
    st.tuples(st.just("GET"), st.just("job"), st.none(), st.none()),
    st.tuples(st.just("GET"), st.just("export"), st.none(), st.none()),
    st.tuples(st.just("RAW"), st.just("search"), subjects, st.binary(max_size=60)),
)

TEMPLATES = {
    "events": "/api/v1/subjects/{subject}/events", "memories": "/api/v1/subjects/{subject}/memories",
    "memory": "/api/v1/subjects/{subject}/memories/{memory_id}",
    "history": "/api/v1/subjects/{subject}/memories/{memory_id}/history",
    "search": "/api/v1/subjects/{subject}/search", "context": "/api/v1/subjects/{subject}/context",
    "job": "/api/v1/jobs/{job_id}", "export": "/api/v1/exports/{export_id}",
}


def test_generated_requests_never_get_a_5xx_or_an_undocumented_answer(client_a, client_b):
    doc = OpenApiDocument()
    memory_ids = [write(client_a, "alice", "I am vegetarian.")["id"], write(client_b, "alice", "B's fact.")["id"]]
    job = post(client_a, "subjects/alice/events", {"event_id": "seed", "role": "user", "content": "hi"}).json()["job"]
    counts = Counter()
    spent = [0.0]

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(request=requests, pick=st.integers(0, 3))
    def one(request, pick):
        method, kind, subject, body = request
        template = TEMPLATES[kind]
        ids = {"memory_id": (memory_ids + ["mem_0", "nope"])[pick], "job_id": [job, "job_x", "", "job_" + "0" * 32][pick],
               "export_id": ["exp_" + "0" * 32, "exp_zz", "x", "exp_"][pick]}
        path = template.format(subject=quote(subject or "", safe=""), **{k: quote(v, safe="") for k, v in ids.items()})
        t0 = time.monotonic()
        if method == "RAW":
            response = client_a.generic("POST", path, body, content_type="application/json")
            method = "POST"
        elif method == "GET":
            response = client_a.get(path, body or {})
        else:
            response = getattr(client_a, method.lower())(path, body, format="json")
        counts[response.status_code] += 1
        spent[0] += time.monotonic() - t0
        if os.environ.get("API_FUZZ_SHOW") and response.status_code == 400:
            print(method, path[:60], str(body)[:100], response.content[:150])
        assert response.status_code < 500, (method, path, body, response.content[:300])
        assert response["Content-Type"].startswith("application/json"), (path, response["Content-Type"])
        payload = json.loads(response.content)
        if response.status_code == 404 and "error" in payload and payload["error"]["code"] == "not_found":
            return  # a path our router does not know at all (e.g. an encoded slash): JSON, not HTML
        doc.check(template, method, response.status_code, payload)

    started = time.monotonic()
    one()
    total = sum(counts.values())
    print(f"\nfuzz: {total} requests in {time.monotonic() - started:.0f}s, statuses {dict(sorted(counts.items()))}, "
          f"5xx: {sum(n for s, n in counts.items() if s >= 500)}, time in requests {spent[0]:.0f}s")
    assert total >= EXAMPLES
    assert counts[200] + counts[201] + counts[202] >= total // 20, "the generator must reach the success paths too"
