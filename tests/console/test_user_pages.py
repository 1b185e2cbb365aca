"""The person's own pages, whole and as htmx fragments: each shows its owner's memories and
never another subject's or another tenant's, whatever URL or fragment is asked for."""
import pytest
from django.urls import reverse

from memoryapp.models import Job, Memory, Subject
from tests.conftest import as_tenant
from tests.console.conftest import SECRET_TEXT, client_for, write, write_many

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
OWN = SECRET_TEXT[("a", "alice")]
FOREIGN = [SECRET_TEXT[("a", "bob")], SECRET_TEXT[("b", "alice")]]


def body(response) -> str:
    return response.content.decode()


def test_root_redirects_to_the_console_home(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == reverse("console:home")


def test_signed_out_page_redirects_to_login_and_fragment_asks_htmx_to(client):
    page = client.get(reverse("console:memories"))
    fragment = client.get(reverse("console:memories"), **HX)
    assert page.status_code == 302 and page["Location"].startswith(reverse("console:login"))
    assert fragment.status_code == 200 and fragment["HX-Redirect"].startswith(reverse("console:login"))


def test_home_shows_own_timeline_and_growth_chart_only(world):
    response = client_for(world.alice_a).get(reverse("console:home"))
    html = body(response)
    assert response.status_code == 200
    assert "<svg" in html and 'class="bar-semantic"' in html
    assert OWN[:60] in html
    assert not any(text[:40] in html for text in FOREIGN)


@pytest.mark.parametrize("hx", [False, True])
def test_memory_list_shows_own_memories_with_date_and_source(world, hx):
    response = client_for(world.alice_a).get(reverse("console:memories"), **(HX if hx else {}))
    html = body(response)
    assert response.status_code == 200
    assert OWN in html and "You said so explicitly" in html and "<time" in html
    assert not any(text in html for text in FOREIGN)
    # The fragment is the rows block alone, its root carrying the id it is swapped into.
    assert html.lstrip().startswith('<div id="memory-rows"') == hx
    assert ("<html" in html) != hx


def test_same_subject_id_in_another_tenant_sees_only_its_own(world):
    html = body(client_for(world.alice_b).get(reverse("console:memories")))
    assert SECRET_TEXT[("b", "alice")] in html
    assert OWN not in html and SECRET_TEXT[("a", "bob")] not in html


def test_search_and_filters_narrow_the_list(world):
    write(world.tenant_a, "alice", "Alice prefers window seats on trains.", namespace="travel",
          memory_type="episodic")
    client = client_for(world.alice_a)
    searched = body(client.get(reverse("console:memories"), {"q": "window seats"}, **HX))
    typed = body(client.get(reverse("console:memories"), {"memory_type": "episodic"}, **HX))
    spaced = body(client.get(reverse("console:memories"), {"namespace": "travel"}, **HX))
    assert "window seats" in searched and OWN not in searched
    assert "window seats" in typed and OWN not in typed
    assert "window seats" in spaced and OWN not in spaced
    nothing = body(client.get(reverse("console:memories"), {"q": "zeppelin"}, **HX))
    assert "No memory matches these filters" in nothing


def test_bad_filter_values_are_explained_not_a_500(world):
    response = client_for(world.alice_a).get(reverse("console:memories"), {"memory_type": "nonsense", "page": "x"})
    assert response.status_code == 200
    assert "Some filters were not understood" in body(response)


def test_list_paginates(world):
    write_many(world.tenant_a, "alice", [f"Numbered fact {i:02d} about Alice." for i in range(30)])
    client = client_for(world.alice_a)
    first = body(client.get(reverse("console:memories")))
    second = body(client.get(reverse("console:memories"), {"page": 2}, **HX))
    assert "Page 1 of 2" in first and "Numbered fact 29" in first
    assert "Page 2 of 2" in second and OWN in second


@pytest.mark.parametrize("hx", [False, True])
def test_memory_detail_shows_why_and_history(world, hx):
    memory = world.mem[("a", "alice")]
    response = client_for(world.alice_a).get(reverse("console:memory_detail", args=[memory.public_id]),
                                             **(HX if hx else {}))
    html = body(response)
    assert response.status_code == 200
    assert OWN in html and "Why it is remembered" in html and "Version history" in html and "100%" in html
    assert html.lstrip().startswith('<article id="memory"') == hx


@pytest.mark.parametrize("who, key", [("bob_a", ("a", "alice")), ("alice_b", ("a", "alice")),
                                      ("alice_a", ("b", "alice")), ("admin_b", ("a", "alice"))])
@pytest.mark.parametrize("name", ["console:memory_detail", "console:memory_forget"])
@pytest.mark.parametrize("hx", [False, True])
def test_another_subject_or_tenant_gets_no_memory_page(world, who, key, name, hx):
    memory = world.mem[key]
    response = client_for(getattr(world, who)).get(reverse(name, args=[memory.public_id]), **(HX if hx else {}))
    assert response.status_code in (403, 404)
    assert SECRET_TEXT[key] not in body(response)


def test_malformed_memory_id_is_a_404(world):
    response = client_for(world.alice_a).get(reverse("console:memory_detail", args=["mem_nothex"]))
    assert response.status_code == 404


def test_correction_creates_a_new_version_shown_at_once_with_history(world):
    memory = world.mem[("a", "alice")]
    client = client_for(world.alice_a)
    response = client.post(reverse("console:memory_correct", args=[memory.public_id]),
                           {"statement": "Alice keeps her bicycle in the red garage."}, **HX)
    html = body(response)
    assert response.status_code == 200
    assert html.lstrip().startswith('<article id="memory"')
    assert "red garage" in html and "Corrected." in html and OWN in html  # old version in the history
    with as_tenant(world.tenant_a):
        old = Memory.objects.get(pk=memory.pk)
        assert old.status == "superseded" and old.superseded_by.statement.endswith("red garage.")
        assert response["HX-Push-Url"] == reverse("console:memory_detail", args=[old.superseded_by.public_id])


def test_correction_without_htmx_redirects_to_the_new_version(world):
    memory = world.mem[("a", "alice")]
    response = client_for(world.alice_a).post(reverse("console:memory_correct", args=[memory.public_id]),
                                              {"statement": "Alice keeps her bicycle at work."})
    assert response.status_code == 302 and "/console/memories/mem_" in response["Location"]


def test_correction_refused_by_policy_is_a_form_error(world):
    memory = world.mem[("a", "alice")]
    response = client_for(world.alice_a).post(
        reverse("console:memory_correct", args=[memory.public_id]),
        {"statement": "My password is hunter2 and my AWS key is AKIAABCDEFGHIJKLMNOP"}, **HX)
    assert response.status_code == 422
    assert "secret" in body(response) and 'id="statement-error"' in body(response)


def test_correcting_a_superseded_version_is_explained(world):
    memory = world.mem[("a", "alice")]
    client = client_for(world.alice_a)
    client.post(reverse("console:memory_correct", args=[memory.public_id]), {"statement": "Version two."})
    response = client.post(reverse("console:memory_correct", args=[memory.public_id]), {"statement": "Three."})
    # It says what replaced it, and keeps the typed text for the current version.
    assert response.status_code == 422 and "replaced in the meantime" in body(response)
    assert "Version two." in body(response) and ">Three.</textarea>" in body(response)


def test_another_subject_cannot_correct_or_forget(world):
    memory = world.mem[("a", "alice")]
    client = client_for(world.bob_a)
    corrected = client.post(reverse("console:memory_correct", args=[memory.public_id]), {"statement": "Hijacked."})
    forgotten = client.post(reverse("console:memory_forget", args=[memory.public_id]))
    assert corrected.status_code == 404 and forgotten.status_code == 404
    with as_tenant(world.tenant_a):
        assert Memory.objects.get(pk=memory.pk).status == "active"
        assert not Memory.objects.get(pk=memory.pk).erasing


def test_forget_confirmation_lists_what_derives_from_it_then_queues_a_deletion(world):
    source = world.mem[("a", "alice")]
    summary = write(world.tenant_a, "alice", "Alice is a cyclist (summary).", derived_from=[source])
    client = client_for(world.alice_a)
    confirm = body(client.get(reverse("console:memory_forget", args=[source.public_id])))
    assert "Alice is a cyclist (summary)." in confirm and "Forget all 2" in confirm
    response = client.post(reverse("console:memory_forget", args=[source.public_id]))
    assert response.status_code == 302 and "/console/jobs/job_" in response["Location"]
    with as_tenant(world.tenant_a):
        assert set(Memory.objects.filter(erasing=True).values_list("pk", flat=True)) == {source.pk, summary.pk}


def test_data_page_and_erase_needs_the_typed_word(world):
    client = client_for(world.alice_a)
    assert "Erase everything" in body(client.get(reverse("console:data")))
    refused = client.post(reverse("console:data_erase"), {"confirm": "yes"})
    assert refused.status_code == 422 and "to confirm" in body(refused)
    with as_tenant(world.tenant_a):
        assert not Job.objects.filter(kind="deletion").exists()
    accepted = client.post(reverse("console:data_erase"), {"confirm": "erase"})
    assert accepted.status_code == 302
    with as_tenant(world.tenant_a):
        job = Job.objects.get(kind="deletion")
        alice = Subject.objects.get(external_id="alice")
        assert job.subject_ref == "alice" and job.params == {"scope": "subject", "subject_row_id": alice.pk}
        # Only Alice is being erased: Bob's memory is untouched.
        assert not Memory.objects.get(pk=world.mem[("a", "bob")].pk).erasing


def test_erase_accepts_the_subject_id_as_confirmation(world):
    response = client_for(world.alice_a).post(reverse("console:data_erase"), {"confirm": "alice"})
    assert response.status_code == 302


@pytest.mark.parametrize("hx", [False, True])
def test_job_page_shows_progress_and_polls_until_done(world, hx):
    client = client_for(world.alice_a)
    client.post(reverse("console:data_erase"), {"confirm": "erase"})
    with as_tenant(world.tenant_a):
        job = Job.objects.get(kind="deletion")
    html = body(client.get(reverse("console:job", args=[job.public_id]), **(HX if hx else {})))
    assert 'hx-trigger="every 1s"' in html and "Waiting to start" in html
    assert html.lstrip().startswith('<section id="job"') == hx
    with as_tenant(world.tenant_a):
        Job.objects.filter(pk=job.pk).update(
            status="succeeded", result={"removed": {"memories": 1, "events": 0}, "verified": True})
    done = body(client.get(reverse("console:job", args=[job.public_id]), **HX))
    assert "every 1s" not in done and "Erasure receipt" in done and '<th scope="row">Memories</th>' in done


@pytest.mark.parametrize("who", ["bob_a", "alice_b", "admin_b"])
@pytest.mark.parametrize("hx", [False, True])
def test_another_subject_or_tenant_cannot_see_a_job(world, who, hx):
    client_for(world.alice_a).post(reverse("console:data_erase"), {"confirm": "erase"})
    with as_tenant(world.tenant_a):
        job = Job.objects.get(kind="deletion")
    response = client_for(getattr(world, who)).get(reverse("console:job", args=[job.public_id]), **(HX if hx else {}))
    assert response.status_code == 404 and job.public_id not in body(response)


def test_tenant_admin_can_follow_a_job(world):
    client_for(world.alice_a).post(reverse("console:data_erase"), {"confirm": "erase"})
    with as_tenant(world.tenant_a):
        job = Job.objects.get(kind="deletion")
    assert client_for(world.admin_a).get(reverse("console:job", args=[job.public_id])).status_code == 200


def test_export_download_serves_own_file_only(world):
    from datetime import timedelta

    from django.utils import timezone

    from memoryapp.models import ExportFile, Subject

    with as_tenant(world.tenant_a):
        alice = Subject.objects.get(external_id="alice")
        export = ExportFile.objects.create(tenant=world.tenant_a, subject_ref="alice", subject_row_id=alice.pk,
                                           content=b'{"who": "alice-a"}', size=18,
                                           expires_at=timezone.now() + timedelta(hours=1))
    url = reverse("console:export_download", args=[export.public_id])
    own = client_for(world.alice_a).get(url)
    assert own.status_code == 200 and own.content == b'{"who": "alice-a"}'
    assert own["Content-Type"] == "application/json" and "attachment" in own["Content-Disposition"]
    for who in ("bob_a", "alice_b", "admin_a"):
        response = client_for(getattr(world, who)).get(url)
        assert response.status_code in (403, 404) and b"alice-a" not in response.content


def test_export_job_links_to_the_console_download(world):
    with as_tenant(world.tenant_a):
        job = Job.objects.create(tenant=world.tenant_a, kind="export", subject_ref="alice", status="succeeded",
                                 result={"download": "/api/v1/exports/exp_" + "ab" * 16})
    html = body(client_for(world.alice_a).get(reverse("console:job", args=[job.public_id]), **HX))
    assert reverse("console:export_download", args=["exp_" + "ab" * 16]) in html


def test_admin_without_subject_is_refused_subject_pages(world):
    client = client_for(world.admin_a)
    assert client.get(reverse("console:memories")).status_code == 403
    assert client.get(reverse("console:home"))["Location"] == reverse("console:admin_audit")


def test_user_without_console_account_is_refused(db):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("stray", password="x" * 12)
    assert client_for(user).get(reverse("console:memories")).status_code == 403


def test_erasure_receipt_stays_visible_to_the_browser_that_asked_after_the_account_is_gone(world):
    from django.test import Client

    client = client_for(world.alice_a)
    response = client.post(reverse("console:data_erase"), {"confirm": "erase"})
    assert response["Location"].startswith("/console/erasure/job_")
    with as_tenant(world.tenant_a):
        job = Job.objects.get(kind="deletion")
        Job.objects.filter(pk=job.pk).update(status="succeeded", result={"removed": {"memories": 1},
                                                                        "verification": {"passed": True}})
    world.alice_a.delete()  # what the erasure runner does to the person's console account
    url = reverse("console:erasure", args=[job.public_id])
    page = client.get(url)
    assert page.status_code == 200 and "Erasure receipt" in body(page) and "including your console account" in body(page)
    assert client.get(url, **HX).content.decode().lstrip().startswith('<section id="job"')
    # Nobody else can open it: not another browser, not another signed-in person.
    assert Client().get(url).status_code == 404
    assert client_for(world.bob_a).get(url).status_code == 404
