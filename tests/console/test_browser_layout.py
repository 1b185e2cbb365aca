"""The console in Chromium at a desktop width (1280 px) and a phone's (375 px): long unbroken text
(a 300-character URL in a memory, a 200-character key name) never makes a page wider than the
window, and Back after a correction never shows the replaced version as the current one.
Screenshots go to var/screenshots/ (git-ignored) for a person to look at."""
from pathlib import Path

import pytest
from playwright.sync_api import expect

from memoryapp.actors import Actor
from memoryapp.models import Memory
from memoryapp.services.memories import memory_correct
from memoryapp.services.tenants import api_key_create
from tests.conftest import as_tenant
from tests.console.conftest import ACTOR, PASSWORD, account, write_many
from tests.console.test_browser import REPORT_VIOLATIONS, browser, sign_in_with_link  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
WIDTHS = {"desktop": 1280, "phone": 375}
LONG_URL = "https://example.com/reading-list/" + "a1b2c3d4e5" * 27  # 303 characters, no break
LONG_KEY_NAME = "helpdesk-agent-" + "x" * 185  # 200 characters, no break


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@pytest.fixture(params=list(WIDTHS), ids=list(WIDTHS))
def sized_page(request, browser, live_server):  # noqa: F811 (browser is a fixture)
    """A page at one of the two widths; `page.width_name` says which (for screenshot names)."""
    width = WIDTHS[request.param]
    # Not is_mobile: a mobile viewport zooms out to fit an over-wide page, and would hide the overflow.
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 900},
                                  has_touch=width < 500)
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.width_name = request.param
    page.csp_violations = []
    page.on("console", lambda message: page.csp_violations.append(message.text)
            if "Content Security Policy" in message.text or message.text.startswith("CSP violation") else None)
    yield page
    context.close()


def page_width(page) -> dict:
    return page.evaluate("({scroll: document.documentElement.scrollWidth,"
                         " viewport: document.documentElement.clientWidth})")


def assert_fits(page, what: str) -> None:
    size = page_width(page)
    shot(page, f"layout-{what}-{page.width_name}")
    assert size["scroll"] <= size["viewport"], f"{what} is {size['scroll']} px wide in a {size['viewport']} px window"


def seed_long(tenant):
    write_many(tenant, "alice", [
        "Alice lives in Lisbon.",
        f"Alice keeps her reading list at {LONG_URL}",
        "Alice prefers aisle seats on long flights.",
    ])
    with as_tenant(tenant):
        return Memory.objects.get(statement__contains=LONG_URL).public_id


def test_long_text_never_widens_the_persons_pages(sized_page, tenant_a):
    page = sized_page
    memory_id = seed_long(tenant_a)
    sign_in_with_link(page, tenant_a, "alice")
    assert_fits(page, "overview")
    page.goto("/console/memories/")
    assert page.locator("#memory-rows tbody tr").count() == 3
    assert_fits(page, "memory-list")
    # The row's other cells stay inside the card, beside or (on a phone) under the statement.
    card = page.locator("#memory-rows").bounding_box()
    for cell in page.locator("#memory-rows tbody tr").first.locator("td").all():
        box = cell.bounding_box()
        assert box["x"] + box["width"] <= card["x"] + card["width"] + 1
    page.goto(f"/console/memories/{memory_id}/")
    assert LONG_URL in page.locator("h1.statement").inner_text().replace("\n", "")
    assert_fits(page, "memory-detail")
    page.goto("/console/memories/?q=Lisbon")
    assert_fits(page, "memory-list-search")
    assert page.csp_violations == []


def test_phone_shows_every_column_of_the_memory_list_with_its_name(sized_page, tenant_a):
    page = sized_page
    seed_long(tenant_a)
    sign_in_with_link(page, tenant_a, "alice")
    page.goto("/console/memories/")
    row = page.locator("#memory-rows tbody tr").first
    for label in ("Type", "Source", "Said"):  # the column says when it was said (item 5)
        cell = row.locator(f'td[data-label="{label}"]')
        assert cell.is_visible() and cell.bounding_box()["width"] > 0
    if page.width_name == "phone":
        # Stacked: the column names are shown in each cell, since the header row is not.
        label = page.evaluate("""getComputedStyle(document.querySelector('#memory-rows td[data-label="Type"]'),
                                 '::before').content""")
        assert "Type" in label


