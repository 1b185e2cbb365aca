"""The console in a real Chromium (Playwright) against the live server: sign in, search, open a
memory, correct it and see the history; erase everything and watch the progress reach the
receipt; export and download; an admin filtering the audit log. Every page runs under the real
Content-Security-Policy, and any violation the browser reports fails the test. Screenshots of
each main page go to artifacts/screenshots/ (git-ignored) for a person to look at."""
import json
import os
import threading
from pathlib import Path

import pytest
from django.db import connections

from memoryapp.models import Job, Memory, Subject
from memoryapp.services.signin import signin_link_create
from tests.conftest import as_tenant
from tests.console.conftest import ACTOR, PASSWORD, account, write_many

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    # Playwright's sync API runs an event loop in this thread; the test's own ORM calls are
    # still plain synchronous code, so Django's async-context guard does not apply to them.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


# Chromium logs each blocked load, inline style or eval to the console ("Refused to ... because it
# violates the following Content Security Policy directive"); the event catches the rest.
REPORT_VIOLATIONS = """document.addEventListener("securitypolicyviolation", (e) =>
    console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"} `
                  + `at ${e.sourceFile}:${e.lineNumber}:${e.columnNumber} on ${location.pathname}`));"""


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1200, "height": 900},
                                  accept_downloads=True)
    context.add_init_script(REPORT_VIOLATIONS)  # injected by the browser itself: CSP does not apply
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.csp_violations = []
    page.on("console", lambda message: page.csp_violations.append(message.text)
            if "Content Security Policy" in message.text or message.text.startswith("CSP violation") else None)
    yield page
    context.close()


def assert_no_csp_violations(page) -> None:
    assert page.csp_violations == [], "\n".join(page.csp_violations)


@pytest.fixture
def jobs_in_process(monkeypatch):
    """Run each job the live server enqueues in a thread of this process instead of sending it
    to Redis for a Celery worker. This replaces only the transport (memoryapp.dispatch
    .send_task_now); the job is claimed, run and finished by the real job_run and runners,
    against the real database, after the enqueuing transaction committed."""
    from memoryapp.services.jobs import job_run
    from workers.tasks import JOB_RUNNERS, resolve

    class Runners:
        def get(self, kind):
            return resolve(JOB_RUNNERS[kind]) if kind in JOB_RUNNERS else None

    threads: list[threading.Thread] = []

    def run(tenant_id, job_id):
        try:
            job_run(tenant_id=tenant_id, job_id=job_id, runners=Runners())
        except Exception:  # recorded on the job as failed; the page shows it
            pass
        finally:
            connections.close_all()

    def send_task_now(name, args, queue):
        thread = threading.Thread(target=run, args=args, daemon=True)
        threads.append(thread)
        thread.start()
        return True

    monkeypatch.setattr("memoryapp.dispatch.send_task_now", send_task_now)
    yield
    for thread in threads:
        thread.join(timeout=60)


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def sign_in_with_link(page, tenant, subject_ref, screenshot: str = ""):
    url, _ = signin_link_create(tenant=tenant, subject_ref=subject_ref, actor=ACTOR)
    page.goto(url)
    if screenshot:
        shot(page, screenshot)
    # Opening the link only shows the button; pressing it uses the link up and signs in.
    page.get_by_role("button", name="Continue to your memories").click()
    page.wait_for_url("**/console/")


def seed(tenant, subject_ref="alice"):
    write_many(tenant, subject_ref, [
        "Alice lives in Lisbon.",
        "Alice prefers aisle seats on long flights.",
        "Alice is vegetarian.",
        "Alice's daughter is called Marta.",
    ])
    write_many(tenant, subject_ref, ["Alice booked a trip to Porto for May."], memory_type="episodic",
               source_kind="user")


def test_person_searches_opens_and_corrects_a_memory(page, tenant_a, tenant_b):
    seed(tenant_a)
    write_many(tenant_b, "alice", ["Tenant B's Alice lives in Oslo."])
    sign_in_with_link(page, tenant_a, "alice", screenshot="00-link-continue")
    assert page.locator("svg.chart").is_visible()
    shot(page, "01-overview")

    page.get_by_role("link", name="Memories", exact=True).click()
    page.wait_for_url("**/console/memories/")
    assert page.locator("#memory-rows tbody tr").count() == 5
    shot(page, "02-memory-list")
    # Live search: typing narrows the rows without a submit, and the address follows.
    page.locator("#id_q").press_sequentially("Lisbon", delay=30)  # real keystrokes: keyup drives the search
    page.wait_for_function("() => document.querySelectorAll('#memory-rows tbody tr').length === 1")
    assert "q=Lisbon" in page.url
    assert "Oslo" not in page.content()

    page.get_by_role("link", name="Alice lives in Lisbon.").click()
    page.wait_for_url("**/console/memories/mem_*/")
    assert page.locator("h1.statement").inner_text() == "Alice lives in Lisbon."
    shot(page, "03-memory-detail")

    page.fill("#id_statement", "Alice lives in Porto.")
    page.get_by_role("button", name="Save correction").click()
    page.wait_for_selector("text=Corrected.")
    assert page.locator("h1.statement").inner_text() == "Alice lives in Porto."
    history = page.locator("ol.versions").inner_text()
    assert "Alice lives in Lisbon." in history and "Alice lives in Porto." in history and "Superseded" in history
    shot(page, "04-memory-corrected")
    with as_tenant(tenant_a):
        assert Memory.objects.get(statement="Alice lives in Lisbon.").status == "superseded"
    assert_no_csp_violations(page)


