from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    """Who caused a change, as the audit log names it: an API key, a console user, a worker."""

    kind: str  # one of AuditEntry.ActorKind
    id: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}" if self.id else self.kind


WORKER = Actor("worker", "extraction")
SYSTEM = Actor("system")
