"""What forgetting one memory takes with it, and what it keeps: a read, shown to the person
before they confirm (console) and carried out by memory_forget (services/memories.py)."""
from dataclasses import dataclass

from django.db.models import Q

from memoryapp.models import Memory, MemoryEvidence

# Regenerable copies of the messages they were made from: rebuilt by the next consolidation.
SUMMARY_KIND = "session_summary"


def _descendants_of(*, tenant_id, ids) -> dict:
    """Everything derived from the memories `ids`, transitively (summaries of summaries
    included), by pk; the memories themselves left out."""
    found: dict = {}
    roots = set(ids)
    frontier = list(roots)
    while frontier:
        children = list(
            Memory.objects.filter(tenant_id=tenant_id, source_links__source_id__in=frontier).distinct()
        )
        frontier = [c.pk for c in children if c.pk not in found and c.pk not in roots]
        for child in children:
            if child.pk not in roots:
                found.setdefault(child.pk, child)
    return found


def memory_descendants(*, memory: Memory) -> list[Memory]:
    """Everything derived from `memory`, transitively (summaries of summaries included)."""
    return list(_descendants_of(tenant_id=memory.tenant_id, ids=[memory.pk]).values())


def _is_summary(memory: Memory) -> bool:
    return isinstance(memory.metadata, dict) and memory.metadata.get("kind") == SUMMARY_KIND


@dataclass
class ForgetPlan:
    """What forgetting one memory takes with it, and what it keeps."""

    memory: Memory
    versions: list[Memory]  # the memory and every version it replaced (and what they retired)
    evidence_episodes: list[Memory]  # the messages that state it, as episodes
    derived: list[Memory]  # summaries, merges, proposals and facts made from any of the above
    event_ids: list  # the source messages themselves
    kept: list[Memory]  # other memories drawn from those messages: kept, their link to them removed

    @property
    def memories(self) -> list[Memory]:
        return [*self.versions, *self.evidence_episodes, *self.derived]


def memory_forget_plan(*, memory: Memory) -> ForgetPlan:
    """Everything that states what `memory` says: its earlier versions (a current fact
    forgotten must not come back through the value it replaced being "history"), the messages it
    was drawn from (as events and as episodes), whatever was derived from any of them, the other
    members of a merge it is part of (near-duplicates: copies of it), and proposals to replace
    it. An episode forgotten takes the facts extracted from its message with it.

    Another memory drawn from the same message is not forgotten (the person did not ask), but
    loses its link to the erased message; the plan names it under `kept`. Only a session summary
    citing the message goes with it: it is a regenerable copy of the messages."""
    tenant_id = memory.tenant_id
    live = Memory.objects.filter(tenant_id=tenant_id, erasing=False)
    versions = {memory.pk: memory}
    frontier = [memory.pk]
    while frontier:
        earlier = list(live.filter(superseded_by_id__in=frontier).exclude(pk__in=list(versions)))
        for m in earlier:
            versions[m.pk] = m
        frontier = [m.pk for m in earlier]
    # The messages that state it: a fact's evidence (each restatement reinforced it) and every
    # version's own source. An episode's other evidence is context, not a statement of it.
    facts = [pk for pk, m in versions.items() if m.memory_type != Memory.Type.EPISODIC]
    events = set(MemoryEvidence.objects.filter(tenant_id=tenant_id, memory_id__in=facts)
                 .values_list("event_id", flat=True))
    events |= {m.source_event_id for m in versions.values() if m.source_event_id}
    episodes = {m.pk: m for m in live.filter(source_event_id__in=events, memory_type=Memory.Type.EPISODIC)
                .exclude(pk__in=list(versions))}
    doomed = {**versions, **episodes}
    derived: dict = {}
    if memory.memory_type == Memory.Type.EPISODIC and memory.source_event_id:
        for fact in live.filter(source_event_id=memory.source_event_id).exclude(pk__in=list(doomed)):
            derived.setdefault(fact.pk, fact)
    for summary in live.filter(Q(evidence_links__event_id__in=events) | Q(source_event_id__in=events)).distinct():
        if _is_summary(summary) and summary.pk not in doomed:
            derived.setdefault(summary.pk, summary)
    # Until nothing new: what was made from the doomed, the members of a doomed merge, and
    # proposals to replace a doomed memory.
    while True:
        taken = {**doomed, **derived}
        grown = dict(_descendants_of(tenant_id=tenant_id, ids=list(taken)))
        grown.update({m.pk: m for m in live.filter(derived_links__derived_id__in=list(taken),
                                                   derived_links__kind="consolidated").distinct()})
        grown.update({m.pk: m for m in live.filter(proposal_for_id__in=list(taken))})
        new = {pk: m for pk, m in grown.items() if pk not in taken}
        if not new:
            break
        derived.update(new)
    taken = {**doomed, **derived}
    kept = [m for m in live.filter(Q(evidence_links__event_id__in=events) | Q(source_event_id__in=events))
            .distinct() if m.pk not in taken]
    return ForgetPlan(
        memory=memory,
        versions=sorted(versions.values(), key=lambda m: (m.valid_from, m.recorded_at)),
        evidence_episodes=list(episodes.values()),
        derived=list(derived.values()),
        event_ids=sorted(events, key=str),
        kept=kept,
    )
