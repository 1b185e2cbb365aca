"""A deadlock or serialization failure the database reports is retried inside the service: the
client gets its answer, and the rolled-back attempt left nothing behind."""
import psycopg
import pytest
from django.db import OperationalError

from memoryapp.models import AuditEntry, Memory
from memoryapp.services import memories as memory_services
from tests.api.conftest import post
from tests.conftest import as_tenant

pytestmark = pytest.mark.django_db


def conflict(sqlstate_error):
    try:
        raise sqlstate_error("simulated")
    except psycopg.Error as cause:
        error = OperationalError(str(cause))
        error.__cause__ = cause
        return error


@pytest.mark.parametrize("cause", [psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure])
def test_a_lock_conflict_is_retried_and_the_write_happens_once(tenant_a, client_a, monkeypatch, cause):
    real, calls = memory_services._write, []

    def conflicted_once(**kwargs):
        calls.append(1)
        result = real(**kwargs)  # the attempt writes, then loses a race: all of it rolls back
        if len(calls) == 1:
            raise conflict(cause)
        return result

    monkeypatch.setattr(memory_services, "_write", conflicted_once)
    from api.metrics import LOCK_CONFLICT_RETRIES

    counted = LOCK_CONFLICT_RETRIES.labels("memories", cause.sqlstate)._value.get()
    response = post(client_a, "subjects/alice/memories", {"statement": "I like green tea."})
    assert response.status_code == 201 and len(calls) == 2
    assert LOCK_CONFLICT_RETRIES.labels("memories", cause.sqlstate)._value.get() == counted + 1
    with as_tenant(tenant_a):
        assert Memory.objects.count() == 1
        assert AuditEntry.objects.filter(action="memory_written").count() == 1


def test_a_conflict_that_keeps_happening_is_a_503_after_the_bounded_attempts(client_a, monkeypatch):
    calls = []

    def always_conflicted(**kwargs):
        calls.append(1)
        raise conflict(psycopg.errors.DeadlockDetected)

    monkeypatch.setattr(memory_services, "_write", always_conflicted)
    response = post(client_a, "subjects/alice/memories", {"statement": "I like green tea."})
    assert response.status_code == 503 and response.json()["error"]["code"] == "memory_unavailable"
    from api.views.base import LOCK_CONFLICT_ATTEMPTS

    assert len(calls) == LOCK_CONFLICT_ATTEMPTS
