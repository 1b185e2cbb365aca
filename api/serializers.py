"""Input serializers: shapes and bounds only, no logic. Unknown fields are refused by name."""
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from rest_framework import serializers

from api.parsers import json_loads_strict, json_problem
from memoryapp.models import Event, Memory, SourceKind
from memoryapp.timebounds import MAX_TIME, MIN_TIME, utc_offset_problem
from memoryapp.readpolicy import PURPOSES_FIELD

MAX_CONTENT = 32_000
MAX_QUERY = 4_000
MAX_EVENTS = 1_000
MAX_ID = 200
MAX_NAMESPACE = 300
MAX_NAMESPACE_DEPTH = 8
MAX_METADATA_BYTES = 16_384
MAX_METADATA_DEPTH = 5
NAMESPACE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, naming them, instead of silently ignoring them."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(k) for k in data if k not in self.fields)
            if unknown:
                raise serializers.ValidationError({"unknown_fields": unknown})
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """Text only: a number or a boolean where text is expected is a mistake, not text."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class TimeField(serializers.DateTimeField):
    """ISO 8601; a time without an offset is taken as UTC."""

    def enforce_timezone(self, value):
        # Checked here, on the time as sent: DRF converts it to UTC next, losing its offset.
        problem = utc_offset_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return super().enforce_timezone(value)

    def to_internal_value(self, value):
        try:
            parsed = super().to_internal_value(value)
        except (OverflowError, OSError):
            self.fail("invalid", format="ISO 8601 with an offset")
        if not MIN_TIME <= parsed <= MAX_TIME:
            raise serializers.ValidationError("Time is out of range (1900 to 2200).")
        return parsed


class UnitField(serializers.FloatField):
    """A finite number from 0 to 1."""

    def __init__(self, **kwargs):
        super().__init__(min_value=0.0, max_value=1.0, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError("Must be a finite number.")
        return value


class FiniteFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError("Must be a finite number.")
        return value


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


class MetadataField(serializers.JSONField):
    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        if _depth(data) > MAX_METADATA_DEPTH:
            raise serializers.ValidationError(f"Nested deeper than {MAX_METADATA_DEPTH} levels.")
        problem = json_problem(data)  # checked by the body parser too, but not every door has one
        if problem:
            raise serializers.ValidationError(problem)
        if len(json.dumps(data, ensure_ascii=False).encode()) > MAX_METADATA_BYTES:
            raise serializers.ValidationError(f"Larger than {MAX_METADATA_BYTES} bytes.")
        return data


class NamespaceField(StrictCharField):
    """Slash-separated segments, e.g. "support-agent/preference"."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_blank", True)
        super().__init__(max_length=MAX_NAMESPACE, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data).strip("/")
        if value:
            segments = value.split("/")
            if len(segments) > MAX_NAMESPACE_DEPTH:
                raise serializers.ValidationError(f"At most {MAX_NAMESPACE_DEPTH} levels.")
            if not all(NAMESPACE_SEGMENT.match(s) for s in segments):
                raise serializers.ValidationError(
                    "Each level is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit."
                )
        return value


class EventMetadataField(MetadataField):
    """An event's metadata is free, except its "namespace": the worker files the memories drawn
    from the event under it, so it obeys a memory's namespace rules, checked here rather than
    found wrong by the worker later."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        if "namespace" in data:
            try:
                namespace = NamespaceField().run_validation(data["namespace"])
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({"namespace": exc.detail}) from None
            data = {**data, "namespace": namespace}
        return data


def text(max_length: int, **kwargs) -> serializers.CharField:
    return StrictCharField(max_length=max_length, trim_whitespace=False, **kwargs)


# Whitespace, format characters (zero-width spaces, joiners, BOM) and combining marks on
# their own: text made only of these shows nothing.
_INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me"})


def visible(value: str) -> str:
    return "".join(c for c in value if unicodedata.category(c) not in _INVISIBLE_CATEGORIES)


def not_only_whitespace(value: str) -> None:
    """Event content: something visible (an emoji or "?" is a message)."""
    # Text keeps its whitespace as sent (trim_whitespace=False), so "   " would pass as text.
    if not visible(value):
        raise serializers.ValidationError("Must contain something visible, not only whitespace or invisible "
                                          "characters.")


def says_something(value: str) -> None:
    """A memory's statement: at least one letter or digit ("." or an invisible character is no fact)."""
    if not any(c.isalnum() for c in visible(value)):
        raise serializers.ValidationError("Must contain at least one letter or digit.")


MAX_PURPOSES = 20


class PurposeField(StrictCharField):
    """A data purpose ("billing", "customer support"): any short text, compared exactly, so kept
    in one spelling (trimmed, spaces collapsed, lower case)."""

    def __init__(self, **kwargs):
        super().__init__(max_length=64, **kwargs)

    def to_internal_value(self, data):
        value = " ".join(super().to_internal_value(data).split()).lower()
        if not value:
            raise serializers.ValidationError("Must not be blank.")
        return value


