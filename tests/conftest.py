"""Tests run against a real PostgreSQL with pgvector (embedded by default, or DATABASE_URL)
and, where they need one, a real Redis and Celery worker.

The test database is created and migrated by the schema owner; the tests themselves use the
application's role, so row-level security binds every query a test makes, as in production.
"""
import pytest
from django.db import connections
from django.test.utils import setup_databases, teardown_databases

from memoryapp.actors import Actor
from memoryapp.dbroles import quote_ident


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment, django_db_blocker, django_db_keepdb):
    from django.conf import settings

    with django_db_blocker.unblock():
        old = setup_databases(verbosity=0, interactive=False, keepdb=django_db_keepdb, aliases={"owner"})
        test_name = connections["owner"].settings_dict["NAME"]
        connections["default"].close()
        connections["default"].settings_dict["NAME"] = test_name
        with connections["owner"].cursor() as cursor:
            # Transactional tests flush tables between tests; only the test role may truncate.
            cursor.execute(
                f"GRANT TRUNCATE ON ALL TABLES IN SCHEMA public TO {quote_ident(settings.DB_APP_USER)}"
            )
    yield
    with django_db_blocker.unblock():
        for connection in connections.all():
            connection.close()
        teardown_databases(old, verbosity=0, keepdb=django_db_keepdb)


@pytest.fixture
def actor():
    return Actor("system", "tests")


def _make_tenant(slug):
    from memoryapp.services.tenants import tenant_create

    return tenant_create(slug=slug)


@pytest.fixture
def tenant_a(db):
    return _make_tenant("tenant-a")


@pytest.fixture
def tenant_b(db):
    return _make_tenant("tenant-b")


# Two subjects in each tenant; tenant B reuses tenant A's subject ids on purpose: the same
# external id in another tenant is a different person.
SUBJECTS_A = ("alice", "bob")
SUBJECTS_B = ("alice", "carol")


class as_tenant:
    """Run a block in a transaction bound to `tenant` (what a request or a task does)."""

    def __init__(self, tenant):
        from django.db import transaction

        self.tenant = tenant
        self.atomic = transaction.atomic()

    def __enter__(self):
        from memoryapp.tenancy import tenant_activate

        self.atomic.__enter__()
        tenant_activate(tenant=self.tenant)
        return self.tenant

    def __exit__(self, *exc):
        return self.atomic.__exit__(*exc)
