"""memory_search's cost in round trips, and that the rows it loads in one statement are the rows
the ORM selectors would have given: same representation, same access counting, same scope."""
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from api.representations import memory_json
from api.views.search import hit_json
from memoryapp.context import context_build
from memoryapp.models import Memory
from memoryapp.retrieval import memory_search
from memoryapp.selectors.memories import memory_queryset
from memoryapp.services.events import EventInput, event_append
from memoryapp.services.memories import MemoryDraft, memory_write
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def write(tenant, subject, statement, actor, **kw):
    return memory_write(tenant=tenant, subject_ref=subject, draft=MemoryDraft(statement=statement, **kw),
                        actor=actor).memory


def history(tenant, actor, subject="alice"):
    """Memories with every relation memory_json shows: source event and evidence, a superseded
    version, a derived summary, and plain explicit facts."""
    start = timezone.now() - timedelta(days=40)
    events = [EventInput(event_id=f"e{i}", role="user", content=text, speaker="Alice", session_id="s1",
                         occurred_at=start + timedelta(minutes=i))
              for i, text in enumerate(["I adopted a dog called Pickles.", "Pickles loves the beach.",
                                        "We walk on the beach every Sunday."])]
    appended, _ = event_append(tenant=tenant, subject_ref=subject, events=events, actor=actor)
    episodes = [write(tenant, subject, f"Alice: {item.event.content}", actor, memory_type="episodic",
                      source_kind="user", source_event=item.event, evidence=[item.event],
                      valid_from=item.event.occurred_at) for item in appended]
    old = write(tenant, subject, "I live in Lisbon.", actor, key="user:home_city", valid_from=start)
    new = write(tenant, subject, "I moved to Porto.", actor, key="user:home_city",
                valid_from=start + timedelta(days=20))
    summary = write(tenant, subject, "Alice walks her dog Pickles on the beach on Sundays.", actor,
                    derived_from=episodes[1:], evidence=[a.event for a in appended[1:]],
                    metadata={"kind": "summary"}, flags=["consolidated"])
    for i in range(8):
        write(tenant, subject, f"Alice's note number {i} about her week.", actor)
    return {"episodes": episodes, "old": old, "new": new, "summary": summary}


def test_a_search_naming_no_one_costs_two_queries_whatever_k(tenant_a, actor):
    history(tenant_a, actor)
    counts = {}
    for k in (1, 5, 50):
        with CaptureQueriesContext(connection) as ctx:
            hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does the dog walk?", k=k)
        counts[k] = len(ctx.captured_queries)
        assert len(hits) == min(k, 13)
    assert counts == {1: 2, 5: 2, 50: 2}


def test_a_query_naming_someone_costs_one_more_small_query(tenant_a, actor):
    # The subject's speakers decide whether a name is who said it or words to match
    # (retrieval.search_text); the lookup is one statement, tenant binding included.
    history(tenant_a, actor)
    for query in ("Where does Alice walk the dog?", "Where does Pickles walk?"):
        with CaptureQueriesContext(connection) as ctx:
            hits = memory_search(tenant=tenant_a, subject_ref="alice", query=query, k=50)
        assert len(hits) == 13 and len(ctx.captured_queries) == 3
        assert "SELECT speakers FROM memoryapp_subject" in ctx.captured_queries[0]["sql"]


def test_search_results_are_shown_without_further_queries(tenant_a, actor):
    made = history(tenant_a, actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Pickles beach Porto Lisbon", k=50,
                         include_superseded=True)
    assert {made["old"].pk, made["new"].pk, made["summary"].pk} <= {h.memory.pk for h in hits}
    with CaptureQueriesContext(connection) as ctx:
        shown = [hit_json(h) for h in hits]
        lines = [(h.memory.subject.external_id, h.memory.is_untrusted, h.memory.valid_from) for h in hits]
    assert len(ctx.captured_queries) == 0
    assert len(shown) == len(lines) == len(hits)


def test_search_rows_show_as_the_selector_rows_do(tenant_a, actor):
    made = history(tenant_a, actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Pickles beach Porto Lisbon", k=50,
                         include_superseded=True)
    rows = {m.pk: m for m in memory_queryset(tenant=tenant_a).filter(pk__in=[h.memory.pk for h in hits])}
    assert len(rows) == len(hits) == 14
    for hit in hits:
        assert memory_json(hit.memory) == memory_json(rows[hit.memory.pk])
    by_pk = {h.memory.pk: memory_json(h.memory) for h in hits}
    assert by_pk[made["old"].pk]["superseded_by"] == made["new"].public_id
    assert by_pk[made["new"].pk]["supersedes"] == [made["old"].public_id]
    assert by_pk[made["summary"].pk]["derived_from"] == [m.public_id for m in made["episodes"][1:]]
    assert by_pk[made["summary"].pk]["evidence"] == ["e1", "e2"]
    assert by_pk[made["episodes"][0].pk]["source"] == {"kind": "user", "event_id": "e0"}