def purposes_list(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=PurposeField(), max_length=MAX_PURPOSES, **kwargs)


def metadata_purposes(attrs: dict) -> dict:
    """A memory's purposes live in its metadata under the reserved `_purposes` (readpolicy.py):
    the `purposes` field is put there. A metadata that carries `_purposes` (a client sending back
    what it read) is held to the same rules; any other metadata key, `purposes` included, is the
    client's own and means nothing to the read policy."""
    metadata = attrs.get("metadata")
    if metadata is not None and PURPOSES_FIELD in metadata:
        if "purposes" in attrs:
            raise serializers.ValidationError({"purposes": ["Send purposes once: here or in metadata, not both."]})
        try:
            attrs["purposes"] = purposes_list().run_validation(metadata[PURPOSES_FIELD])
        except serializers.ValidationError as exc:
            raise serializers.ValidationError({"metadata": {PURPOSES_FIELD: exc.detail}}) from None
    if "purposes" in attrs:
        purposes = sorted(set(attrs.pop("purposes")))
        base = {k: v for k, v in (metadata or {}).items() if k != PURPOSES_FIELD}
        attrs["metadata"] = {**base, PURPOSES_FIELD: purposes} if purposes else base
    return attrs


class ReadPolicyIn(StrictSerializer):
    """What every read that recalls memories takes besides its own fields (readpolicy.py)."""

    purpose = PurposeField(required=False, help_text=(
        "Extension: why the memories are read. Memories written with purposes are seen only by a read for one of "
        "them; recorded in the read audit."))
    max_sensitivity = serializers.ChoiceField(
        choices=Memory.Sensitivity.choices, default="personal",
        help_text="Extension: the most sensitive level seen (public < internal < personal < special); the default "
                  "leaves `special` out.")


class EventIn(StrictSerializer):
    event_id = text(MAX_ID)
    role = serializers.ChoiceField(choices=Event.Role.choices)
    source = serializers.ChoiceField(choices=SourceKind.choices, required=False)
    content = text(MAX_CONTENT, validators=[not_only_whitespace])
    occurred_at = TimeField(required=False)
    session_id = text(MAX_ID, required=False, allow_blank=True)
    speaker = text(MAX_ID, required=False, allow_blank=True)
    metadata = EventMetadataField(required=False)


class EventBatchIn(StrictSerializer):
    events = serializers.ListField(child=EventIn(), min_length=1, max_length=MAX_EVENTS)


class MemoryIn(StrictSerializer):
    statement = text(MAX_CONTENT, validators=[says_something])
    memory_type = serializers.ChoiceField(choices=Memory.Type.choices, default=Memory.Type.SEMANTIC)
    namespace = NamespaceField(required=False, default="")
    source = serializers.ChoiceField(
        choices=SourceKind.choices, required=False,
        help_text="Who this comes from. Default: the highest source the key may claim (user_explicit unless the "
                  "key was created with --max-source); a claim above that is refused with 403 source_not_allowed.")
    key = text(MAX_ID, required=False, allow_blank=True, default="",
               help_text="Optional (entity, attribute) key, e.g. 'user:home_city': a new value supersedes the old.")
    valid_from = TimeField(required=False)
    confidence = UnitField(default=1.0)
    importance = UnitField(default=0.5)
    sensitivity = serializers.ChoiceField(choices=Memory.Sensitivity.choices, default=Memory.Sensitivity.PERSONAL)
    expires_at = TimeField(required=False, allow_null=True)
    metadata = MetadataField(required=False, default=dict)
    purposes = purposes_list(required=False, help_text=(
        "Extension: the only purposes this memory may be read for (none: any purpose). Stored as metadata "
        "`_purposes`."))
    exact_key = serializers.BooleanField(
        default=False,
        help_text="Extension, with `key`: the write is exactly this key's value (a key-value store's put). An "
                  "identical statement is reinforced only under the same key with the same metadata; otherwise "
                  "the write is a new version that supersedes the key's current value.")

    def validate(self, attrs):
        if attrs["exact_key"] and not attrs["key"]:
            raise serializers.ValidationError({"exact_key": ["Needs a key."]})
        return metadata_purposes(attrs)


class ConflictResolveIn(StrictSerializer):
    """Extension (issue 15): how the person settles a conflict."""

    resolution = serializers.ChoiceField(choices=["keep", "keep_all", "correct"])
    memory_id = text(MAX_ID, required=False, help_text="With keep: the memory that is right.")
    statement = text(MAX_CONTENT, required=False, validators=[says_something],
                     help_text="With correct: what is true instead.")

    def validate(self, attrs):
        if attrs["resolution"] == "keep" and not attrs.get("memory_id"):
            raise serializers.ValidationError({"memory_id": ["Required with resolution 'keep'."]})
        if attrs["resolution"] == "correct" and not attrs.get("statement"):
            raise serializers.ValidationError({"statement": ["Required with resolution 'correct'."]})
        return attrs


