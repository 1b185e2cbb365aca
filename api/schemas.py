"""OpenAPI descriptions: output serializers for the shapes api/representations.py builds, the
bearer-key security scheme, and the error object. Used by drf-spectacular only."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from memoryapp.models import Event, Job, Memory, SourceKind


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer <key>"}


class ErrorDetailOut(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorOut(serializers.Serializer):
    error = ErrorDetailOut()


class SourceOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SourceKind.choices)
    event_id = serializers.CharField(allow_null=True)


class IndexVersionsOut(serializers.Serializer):
    embedding = serializers.CharField()
    extractor = serializers.CharField()


class MemoryOut(serializers.Serializer):
    id = serializers.CharField(help_text="mem_<hex>")
    subject = serializers.CharField()
    memory_type = serializers.ChoiceField(choices=Memory.Type.choices)
    namespace = serializers.CharField()
    statement = serializers.CharField()
    status = serializers.ChoiceField(choices=Memory.Status.choices)
    source = SourceOut()
    evidence = serializers.ListField(child=serializers.CharField())
    confidence = serializers.FloatField()
    importance = serializers.FloatField()
    sensitivity = serializers.ChoiceField(choices=Memory.Sensitivity.choices)
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    recorded_at = serializers.DateTimeField()
    supersedes = serializers.ListField(child=serializers.CharField())
    superseded_by = serializers.CharField(allow_null=True)
    derived_from = serializers.ListField(child=serializers.CharField())
    expires_at = serializers.DateTimeField(allow_null=True)
    metadata = serializers.DictField()
    index_versions = IndexVersionsOut()
    key = serializers.CharField()
    flags = serializers.ListField(child=serializers.CharField())
    trust = serializers.ChoiceField(choices=["trusted", "untrusted"])
    status_reason = serializers.CharField(help_text='Why it is in its status, e.g. "outranked": a source of '
                                                    'higher authority said otherwise, so it never held.')
    proposal_for = serializers.CharField(allow_null=True, help_text="For a procedure waiting for approval: "
                                         "the memory it replaces once approved (that one stays current until then).")


class ScoredMemoryOut(MemoryOut):
    score = serializers.FloatField()
    score_details = serializers.DictField()


class MemoryPageOut(serializers.Serializer):
    results = MemoryOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class NamespaceOut(serializers.Serializer):
    namespace = serializers.CharField(help_text='"" is the top level.')
    memories = serializers.IntegerField(help_text="How many active memories it holds itself.")
    last_recorded_at = serializers.DateTimeField()


class NamespacePageOut(serializers.Serializer):
    namespaces = NamespaceOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class EventSourceOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SourceKind.choices)


class EventOut(serializers.Serializer):
    id = serializers.CharField()
    event_id = serializers.CharField()
    role = serializers.ChoiceField(choices=Event.Role.choices)
    source = EventSourceOut()
    content = serializers.CharField()
    occurred_at = serializers.DateTimeField()
    recorded_at = serializers.DateTimeField()
    session_id = serializers.CharField()
    speaker = serializers.CharField()
    metadata = serializers.DictField()
    status = serializers.ChoiceField(choices=Event.Status.choices)
    redacted = serializers.BooleanField()
    quarantined = serializers.BooleanField()
    flags = serializers.ListField(child=serializers.CharField())
    trust = serializers.ChoiceField(choices=["trusted", "untrusted"])


class HistoryOut(serializers.Serializer):
    versions = MemoryOut(many=True)
    sources = EventOut(many=True)
    derived = MemoryOut(many=True)


class ProgressOut(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


class JobOut(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=Job.Kind.choices)
    status = serializers.ChoiceField(choices=Job.Status.choices)
    progress = ProgressOut()
    result = serializers.DictField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class JobRefOut(serializers.Serializer):
    job = serializers.CharField()


class EventAckOut(serializers.Serializer):
    id = serializers.CharField()
    event_id = serializers.CharField()
    status = serializers.ChoiceField(choices=Event.Status.choices)
    duplicate = serializers.BooleanField()


class EventsAcceptedOut(serializers.Serializer):
    events = EventAckOut(many=True)
    job = serializers.CharField(allow_null=True)


class SearchOut(serializers.Serializer):
    results = ScoredMemoryOut(many=True)


class ProfileItemOut(serializers.Serializer):
    key = serializers.CharField()
    namespace = serializers.CharField()
    statement = serializers.CharField()
    memory_id = serializers.CharField(help_text="mem_<hex>")
    source = serializers.CharField()
    confidence = serializers.FloatField()
    importance = serializers.FloatField()
    sensitivity = serializers.CharField()
    valid_from = serializers.DateTimeField()


class ProfileConflictOut(serializers.Serializer):
    key = serializers.CharField()
    namespace = serializers.CharField()
    versions = ProfileItemOut(many=True, help_text="The disagreeing current statements, newest first.")


class ProfileOut(serializers.Serializer):
    subject = serializers.CharField()
    namespace = serializers.CharField(allow_null=True, help_text="The working namespace asked for, if any.")
    facts = ProfileItemOut(many=True)
    preferences = ProfileItemOut(many=True)
    conflicts = ProfileConflictOut(many=True, help_text="Facts sources of equal authority disagree about, awaiting "
                                   "the person: neither side is stated as the fact.")
    updated_at = serializers.DateTimeField(allow_null=True)


class ContextOut(serializers.Serializer):
    context = serializers.CharField()
    profile = ProfileOut(help_text="The profile the context starts with (the text shows as much of it as fits).")
    memories = ScoredMemoryOut(many=True)
    tokens = serializers.IntegerField()
    token_budget = serializers.IntegerField()
    nothing_relevant = serializers.BooleanField(help_text="No stored memory is similar enough to the query to "
                                                "answer it: the context says so and offers no memory.")


class HealthOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "unavailable"])
    database = serializers.CharField()
    broker = serializers.CharField()
    embedder = serializers.CharField()


class ConsoleLinkOut(serializers.Serializer):
    url = serializers.CharField()
    expires_at = serializers.DateTimeField()


def errors(*codes: int) -> dict:
    """The error answers an operation can give, all in the one error shape."""
    common = {400, 401, 429, 503}
    return {code: OpenApiResponse(ErrorOut) for code in sorted(common | set(codes))}


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
    description="Same key + same body → the stored answer again; same key + another body → 409.",
)


class ApiKeyOut(serializers.Serializer):
    prefix = serializers.CharField(help_text="The key's public prefix (mk_<prefix>_…)")
    name = serializers.CharField()
    subject = serializers.CharField(allow_null=True, help_text="The subject the key is bound to; null if unbound")
    max_source = serializers.CharField(help_text="Extension: the highest source the key may claim")


class ConflictOut(serializers.Serializer):
    id = serializers.CharField(help_text="cfl_…: what to resolve it by")
    namespace = serializers.CharField()
    key = serializers.CharField()
    memories = MemoryOut(many=True, help_text="The disagreeing current memories, oldest first")


class ConflictListOut(serializers.Serializer):
    conflicts = ConflictOut(many=True)


class ConflictResolvedOut(serializers.Serializer):
    conflict = serializers.CharField()
    resolution = serializers.CharField()
    memories = MemoryOut(many=True, help_text="What is current under the key afterwards")
