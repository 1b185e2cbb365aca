"""WCAG 2.2 AA on every console page, checked by axe-core (the copy axe-playwright-python ships;
nothing is fetched) in Chromium at 1280 px and 375 px: contrast, names and labels, structure.
Pages are filled with realistic content (long text, superseded versions, an inference waiting,
a finished job, an API key) and also shown in their error states, where a field's error must be
tied to the field. Every page also has to fit its window. Screenshots go to var/screenshots/."""
from pathlib import Path

import pytest

from memoryapp.models import Memory
from memoryapp.services.memories import memory_correct
from memoryapp.services.tenants import api_key_create
from tests.conftest import as_tenant
from tests.console.conftest import ACTOR, PASSWORD, account, write_many
from tests.console.test_browser import (  # noqa: F401 (fixtures)
    REPORT_VIOLATIONS, browser, jobs_in_process, sign_in_with_link)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
WIDTHS = {"desktop": 1280, "phone": 375}
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
LONG_URL = "https://example.com/reading-list/" + "a1b2c3d4e5" * 27


@pytest.fixture(params=list(WIDTHS), ids=list(WIDTHS))
def sized_page(request, browser, live_server):  # noqa: F811
    context = browser.new_context(base_url=live_server.url, viewport={"width": WIDTHS[request.param], "height": 900})
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.width_name = request.param
    yield page
    context.close()


def axe_violations(page) -> list[dict]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, options={"runOnly": {"type": "tag", "values": WCAG_AA}, "resultTypes": ["violations"]})
    return results.response["violations"]


def describe(violations: list[dict]) -> str:
    lines = []
    for v in violations:
        for node in v["nodes"][:5]:
            lines.append(f"{v['id']} ({v['impact']}): {', '.join(map(str, node['target']))}: "
                         f"{node.get('failureSummary', '').replace(chr(10), ' ')}")
    return "\n".join(lines)


def check_page(page, name: str) -> list[str]:
    """The page's problems, as lines: axe's WCAG A/AA violations, and any widening of the window."""
    page.wait_for_load_state("load")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"a11y-{name}-{page.width_name}.png"), full_page=True)
    problems = [f"{name}: {line}" for line in describe(axe_violations(page)).splitlines()]
    size = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    if size[0] > size[1]:
        problems.append(f"{name}: {size[0]} px wide in a {size[1]} px window")
    return problems


def seed(tenant):
    write_many(tenant, "alice", [
        "Alice lives in Lisbon.",
        f"Alice keeps her reading list at {LONG_URL}",
        "Alice is vegetarian.",
    ])
    write_many(tenant, "alice", ["Alice booked a trip to Porto for May."], memory_type="episodic", source_kind="user")
    write_many(tenant, "alice", ["Always answer Alice in Portuguese."], memory_type="procedural")
    # An inference waits for her answer on the review page.
    write_many(tenant, "alice", ["Alice probably enjoys hiking."], source_kind="assistant")
    with as_tenant(tenant):
        lisbon = Memory.objects.get(statement="Alice lives in Lisbon.")
        memory_correct(tenant=tenant, memory=lisbon, actor=ACTOR, statement="Alice lives in Porto.")
        key, _ = api_key_create(tenant=tenant, name="helpdesk agent (production)", subject_ref="alice", actor=ACTOR)
    return key.id


def ids(tenant):
    with as_tenant(tenant):
        return {
            "current": Memory.objects.get(statement="Alice lives in Porto.").public_id,
            "replaced": Memory.objects.get(statement="Alice lives in Lisbon.").public_id,
            "long": Memory.objects.get(statement__contains=LONG_URL).public_id,
        }


def test_every_page_of_a_persons_console_meets_wcag_aa(sized_page, tenant_a, jobs_in_process):  # noqa: F811
    page = sized_page
    seed(tenant_a)
    memory = ids(tenant_a)
    problems = []
    page.goto("/console/login/")
    problems += check_page(page, "login")
    page.goto("/console/link/" + "x" * 40)
    problems += check_page(page, "link-continue")
    page.goto("/console/link/short")
    problems += check_page(page, "link-invalid")
    sign_in_with_link(page, tenant_a, "alice")
    problems += check_page(page, "overview")
    pages = [
        ("/console/memories/", "memory-list"),
        ("/console/memories/?q=Porto&memory_type=semantic", "memory-list-filtered"),
        (f"/console/memories/{memory['current']}/", "memory-detail"),
        (f"/console/memories/{memory['replaced']}/", "memory-detail-superseded"),
        (f"/console/memories/{memory['long']}/", "memory-detail-long"),
        (f"/console/memories/{memory['current']}/forget/", "memory-forget"),
        ("/console/review/", "review"),
        ("/console/data/", "data"),
        ("/console/reads/", "reads"),
        ("/console/memories/mem_doesnotexist/", "not-found"),
    ]
    for path, name in pages:
        page.goto(path)
        problems += check_page(page, name)

    # Error states: the erase confirmation typed wrong, an empty correction.
    page.goto("/console/data/")
    page.fill("#id_confirm", "yes")
    page.get_by_role("button", name="Erase everything about me").click()
    page.wait_for_selector("#confirm-error")
    field = page.locator("#id_confirm")
    assert field.get_attribute("aria-invalid") == "true"
    assert "confirm-error" in field.get_attribute("aria-describedby").split()
    problems += check_page(page, "data-erase-error")
    page.goto(f"/console/memories/{memory['current']}/")
    page.fill("#id_statement", " ")
    page.locator("#id_statement").evaluate("t => t.removeAttribute('required')")
    page.get_by_role("button", name="Save correction").click()
    page.wait_for_selector("#statement-error")
    assert page.locator("#id_statement").get_attribute("aria-describedby") == "statement-error"
    problems += check_page(page, "memory-correction-error")

    # A finished job: the export, with its receipt.
    page.goto("/console/data/")
    page.get_by_role("button", name="Prepare my export").click()
    page.wait_for_url("**/console/jobs/job_*/")
    page.wait_for_selector("#download", timeout=60_000)
    problems += check_page(page, "job-export")

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/console/signed-out/")
    problems += check_page(page, "signed-out")
    assert not problems, "\n".join(problems)


