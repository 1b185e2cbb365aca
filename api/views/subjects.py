"""Whole-subject operations: erasure, export and the console sign-in link. Export and sign-in
live in services owned elsewhere and are imported when used, so this door starts without them."""

import importlib

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from api.schemas import ConsoleLinkOut, JobRefOut, errors
from api.serializers import EmptyIn
from api.views.base import ApiView
from memoryapp.errors import ApplicationError
from memoryapp.services.memories import subject_erase_request


def _service(module: str, name: str):
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise ApplicationError("not_available", "This operation is not available yet.", status=503) from None


class SubjectView(ApiView):
    @extend_schema(operation_id="subject_erase", request=None, responses={202: JobRefOut, **errors(403)})
    def delete(self, request, subject):
        job = subject_erase_request(tenant=request.tenant, subject_ref=subject, actor=self.actor(request))
        return Response({"job": job.public_id}, status=status.HTTP_202_ACCEPTED)


class ExportRequestView(ApiView):
    @extend_schema(operation_id="export_request", request=EmptyIn, responses={202: JobRefOut, **errors(403, 404)})
    def post(self, request, subject):
        self.validated(EmptyIn, request.data)
        export_request = _service("memoryapp.services.export", "export_request")
        job = export_request(tenant=request.tenant, subject_ref=subject, actor=self.actor(request))
        return Response({"job": job.public_id}, status=status.HTTP_202_ACCEPTED)


class ConsoleLinkView(ApiView):
    @extend_schema(operation_id="console_link_create", request=EmptyIn, responses={201: ConsoleLinkOut, **errors(403)})
    def post(self, request, subject):
        self.validated(EmptyIn, request.data)
        signin_link_create = _service("memoryapp.services.signin", "signin_link_create")
        url, expires_at = signin_link_create(tenant=request.tenant, subject_ref=subject, actor=self.actor(request))
        if url.startswith("/"):
            url = request.build_absolute_uri(url)
        return Response({"url": url, "expires_at": expires_at.isoformat()}, status=status.HTTP_201_CREATED)
