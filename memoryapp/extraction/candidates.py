from dataclasses import dataclass, field

KINDS = ("fact", "preference", "plan", "correction", "procedure")
DECISIONS = ("add", "update", "none")


@dataclass
class Candidate:
    """One durable memory an extractor proposes from one event (the event is its evidence).

    `decision` is "update" when the statement replaces an earlier value (a correction cue, or an
    LLM saying so); the write policy still decides whether it may, by source authority.
    """

    statement: str
    kind: str = "fact"
    key: str = ""
    value: str = ""
    confidence: float = 0.8
    importance: float = 0.6
    memory_type: str = "semantic"
    namespace: str = ""
    sensitivity: str = "personal"
    decision: str = "add"
    explicit: bool = False  # the user asked for it to be remembered
    metadata: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "statement": self.statement, "kind": self.kind, "key": self.key, "value": self.value,
            "confidence": self.confidence, "importance": self.importance, "memory_type": self.memory_type,
            "namespace": self.namespace, "decision": self.decision,
        }
