"""A query that names a calendar period ("on 7 July, 2023", "in June 2022", "during 2024")
prefers memories that became valid then, or in the two weeks after (events are told about at or
after they happen). A soft preference, never a filter, and nothing without a year."""
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memoryapp.query import query_periods, query_understand
from memoryapp.retrieval import PERIOD_AFTER_DAYS, RELEVANCE, Signals, memory_search, period_match, relevance_scores
from memoryapp.services.memories import MemoryDraft, memory_write


def utc(*args):
    return datetime(*args, tzinfo=timezone.utc)


def days(*dates):
    return np.array([d.timestamp() / 86400 for d in dates])


@pytest.mark.parametrize("query,expected", [
    ("What did Maria plan on the evening of 7 July, 2023?", [(utc(2023, 7, 7), utc(2023, 7, 8))]),
    ("What book did Tim finish on 8th December, 2023?", [(utc(2023, 12, 8), utc(2023, 12, 9))]),
    ("What did she mention on November 11, 2023?", [(utc(2023, 11, 11), utc(2023, 11, 12))]),
    ("Who joined the family in May 2022?", [(utc(2022, 5, 1), utc(2022, 6, 1))]),
    ("What happened in December 2023?", [(utc(2023, 12, 1), utc(2024, 1, 1))]),
    ("What charity event did Tim organize during 2024?", [(utc(2024, 1, 1), utc(2025, 1, 1))]),
    ("Between June 2022 and 2 March, 2023?", [(utc(2023, 3, 2), utc(2023, 3, 3)), (utc(2022, 6, 1), utc(2022, 7, 1))]),
])
def test_periods_are_read_from_dates_months_and_years(query, expected):
    assert list(query_periods(query)) == expected
    assert list(query_understand(query).periods) == expected


@pytest.mark.parametrize("query", [
    "What happened in May?",  # no year: any May
    "What did she do on 25 May?",
    "Has he lived there since 2020?",  # a boundary, not a period
    "What changed since June 2022?", "What did she do before 7 July, 2023?", "Anything after May 2023?",
    "Did she keep all of 2000 photos?", "Were there really in 2000 photos?", "April, 2000 people came",  # counts
    "What did she plan for 31 February, 2023?",  # no such day
    "in May 0000", "December 9999", "31 December, 9999", "in May \uff10\uff10\uff10\uff10",  # out of range
    "Au\u0262ust 2023", "\u017feptember 2023", "APR\u0130L 2023",  # letters that only case-fold to ASCII
    "What does the user like to eat?",
])
def test_no_period_without_a_year_or_a_real_date(query):
    assert query_periods(query) == ()
    assert query_understand(query).periods == ()


def signals(valid_from_days):
    n = len(valid_from_days)
    return Signals(
        ids=list(range(n)), sim=np.full(n, 0.5), bm25=np.ones(n), session=["s"] * n, seq=[None] * n,
        speaker=[""] * n, has_time=np.zeros(n, bool), age_days=np.zeros(n), importance=np.full(n, 0.5),
        confidence=np.ones(n), untrusted=np.zeros(n, bool), valid_from_days=np.asarray(valid_from_days),
    )


def test_period_fit_is_one_inside_and_fades_over_the_days_after():
    sig = signals(days(utc(2023, 7, 6, 23), utc(2023, 7, 7, 9), utc(2023, 7, 8) + timedelta(days=PERIOD_AFTER_DAYS / 2),
                       utc(2023, 7, 8) + timedelta(days=PERIOD_AFTER_DAYS + 1)))
    fit = period_match(sig, query_periods("on 7 July, 2023"))
    assert fit.tolist() == pytest.approx([0.0, 1.0, 0.5, 0.0])


def test_a_dated_query_prefers_what_became_valid_then_and_others_rank_as_before():
    sig = signals(days(utc(2023, 3, 1), utc(2023, 7, 7, 12)))
    dated, _ = relevance_scores(sig, query_understand("What did she cook on 7 July, 2023?"))
    undated, _ = relevance_scores(sig, query_understand("What did she cook?"))
    off, _ = relevance_scores(sig, query_understand("What did she cook on 7 July, 2023?"), {**RELEVANCE, "period": 0})
    # A date no memory in scope fits changes nothing, not even the scale min_score compares with.
    unfitted, _ = relevance_scores(sig, query_understand("What did she cook on 7 July, 2021?"))
    assert dated[1] > dated[0]
    assert undated[1] == undated[0] and off.tolist() == undated.tolist() == unfitted.tolist()


@pytest.mark.django_db
def test_memory_search_prefers_the_memory_from_the_named_day(tenant_a, tenant_b, actor):
    # Two equally worded memories a year apart: the query's date decides, and another tenant's
    # memory from that very day never appears.
    def write(tenant, statement, valid_from):
        return memory_write(tenant=tenant, subject_ref="alice", actor=actor, draft=MemoryDraft(
            statement=statement, memory_type="episodic", valid_from=valid_from)).memory

    older = write(tenant_a, "We baked a lemon cake for Anna's party.", utc(2022, 7, 7, 18))
    newer = write(tenant_a, "We baked a lemon cake for Ben's party.", utc(2023, 7, 9, 18))  # told two days later
    write(tenant_b, "We baked a lemon cake for Anna's party.", utc(2022, 7, 7, 18))
    # A memory valid from the very first instant of the named month fits it (read back from the
    # database exactly, not rebuilt from its age).
    midnight = write(tenant_a, "We baked a lemon cake for Cleo's party.", utc(2024, 3, 1))
    for query, first in (("What cake did we bake on 7 July, 2022?", older), ("What cake did we bake in July 2023?", newer),
                         ("What cake did we bake in March 2024?", midnight)):
        hits = memory_search(tenant=tenant_a, subject_ref="alice", query=query, k=5)
        assert [h.memory.pk for h in hits][0] == first.pk
        assert {h.memory.tenant_id for h in hits} == {tenant_a.pk} and len(hits) == 3
