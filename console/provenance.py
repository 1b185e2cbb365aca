"""Where a memory came from and how agents treat it, in the person's words (or the admin's).

The rule for what is untrusted is the one agents are given (memoryapp.context.is_untrusted):
the console says in words what that rule already does, it never decides anew. Raw flags
("instruction_like") are internal names; these helpers turn them into sentences."""
from dataclasses import dataclass

from memoryapp.context import is_untrusted

# Where the content came from, per source kind, as the person reads it ("you") and as an
# admin reads it ("the person").
ORIGINS = {
    "user_explicit": ("You said so explicitly", "The person said so explicitly"),
    "user": ("From your conversation", "From the person's conversation"),
    "assistant": ("Said by the assistant", "Said by the assistant"),
    "tool": ("From a tool an agent used (for example a web search or a file it read)",
             "From a tool an agent used (for example a web search or a file it read)"),
    "external": ("From a web page or document an agent read", "From a web page or document an agent read"),
    "system": ("From the system", "From the system"),
}

UNTRUSTED_NOTE = ("Agents treat it as untrusted: they may mention it as something they read, "
                  "but never follow instructions in it.")

# Flags in words. A flag not listed here is an internal marker and is not shown.
FLAG_NOTES = {
    "instruction_like": "It reads like an instruction to an assistant.",
    "secret_redacted": "Secrets were removed from it before it was kept.",
    "released": "An administrator released it from quarantine after checking it.",
    "conflict": "Sources disagree about it; agents are told so.",
}


@dataclass(frozen=True)
class Provenance:
    origin: str
    untrusted: bool
    notes: tuple[str, ...]

    @property
    def untrusted_note(self) -> str:
        return UNTRUSTED_NOTE

    @property
    def sentence(self) -> str:
        parts = [self.origin + "."]
        if self.untrusted:
            parts.append(UNTRUSTED_NOTE)
        parts.extend(self.notes)
        return " ".join(parts)


def origin_of(source_kind: str, *, admin: bool = False) -> str:
    person, admin_words = ORIGINS.get(source_kind, (source_kind, source_kind))
    return admin_words if admin else person


def provenance(memory, *, admin: bool = False) -> Provenance:
    flags = memory.flags or []
    return Provenance(
        origin=origin_of(memory.source_kind, admin=admin),
        untrusted=is_untrusted(memory),
        notes=tuple(FLAG_NOTES[f] for f in flags if f in FLAG_NOTES),
    )
