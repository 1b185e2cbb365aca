"""The ranking statement is parsed for its placeholders once per process, not once per search
(memoryapp/dbbackend/base.py)."""
import pytest
from psycopg import _queries

from memoryapp.retrieval import memory_search
from memoryapp.services.memories import MemoryDraft, memory_write
from tests.conftest import as_tenant


@pytest.mark.django_db
def test_a_second_search_parses_no_statement_anew(tenant_a, actor, monkeypatch):
    memory_write(tenant=tenant_a, subject_ref="alice", actor=actor,
                 draft=MemoryDraft(statement="I keep bees on the allotment"))
    split = _queries._split_query
    parsed = []
    monkeypatch.setattr(_queries, "_split_query", lambda query, *args, **kw: parsed.append(len(query)) or split(query, *args, **kw))
    with as_tenant(tenant_a):
        memory_search(tenant=tenant_a, subject_ref="alice", query="what do I keep?")
        parsed.clear()  # (the first may parse: another test may not have searched before)
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query="what do I keep?")
    assert hits and "bees" in hits[0].memory.statement
    assert parsed == []