def test_person_erases_everything_and_watches_the_receipt(page, tenant_a, jobs_in_process):
    seed(tenant_a)
    sign_in_with_link(page, tenant_a, "alice")
    page.goto("/console/data/")
    shot(page, "05-your-data")
    page.get_by_role("button", name="Erase everything about me").click()
    assert page.locator("#confirm-error").is_visible()  # nothing happens without the typed word
    page.fill("#id_confirm", "erase")
    page.get_by_role("button", name="Erase everything about me").click()
    page.wait_for_url("**/console/erasure/job_*/")
    assert page.locator(".progress").count() == 1
    try:
        page.wait_for_selector("#receipt", timeout=60_000)  # reached by htmx polling, no reload
    except Exception:
        shot(page, "06-erasure-failed")
        with as_tenant(tenant_a):
            pytest.fail(f"no receipt; jobs: {list(Job.objects.values_list('kind', 'status', 'error'))}")
    receipt = page.locator("#receipt").inner_text()
    assert "Memories" in receipt and "Checked afterwards: nothing of it is left" in receipt
    shot(page, "06-erasure-receipt")
    with as_tenant(tenant_a):
        assert not Memory.objects.filter(subject__external_id="alice").exists()
        assert not Subject.objects.filter(external_id="alice").exists()
        assert Job.objects.get(kind="deletion").status == "succeeded"
    assert_no_csp_violations(page)


def test_person_exports_and_downloads_the_json(page, tenant_a, jobs_in_process):
    seed(tenant_a)
    sign_in_with_link(page, tenant_a, "alice")
    page.goto("/console/data/")
    page.get_by_role("button", name="Prepare my export").click()
    page.wait_for_url("**/console/jobs/job_*/")
    page.wait_for_selector("#download", timeout=60_000)
    shot(page, "07-export-ready")
    with page.expect_download() as info:
        page.click("#download")
    document = json.loads(Path(info.value.path()).read_text())
    statements = json.dumps(document)
    assert "Alice lives in Lisbon." in statements and "Alice is vegetarian." in statements
    assert_no_csp_violations(page)


def test_admin_filters_the_audit_log(page, tenant_a, tenant_b):
    seed(tenant_a)
    write_many(tenant_a, "bob", ["Bob likes jazz."])
    write_many(tenant_b, "carol", ["Carol of tenant B."])
    account(tenant_a, "admin@a.example", is_admin=True)
    page.goto("/console/login/")
    page.fill("#id_username", "admin@a.example")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/admin/audit/")
    assert "The tamper-evident chain verifies" in page.locator("#chain-status").inner_text()
    assert "carol" not in page.locator("#audit-entries").inner_text()
    shot(page, "08-admin-audit")
    page.locator("#id_subject").press_sequentially("bob", delay=30)
    # Predicates are functions, not expression strings: Playwright evals a string, which the CSP blocks.
    page.wait_for_function(
        "() => [...document.querySelectorAll('#audit-entries tbody tr')].every(r => r.innerText.includes('bob'))"
        " && document.querySelectorAll('#audit-entries tbody tr').length > 0")
    assert "subject=bob" in page.url
    page.select_option("#id_action", "memory_written")
    page.wait_for_function("() => document.querySelector('#audit-entries .count').innerText.startsWith('1 entry')")
    shot(page, "09-admin-audit-filtered")
    for path, name in [("/console/admin/jobs/", "10-admin-jobs"), ("/console/admin/keys/", "11-admin-keys"),
                       ("/console/admin/quarantine/", "12-admin-quarantine"),
                       ("/console/admin/approvals/", "13-admin-approvals")]:
        page.goto(path)
        shot(page, name)
    assert_no_csp_violations(page)


def test_login_page_screenshot(page):
    page.goto("/console/")
    page.wait_for_url("**/console/login/**")
    shot(page, "00-login")
    assert page.get_by_role("button", name="Sign in").is_visible()
    assert_no_csp_violations(page)


def test_a_csp_violation_would_be_seen(page):
    # The check above is only worth something if a blocked inline style does reach the list.
    page.goto("/console/login/")
    page.evaluate("document.body.insertAdjacentHTML('beforeend', '<div style=\"color: red\"></div>')")
    page.wait_for_timeout(200)  # console messages arrive asynchronously
    assert page.csp_violations and "style-src" in " ".join(page.csp_violations)


def test_the_api_docs_page_works_under_its_own_policy(page):
    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "Memory service API" in page.locator(".swagger-ui .info .title").inner_text()
    page.wait_for_selector(".opblock-tag")  # the operations, rendered from /api/schema/
    shot(page, "14-api-docs")
    assert_no_csp_violations(page)
