from collections.abc import Mapping

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from api.authentication import claim_source
from api.schemas import EventsAcceptedOut, errors
from api.serializers import EventBatchIn, EventIn
from api.views.base import ApiView
from memoryapp.policy import DEFAULT_SOURCE_FOR_ROLE
from memoryapp.services.events import EventInput, event_append


class EventsView(ApiView):
    @extend_schema(operation_id="events_append", request=EventIn, responses={202: EventsAcceptedOut, **errors(403, 409)},
                   description="One event, or {\"events\": [...]} (at most 1000). Re-sent event_ids are duplicates.")
    def post(self, request, subject):
        data = request.data
        if isinstance(data, Mapping) and "events" in data:
            items = self.validated(EventBatchIn, data)["events"]
        else:
            items = [self.validated(EventIn, data)]
        # The source each event claims, or the one its role implies, within the key's cap.
        inputs = [
            EventInput(
                event_id=item["event_id"], role=item["role"], content=item["content"],
                source_kind=claim_source(request, subject=subject, operation="events_append",
                                         source_kind=item.get("source") or DEFAULT_SOURCE_FOR_ROLE[item["role"]]),
                occurred_at=item.get("occurred_at"),
                session_id=item.get("session_id", ""), speaker=item.get("speaker", ""),
                metadata=item.get("metadata"),
            )
            for item in items
        ]
        appended, job = event_append(
            tenant=request.tenant, subject_ref=subject, events=inputs, actor=self.actor(request)
        )
        if job is not None:
            job_ref = job.public_id
        else:
            # All duplicates: no new job, but the first event's job lets the client still poll.
            first = appended[0].event
            job_ref = f"job_{first.job_id.hex}" if first.job_id else None
        body = {
            "events": [
                {"id": a.event.public_id, "event_id": a.event.event_id, "status": a.event.status,
                 "duplicate": a.duplicate}
                for a in appended
            ],
            "job": job_ref,
        }
        return Response(body, status=status.HTTP_202_ACCEPTED)
