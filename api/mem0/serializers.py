"""Input shapes of the mem0 routes: shapes and bounds only. mem0 Platform options we do not
have are taken off first (mem0_extras) and answered with a note; anything else unknown is
refused by name, like on the v1 API."""
from datetime import UTC

from rest_framework import serializers

from api.serializers import (
    MAX_CONTENT,
    MAX_QUERY,
    EventMetadataField,
    StrictSerializer,
    UnitField,
    not_only_whitespace,
    says_something,
    text,
)
from memoryapp.timebounds import MAX_TIME, MIN_TIME

MAX_MESSAGES = 1000
ROLES = ("user", "assistant", "system", "tool")

# Platform features with no counterpart here: accepted so an unchanged client keeps working,
# ignored, and named in the answer's `notes`.
PLATFORM_EXTRAS = frozenset({
    "custom_categories", "custom_instructions", "agent_custom_instructions", "structured_data_schema",
    "includes", "excludes", "immutable", "enable_graph", "output_format", "version", "async_mode",
    "categories", "rerank", "keyword_search", "fields", "show_expired", "reference_date", "latest_only",
    "org_id", "project_id", "webhook_url", "webhooks", "memory_depth", "usecase_setting", "multilingual",
    "filter_memories", "top_p", "batch_size", "delete_linked",
})


def mem0_extras(data) -> tuple[dict, list[str]]:
    """`data` without the Platform-only options, and a note per option dropped."""
    if not isinstance(data, dict):
        raise serializers.ValidationError({"non_field_errors": ["The body must be a JSON object."]})
    kept, notes = {}, []
    for key, value in data.items():
        if key in PLATFORM_EXTRAS:
            notes.append(f"'{key}' is a mem0 Platform option this service does not support; it was ignored.")
        else:
            kept[key] = value
    return kept, notes


class UnixTimeField(serializers.IntegerField):
    """mem0's `timestamp`: seconds since 1970, as an aware datetime."""

    def to_internal_value(self, data):
        from datetime import datetime

        if isinstance(data, bool):
            self.fail("invalid")
        seconds = super().to_internal_value(data)
        try:
            value = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise serializers.ValidationError("Time is out of range (1900 to 2200).") from None
        if not MIN_TIME <= value <= MAX_TIME:
            raise serializers.ValidationError("Time is out of range (1900 to 2200).")
        return value


class ExpirationDateField(serializers.DateField):
    """mem0's `expiration_date` (YYYY-MM-DD): the memory stops holding at the start of that day (UTC)."""

    def to_internal_value(self, value):
        from datetime import datetime, time

        day = super().to_internal_value(value)
        moment = datetime.combine(day, time.min, tzinfo=UTC)
        if not MIN_TIME <= moment <= MAX_TIME:
            raise serializers.ValidationError("Date is out of range (1900 to 2200).")
        return moment


class MessageIn(StrictSerializer):
    role = serializers.ChoiceField(choices=ROLES)
    content = text(MAX_CONTENT, validators=[not_only_whitespace])
    name = text(200, required=False, allow_blank=True)


class AddIn(StrictSerializer):
    messages = serializers.ListField(child=MessageIn(), min_length=1, max_length=MAX_MESSAGES)
    filters = serializers.JSONField(required=False)
    metadata = EventMetadataField(required=False, default=dict)
    infer = serializers.BooleanField(default=True)
    timestamp = UnixTimeField(required=False)
    expiration_date = ExpirationDateField(required=False, allow_null=True)


class SearchIn(StrictSerializer):
    query = text(MAX_QUERY)
    filters = serializers.JSONField(required=False)
    top_k = serializers.IntegerField(min_value=1, max_value=100, default=10)
    threshold = UnitField(required=False, allow_null=True)
    metadata = serializers.JSONField(required=False)


class ListIn(StrictSerializer):
    filters = serializers.JSONField(required=False)
    start_date = serializers.DateTimeField(required=False)
    end_date = serializers.DateTimeField(required=False)


class PageIn(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=1_000_000, default=1)
    page_size = serializers.IntegerField(min_value=1, max_value=500, default=100)


class UpdateIn(StrictSerializer):
    text = text(MAX_CONTENT, required=False, validators=[says_something])
    metadata = EventMetadataField(required=False)
    timestamp = UnixTimeField(required=False)
    expiration_date = ExpirationDateField(required=False, allow_null=True)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Send at least one of text, metadata, timestamp, expiration_date.")
        return attrs