def test_chart_labels_are_readable_at_both_widths(sized_page, tenant_a):
    page = sized_page
    seed_long(tenant_a)
    sign_in_with_link(page, tenant_a, "alice")
    heights = page.evaluate("[...document.querySelectorAll('svg.chart .chart-label')]"
                            ".map(t => t.getBoundingClientRect().height)")
    assert heights and min(heights) >= 11, heights  # about 12 px text on screen, not 5 px


def test_long_key_name_never_widens_the_admin_keys_page(sized_page, tenant_a):
    page = sized_page
    with as_tenant(tenant_a):
        api_key_create(tenant=tenant_a, name=LONG_KEY_NAME, subject_ref="alice", actor=ACTOR)
    account(tenant_a, "admin@a.example", is_admin=True)
    page.goto("/console/login/")
    page.fill("#id_username", "admin@a.example")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/admin/audit/")
    assert_fits(page, "admin-audit")
    page.goto("/console/admin/keys/")
    assert LONG_KEY_NAME[:40] in page.locator("table").inner_text()
    assert_fits(page, "admin-keys")


# --- Back after a correction ------------------------------------------------------------------

def status_tag(page) -> str:
    return page.locator("#memory .tag-status").inner_text().strip()


@pytest.mark.parametrize("javascript", [True, False], ids=["htmx", "no-js"])
def test_back_after_a_correction_shows_the_old_version_as_replaced(browser, live_server, tenant_a,  # noqa: F811
                                                                   javascript):
    seed_long(tenant_a)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 375, "height": 900},
                                  java_script_enabled=javascript)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        if javascript:
            sign_in_with_link(page, tenant_a, "alice")
        else:  # the button is a plain form: it works without JavaScript too
            from memoryapp.services.signin import signin_link_create

            url, _ = signin_link_create(tenant=tenant_a, subject_ref="alice", actor=ACTOR)
            page.goto(url)
            page.get_by_role("button", name="Continue to your memories").click()
            page.wait_for_url("**/console/")
        page.goto("/console/memories/")
        page.get_by_role("link", name="Alice lives in Lisbon.").click()
        page.wait_for_url("**/console/memories/mem_*/")
        old_url = page.url
        assert status_tag(page) == "Active"
        page.fill("#id_statement", "Alice lives in Porto.")
        page.get_by_role("button", name="Save correction").click()
        expect(page.locator("h1.statement")).to_have_text("Alice lives in Porto.")
        assert page.url != old_url
        page.go_back()
        page.wait_for_url(old_url)
        expect(page.locator("h1.statement")).to_have_text("Alice lives in Lisbon.")
        shot(page, f"back-after-correction-{'htmx' if javascript else 'nojs'}")
        # Served again by the server, not from a cache: the old version says it was replaced.
        assert status_tag(page) == "Superseded"
        assert page.locator("#id_statement").count() == 0
    finally:
        context.close()


def test_a_correction_of_a_replaced_version_keeps_the_typed_text_and_applies_to_the_current(sized_page,
                                                                                           tenant_a):
    page = sized_page
    seed_long(tenant_a)
    sign_in_with_link(page, tenant_a, "alice")
    page.goto("/console/memories/")
    page.get_by_role("link", name="Alice lives in Lisbon.").click()
    page.wait_for_url("**/console/memories/mem_*/")
    # Meanwhile (another tab, an agent), the memory is corrected: this page is now out of date.
    with as_tenant(tenant_a):
        old = Memory.objects.get(statement="Alice lives in Lisbon.")
        memory_correct(tenant=tenant_a, memory=old, actor=Actor("user", "alice@elsewhere"),
                       statement="Alice lives in Faro.")
    page.fill("#id_statement", "Alice lives in Braga.")
    page.get_by_role("button", name="Save correction").click()
    page.wait_for_selector("#statement-error")
    assert "replaced in the meantime" in page.locator("#statement-error").inner_text()
    assert "Alice lives in Faro." in page.locator("#statement-error").inner_text()
    assert page.input_value("#id_statement") == "Alice lives in Braga."  # nothing typed is lost
    assert page.get_attribute("#id_statement", "aria-invalid") == "true"
    shot(page, f"correction-of-replaced-version-{page.width_name}")
    page.get_by_role("button", name="Save correction").click()
    expect(page.locator("h1.statement")).to_have_text("Alice lives in Braga.")
    with as_tenant(tenant_a):
        assert Memory.objects.get(statement="Alice lives in Faro.").status == "superseded"
        assert Memory.objects.get(statement="Alice lives in Braga.").status == "active"
