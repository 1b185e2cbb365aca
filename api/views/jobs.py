from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from api.representations import job_json
from api.schemas import JobOut, errors
from api.views.base import ApiView
from memoryapp.errors import NotFound
from memoryapp.selectors.memories import job_get, job_is_theirs


class JobView(ApiView):
    @extend_schema(operation_id="job_get", responses={200: JobOut, **errors(404)})
    def get(self, request, job_id):
        job = job_get(tenant=request.tenant, job_id=job_id)
        bound = request.api_key.subject_ref
        if bound and not job_is_theirs(tenant=request.tenant, subject_ref=bound, job=job):
            raise NotFound("job")  # a bound key sees only its subject's jobs, and learns nothing else
        return Response(job_json(job))