class MemoryCorrectionIn(StrictSerializer):
    statement = text(MAX_CONTENT, required=False, validators=[says_something])
    memory_type = serializers.ChoiceField(choices=Memory.Type.choices, required=False)
    namespace = NamespaceField(required=False)
    source = serializers.ChoiceField(choices=SourceKind.choices, required=False)
    valid_from = TimeField(required=False)
    confidence = UnitField(required=False)
    importance = UnitField(required=False)
    sensitivity = serializers.ChoiceField(choices=Memory.Sensitivity.choices, required=False)
    expires_at = TimeField(required=False, allow_null=True)
    metadata = MetadataField(required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Send at least one field to change.")
        return metadata_purposes(attrs) if "metadata" in attrs else attrs


class JsonObjectParam(StrictCharField):
    """A query parameter that holds a JSON object (e.g. `metadata={"topic": "food"}`)."""

    def to_internal_value(self, data):
        raw = super().to_internal_value(data)
        try:
            value = json_loads_strict(raw)
        except ValueError:
            raise serializers.ValidationError("Must be a JSON object.") from None
        return MetadataField().run_validation(value)


class MemoryListIn(StrictSerializer):
    status = serializers.ChoiceField(choices=Memory.Status.choices, required=False)
    memory_type = serializers.ChoiceField(choices=Memory.Type.choices, required=False)
    namespace = NamespaceField(required=False)
    q = text(500, required=False, allow_blank=True)
    cursor = text(200, required=False)
    limit = serializers.IntegerField(min_value=1, max_value=500, default=50)
    # Extensions (the LangGraph store's reads): an exact key, an exact namespace, metadata.
    key = text(MAX_ID, required=False, help_text="Extension: only memories with exactly this key.")
    namespace_match = serializers.ChoiceField(
        choices=["prefix", "exact"], default="prefix",
        help_text="Extension: `prefix` (default) matches the namespace and everything below it; `exact` only "
                  "the namespace itself (with `namespace` absent or empty: the top level).")
    metadata = JsonObjectParam(
        max_length=MAX_METADATA_BYTES, required=False,
        help_text='Extension: a JSON object the memory\'s metadata must contain (JSON containment: '
                  '`{"topic": "food"}` matches metadata with topic "food"; nested objects match by their own '
                  'keys; a list matches a list holding those items).')


class NamespacesIn(StrictSerializer):
    prefix = NamespaceField(required=False)
    cursor = text(MAX_NAMESPACE, required=False, allow_blank=True)
    limit = serializers.IntegerField(min_value=1, max_value=1000, default=500)


class SearchIn(ReadPolicyIn):
    query = text(MAX_QUERY)
    k = serializers.IntegerField(min_value=1, max_value=100, default=5)
    as_of = TimeField(required=False)
    memory_types = serializers.ListField(
        child=serializers.ChoiceField(choices=Memory.Type.choices), required=False, max_length=3
    )
    namespace = NamespaceField(required=False)
    include_superseded = serializers.BooleanField(default=False)
    min_score = FiniteFloatField(required=False, min_value=-10.0, max_value=10.0)
    working_namespace = NamespaceField(required=False, help_text=(
        "Extension: the namespace the caller works in. Memories filed there, above or below apply, and of a keyed "
        "fact the version in the narrowest of those wins. (`namespace` stays a prefix filter.)"))
    known_at = TimeField(required=False, help_text="Extension: answer as the store knew it at this time "
                         "(versions recorded by then, in the state they had then); `as_of` defaults to it.")


class ContextIn(ReadPolicyIn):
    query = text(MAX_QUERY)
    token_budget = serializers.IntegerField(min_value=1, max_value=100_000, default=1000)
    namespace = NamespaceField(required=False, help_text=(
        "Extension: the namespace the caller works in: memories filed there, above or below apply, and of a keyed "
        "fact the version in the narrowest at or above it wins."))
    known_at = TimeField(required=False, help_text="Extension: as in search. The profile, which is current, is left "
                         "out of a context asked as known at an earlier time.")


class ProfileIn(ReadPolicyIn):
    namespace = NamespaceField(required=False, help_text=(
        "Extension: the namespace the caller works in (as on context)."))


class HistoryIn(serializers.Serializer):
    # Not strict: v1 answered history whatever else the query string held, and still does.
    known_at = TimeField(required=False, help_text="Extension: the history as the store knew it at this time.")


class EmptyIn(StrictSerializer):
    """Endpoints that take no body still refuse one with fields in it."""
