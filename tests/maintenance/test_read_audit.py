"""The read audit in the export, and gone with an erasure: the person who gets the id next
sees none of the previous holder's reads, in the export or in the console."""
import json

import pytest
from django.test import Client
from django.urls import reverse

from memoryapp.models import MemoryChange, ReadAudit
from memoryapp.services.reads import query_hash
from memoryapp.services.signin import console_subject_user_get_or_create
from tests.api.conftest import make_client, post
from tests.conftest import as_tenant
from tests.maintenance.conftest import run
from tests.maintenance.test_subject_reuse import export_now, job_of

pytestmark = pytest.mark.django_db

QUERY = "where did I grow up, zebra lantern"


def test_the_export_lists_the_persons_reads_with_the_key_name_and_no_query(tenant_a, tenant_b):
    client, other = make_client(tenant_a), make_client(tenant_b)
    memory = post(client, "subjects/sam/memories", {"statement": "I grew up in Ravenna."}).json()
    kim = post(client, "subjects/kim/memories", {"statement": "I grew up in Lyon."}).json()
    post(other, "subjects/sam/memories", {"statement": "I grew up in Oslo."})
    post(client, "subjects/sam/search", {"query": QUERY})
    client.patch(f"/api/v1/subjects/kim/memories/{kim['id']}", {"statement": "I grew up in Nice."}, format="json")
    post(client, "subjects/kim/search", {"query": "kim's own query"})
    post(other, "subjects/sam/search", {"query": "tenant b query"})

    client.patch(f"/api/v1/subjects/sam/memories/{memory['id']}", {"statement": "I grew up in Rimini."},
                 format="json")
    content = client.get(export_now(client, tenant_a, "sam")).content.decode()
    reads = json.loads(content)["reads"]
    # The correction's recorded change is exported (sam's only: not kim's).
    changes = json.loads(content)["lineage"]["changes"]
    assert [(c["memory_id"], c["status_before"], c["valid_to_before"]) for c in changes] == [
        (memory["id"], "active", None)]
    searches = [r for r in reads if r["operation"] == "search"]
    assert len(searches) == 1 and searches[0]["key_name"] == "test"
    assert searches[0]["memory_ids"] == [memory["id"]] and searches[0]["query_sha256"] == query_hash(QUERY)
    assert QUERY not in content and query_hash("kim's own query") not in content
    assert query_hash("tenant b query") not in content


def test_an_erasure_removes_the_reads_and_the_next_holder_of_the_id_sees_none(tenant_a):
    client = make_client(tenant_a)
    memory = post(client, "subjects/sam/memories", {"statement": "I grew up in Ravenna."}).json()
    client.patch(f"/api/v1/subjects/sam/memories/{memory['id']}", {"statement": "I grew up in Rimini."}, format="json")
    post(client, "subjects/sam/search", {"query": QUERY})
    erasure = run(tenant_a, job_of(tenant_a, client.delete("/api/v1/subjects/sam")))
    assert erasure.result["verification"]["passed"], erasure.result
    assert erasure.result["removed"]["read_audit_rows"] >= 1 and erasure.result["removed"]["memory_changes"] == 1
    with as_tenant(tenant_a):
        assert not ReadAudit.objects.filter(subject_ref="sam").exists() and not MemoryChange.objects.exists()

    # A read of the id while nobody holds it, then someone new gets the id.
    post(client, "subjects/sam/search", {"query": "nobody here"})
    post(client, "subjects/sam/memories", {"statement": "I prefer window seats."})
    document = json.loads(client.get(export_now(client, tenant_a, "sam")).content)
    assert query_hash(QUERY) not in json.dumps(document) and query_hash("nobody here") not in json.dumps(document)

    console = Client()
    console.force_login(console_subject_user_get_or_create(tenant=tenant_a, subject_ref="sam"))
    page = console.get(reverse("console:reads")).content.decode()
    assert query_hash(QUERY)[:10] not in page and query_hash("nobody here")[:10] not in page
