from django import template

register = template.Library()

SOURCE_LABELS = {
    "user_explicit": "You said so explicitly",
    "user": "From your conversation",
    "assistant": "Said by the assistant",
    "tool": "From a tool",
    "external": "From an outside source",
    "system": "From the system",
}


@register.filter
def source_label(kind: str) -> str:
    return SOURCE_LABELS.get(kind, kind)


@register.filter
def trust_label(kind: str) -> str:
    """How far a source is trusted, in words: outside content is kept as evidence only."""
    if kind == "external":
        return "untrusted"
    if kind in ("user_explicit", "user"):
        return "trusted: from you"
    return "trusted"


@register.filter
def percent(value) -> str:
    try:
        return f"{round(float(value) * 100)}%"
    except (TypeError, ValueError):
        return ""


@register.filter
def humanize_action(action: str) -> str:
    return action.replace("_", " ")
