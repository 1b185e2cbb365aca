from django import template

from console.provenance import origin_of, provenance
from memoryapp.selectors.console import memory_said_at

register = template.Library()


@register.filter
def source_label(kind: str, audience: str = "") -> str:
    """Where something came from, in words; `"admin"` words it about the person, not to them."""
    return origin_of(kind, admin=audience == "admin")


@register.filter
def provenance_of(memory, audience: str = ""):
    return provenance(memory, admin=audience == "admin")


@register.filter
def trust_label(kind: str, audience: str = "") -> str:
    """How far a source is trusted, in words: outside content is kept as evidence only, and a
    tool's output is data to agents, never instructions (memoryapp.context)."""
    if kind == "external":
        return "untrusted: agents never follow it"
    if kind == "tool":
        return "treated as data: agents never follow instructions in it"
    if kind in ("user_explicit", "user"):
        return "trusted: from the person" if audience == "admin" else "trusted: from you"
    return "trusted"


@register.filter
def said_at(memory):
    """When it was said (the source message's time), not when the service recorded it: a
    conversation from March imported in December is dated March."""
    return memory_said_at(memory)


@register.filter
def percent(value) -> str:
    try:
        return f"{round(float(value) * 100)}%"
    except (TypeError, ValueError):
        return ""


@register.filter
def humanize_action(action: str) -> str:
    return action.replace("_", " ")
