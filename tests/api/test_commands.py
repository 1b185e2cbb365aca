import io

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from memoryapp.models import ApiKey
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def create(**options) -> str:
    out = io.StringIO()
    call_command("create_api_key", stdout=out, **options)
    return out.getvalue().strip().splitlines()[-1]


def client(raw):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return c


def test_create_api_key_prints_a_working_key_alone_on_the_last_line():
    raw = create(tenant="acme", create_tenant=True, name="backend")
    assert raw.startswith("mk_") and " " not in raw
    assert client(raw).get("/api/v1/subjects/alice/memories").status_code == 200


def test_create_api_key_for_an_unknown_tenant_without_create_is_a_clear_error():
    with pytest.raises(CommandError, match="--create-tenant"):
        create(tenant="nobody")


def test_subject_bound_key_is_bound(tenant_a):
    raw = create(tenant="tenant-a", subject="alice")
    assert client(raw).get("/api/v1/subjects/bob/memories").status_code == 403


def test_revoke_api_key_by_prefix_or_id_stops_it(tenant_a):
    raw = create(tenant="tenant-a")
    prefix = raw.split("_")[1]
    call_command("revoke_api_key", prefix=prefix, stdout=io.StringIO())
    assert client(raw).get("/api/v1/subjects/alice/memories").status_code == 401
    raw2 = create(tenant="tenant-a")
    with as_tenant(tenant_a):
        key_id = ApiKey.objects.get(prefix=raw2.split("_")[1]).id
    call_command("revoke_api_key", key_id=str(key_id), stdout=io.StringIO())
    assert client(raw2).get("/api/v1/subjects/alice/memories").status_code == 401
    with pytest.raises(CommandError):
        call_command("revoke_api_key", prefix="doesnotexist", stdout=io.StringIO())