def test_every_admin_page_meets_wcag_aa(sized_page, tenant_a):
    page = sized_page
    key_id = seed(tenant_a)
    memory = ids(tenant_a)
    account(tenant_a, "admin@a.example", is_admin=True)
    page.goto("/console/login/")
    page.fill("#id_username", "admin@a.example")
    page.fill("#id_password", "wrong password")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector(".error-box")
    problems = check_page(page, "login-error")
    page.fill("#id_username", "admin@a.example")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/admin/audit/")
    problems += check_page(page, "admin-audit")
    pages = [
        ("/console/admin/audit/?since=2030-01-02T00:00&until=2030-01-01T00:00", "admin-audit-bad-range"),
        ("/console/admin/audit/?subject=alice", "admin-audit-filtered"),
        (f"/console/admin/memories/{memory['current']}/", "admin-memory"),
        ("/console/admin/jobs/", "admin-jobs"),
        ("/console/admin/quarantine/", "admin-quarantine"),
        ("/console/admin/approvals/", "admin-approvals"),
        ("/console/admin/conflicts/", "admin-conflicts"),
        ("/console/admin/keys/", "admin-keys"),
        (f"/console/admin/keys/{key_id}/reads/", "admin-key-reads"),
    ]
    for path, name in pages:
        page.goto(path)
        problems += check_page(page, name)
    # A new key, shown once.
    page.goto("/console/admin/keys/")
    page.fill("#id_name", "a new key")
    page.get_by_role("button", name="Create key").click()
    page.wait_for_selector("#new-key-value")
    problems += check_page(page, "admin-key-created")
    assert not problems, "\n".join(problems)


def test_the_check_sees_a_contrast_and_label_violation(sized_page):
    # Worth something only if axe does report: a pale text and an unlabelled input, added by hand.
    page = sized_page
    page.goto("/console/login/")
    page.evaluate("""() => {
        const p = document.createElement('p'); p.textContent = 'pale text'; p.className = 'pale-for-test';
        const sheet = new CSSStyleSheet(); sheet.replaceSync('.pale-for-test { color: #c8c8c8; }');
        document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
        const input = document.createElement('input'); input.type = 'text';
        document.querySelector('main').append(p, input);
    }""")
    found = {v["id"] for v in axe_violations(page)}
    assert {"color-contrast", "label"} <= found, found


# axe checks text contrast only; WCAG 1.4.11 (non-text contrast) asks 3:1 of what identifies a
# control and of the focus indicator, measured here from the computed styles.

def relative_luminance(rgb: str) -> float:
    r, g, b = (int(float(c)) / 255 for c in rgb[rgb.index("(") + 1:rgb.index(")")].split(",")[:3])
    def channel(c):
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    high, low = sorted([relative_luminance(a), relative_luminance(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_control_borders_and_the_focus_ring_stand_out_at_3_to_1(sized_page, tenant_a):
    page = sized_page
    seed(tenant_a)
    sign_in_with_link(page, tenant_a, "alice")
    page.goto("/console/memories/")
    controls = page.evaluate("""() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
        .map(e => ({id: e.id, border: getComputedStyle(e).borderTopColor,
                    behind: getComputedStyle(e).backgroundColor}))""")
    assert controls
    for control in controls:
        assert contrast(control["border"], control["behind"]) >= 3, control
        assert contrast(control["border"], "rgb(246, 247, 249)") >= 3, control  # the page around it
    page.locator("#id_q").focus()
    page.keyboard.press("Tab")  # keyboard focus, so :focus-visible applies
    ring = page.evaluate("""() => { const s = getComputedStyle(document.activeElement);
        return {color: s.outlineColor, width: parseFloat(s.outlineWidth), style: s.outlineStyle}; }""")
    assert ring["style"] != "none" and ring["width"] >= 2, ring
    assert contrast(ring["color"], "rgb(255, 255, 255)") >= 3, ring
    assert contrast(ring["color"], "rgb(246, 247, 249)") >= 3, ring
