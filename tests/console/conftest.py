"""Console fixtures: two tenants; in tenant A, Alice and Bob (subject owners) and an admin; in
tenant B, another Alice (same subject id, a different person) and B's admin. Each owner has a
memory whose text is unique to them, so a page leaking it is caught by a plain substring test."""
import pytest
from django.test import Client

from memoryapp.actors import Actor
from memoryapp.services.memories import MemoryDraft, memory_write
from memoryapp.services.signin import console_account_create

PASSWORD = "correct horse battery staple"
ACTOR = Actor("system", "tests")

SECRET_TEXT = {
    ("a", "alice"): "Alice of tenant A keeps her bicycle in the blue shed.",
    ("a", "bob"): "Bob of tenant A is allergic to walnuts.",
    ("b", "alice"): "Alice of tenant B collects antique typewriters.",
}


def write(tenant, subject_ref, statement, embedding=None, **kw):
    return memory_write(tenant=tenant, subject_ref=subject_ref, draft=MemoryDraft(statement=statement, **kw),
                        actor=ACTOR, embedding=embedding).memory


def write_many(tenant, subject_ref, statements, **kw):
    """Embedded in one batch: one model call instead of one per memory."""
    from memoryapp.embeddings import embed_texts

    vectors = embed_texts(list(statements))
    return [write(tenant, subject_ref, s, embedding=v, **kw) for s, v in zip(statements, vectors)]


def account(tenant, email, *, subject_ref="", is_admin=False):
    return console_account_create(tenant=tenant, email=email, password=PASSWORD, subject_ref=subject_ref,
                                  is_admin=is_admin, actor=ACTOR)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(tenant_a, tenant_b):
    """Everyone, their memories and signed-in clients, as a namespace."""
    class World:
        pass

    w = World()
    w.tenant_a, w.tenant_b = tenant_a, tenant_b
    w.mem = {
        key: write(tenant_a if key[0] == "a" else tenant_b, key[1], text) for key, text in SECRET_TEXT.items()
    }
    w.alice_a = account(tenant_a, "alice@a.example", subject_ref="alice")
    w.bob_a = account(tenant_a, "bob@a.example", subject_ref="bob")
    w.admin_a = account(tenant_a, "admin@a.example", is_admin=True)
    w.alice_b = account(tenant_b, "alice@b.example", subject_ref="alice")
    w.admin_b = account(tenant_b, "admin@b.example", is_admin=True)
    return w


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # The real hasher is deliberately slow; a dozen accounts per test would dominate the run.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