def test_a_search_itself_counts_no_access(tenant_a, actor):
    """Accesses are counted from the read audit by the worker (tests/api/test_access_counts.py)."""
    history(tenant_a, actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Pickles", k=3)
    assert hits
    assert Memory.objects.filter(tenant=tenant_a, access_count__gt=0).count() == 0


def test_a_loaded_relation_queried_further_stays_within_its_memory(tenant_a, actor):
    made = history(tenant_a, actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Pickles on the beach", k=50)
    summary = next(h.memory for h in hits if h.memory.pk == made["summary"].pk)
    assert sorted(summary.evidence.filter(event_id__startswith="e").values_list("event_id", flat=True)) == ["e1", "e2"]
    assert summary.evidence.count() == 2 and summary.derived_from.exists()
    assert summary.derived_from.order_by("recorded_at").first().pk == made["episodes"][1].pk
    assert summary.source_event is None
    episode = next(h.memory for h in hits if h.memory.pk == made["episodes"][0].pk)
    assert episode.source_event.content == "I adopted a dog called Pickles."  # deferred: loaded on access


def test_a_loaded_relation_iterated_or_updated_afresh_touches_only_its_memory(tenant_a, actor):
    # iterator() and update() build their query from the queryset itself, not from a copy of it:
    # they must still be filtered on the hit's memory, never the whole (tenant's) table.
    made = history(tenant_a, actor)
    write(tenant_a, "bob", "Bob walks Pickles too.", actor)
    hits = memory_search(tenant=tenant_a, subject_ref="alice", query="Pickles on the beach", k=50)
    summary = next(h.memory for h in hits if h.memory.pk == made["summary"].pk)
    assert sorted(e.event_id for e in summary.evidence.iterator()) == ["e1", "e2"]
    assert sorted(m.pk for m in summary.derived_from.iterator()) == sorted(m.pk for m in made["episodes"][1:])
    assert summary.derived_from.update(importance=0.11) == 2
    assert Memory.objects.filter(tenant=tenant_a, importance=0.11).count() == 2
    # A relation loaded empty (the summary supersedes nothing) finds nothing however it is asked.
    assert list(summary.supersedes.all()) == [] and list(summary.supersedes.iterator()) == []
    assert summary.supersedes.filter(tenant=tenant_a).count() == 0
    assert summary.supersedes.update(importance=0.22) == 0
    assert not Memory.objects.filter(importance=0.22).exists()


def test_search_of_another_tenant_or_subject_finds_none_of_these_rows(tenant_a, tenant_b, actor):
    history(tenant_a, actor)
    write(tenant_a, "bob", "Bob has a cat.", actor)
    assert memory_search(tenant=tenant_b, subject_ref="alice", query="Pickles", k=50) == []
    hits = memory_search(tenant=tenant_a, subject_ref="bob", query="Pickles", k=50)
    assert [h.memory.statement for h in hits] == ["Bob has a cat."]
    assert Memory.objects.filter(tenant=tenant_a, subject__external_id="alice", access_count__gt=0).count() == 0


def test_context_build_costs_three_queries(tenant_a, actor):
    # The search's two, and one for the profile, which the context always loads (issue 15).
    history(tenant_a, actor)
    with CaptureQueriesContext(connection) as ctx:
        built = context_build(tenant=tenant_a, subject_ref="alice", query="Where does the dog walk?",
                              token_budget=200)
    assert built["memories"] and len(ctx.captured_queries) == 3


def test_the_search_and_context_endpoints_cost_the_same_queries_whatever_k(tenant_a, actor):
    from tests.api.conftest import make_client, post

    history(tenant_a, actor)
    client = make_client(tenant_a)
    post(client, "subjects/alice/search", {"query": "warm up"})  # a key's first use records it once
    counts = []
    for path, body in (("search", {"query": "Pickles", "k": 1}), ("search", {"query": "Pickles", "k": 50}),
                       ("context", {"query": "Pickles", "token_budget": 50}),
                       ("context", {"query": "Pickles", "token_budget": 2000})):
        with CaptureQueriesContext(connection) as ctx:
            response = post(client, f"subjects/alice/{path}", body)
        assert response.status_code == 200, response.content
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] and counts[2] == counts[3], [q["sql"][:80] for q in ctx.captured_queries]


def test_with_server_side_binding_the_tenant_is_bound_by_its_own_statement(tenant_a, actor, monkeypatch):
    history(tenant_a, actor)
    together = memory_search(tenant=tenant_a, subject_ref="alice", query="the dog", k=5)
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "server_side_binding", True)
    with CaptureQueriesContext(connection) as ctx:
        apart = memory_search(tenant=tenant_a, subject_ref="alice", query="the dog", k=5)
    assert ctx.captured_queries[0]["sql"].startswith("SELECT set_config") and len(ctx.captured_queries) == 3
    assert [h.memory.pk for h in apart] == [h.memory.pk for h in together]
    assert [h.score for h in apart] == pytest.approx([h.score for h in together], abs=1e-5)  # recency moved on
    # A query naming a speaker reads the subject's speakers first, bound the same way.
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "server_side_binding", False)
    named = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does Alice walk?", k=5)
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "server_side_binding", True)
    with CaptureQueriesContext(connection) as ctx:
        named_apart = memory_search(tenant=tenant_a, subject_ref="alice", query="Where does Alice walk?", k=5)
    assert len(ctx.captured_queries) == 5 and "SELECT speakers" in ctx.captured_queries[1]["sql"]
    assert [h.memory.pk for h in named_apart] == [h.memory.pk for h in named]


def test_a_memory_valid_since_centuries_ago_is_searched_and_not_a_500(tenant_a, actor):
    """The recency prior is exp(-ln 2 * age / half-life): at 300 years and 90 days PostgreSQL's
    exp() underflowed ("value out of range") and the search failed (found by the API fuzz test)."""
    from datetime import datetime, timezone as dt_timezone

    old = write(tenant_a, "alice", "I like food from my grandmother's village.", actor,
                valid_from=datetime(1700, 1, 1, tzinfo=dt_timezone.utc))
    with as_tenant(tenant_a):
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query="food", k=5)
    assert [h.memory.pk for h in hits] == [old.pk]
