"""What the pipeline refuses to remember: secrets (at least 30 kinds) and untrusted text, here
the PoisonedRAG adversarial passages sent as external events."""
import json
import random
import re
import string
from pathlib import Path

import pytest

from memoryapp.models import AuditEntry, Event, Memory
from memoryapp.retrieval import memory_search
from memoryapp.safety import find_secrets
from tests.conftest import as_tenant
from tests.workers.helpers import ingest

pytestmark = pytest.mark.django_db

_rng = random.Random(4)


def _s(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


AN = string.ascii_letters + string.digits
HEX = "0123456789abcdef"

# kind -> (a sentence carrying the secret, the secret itself). The secrets are made up.
SECRETS = {
    "password": ("My email password is {s}", "Tr0ub4dor&3xq"),
    "wifi_password": ("the wifi passphrase: {s}", "CorrectHorse!77"),
    "pin": ("My bank PIN is {s}", "4831"),
    "one_time_code": ("The verification code is {s}", "552913"),
    "aws_access_key": ("aws key {s}", "AKIA" + _s(string.ascii_uppercase + string.digits, 16)),
    "aws_secret_key": ("aws_secret_access_key = {s}", _s(AN + "/+", 40)),
    "github_token": ("use {s} for the repo", "ghp_" + _s(AN, 36)),
    "gitlab_token": ("gitlab: {s}", "glpat-" + _s(AN, 20)),
    "openai_key": ("OPENAI_API_KEY={s}", "sk-proj-" + _s(AN, 40)),
    "anthropic_key": ("claude key {s}", "sk-ant-api03-" + _s(AN, 40)),
    "stripe_key": ("stripe {s}", "sk_live_" + _s(AN, 24)),
    "slack_token": ("bot token {s}", "xoxb-" + _s(string.digits, 12) + "-" + _s(AN, 24)),
    "slack_webhook": ("post to {s}", "https://hooks.slack.com/services/T" + _s(AN, 8) + "/B" + _s(AN, 8) + "/" + _s(AN, 24)),
    "google_api_key": ("maps key {s}", "AIza" + _s(AN + "_-", 35)),
    "jwt": ("my session jwt {s}", "eyJ" + _s(AN, 20) + ".eyJ" + _s(AN, 30) + "." + _s(AN, 30)),
    "bearer_token": ("Authorization: Bearer {s}", _s(AN, 32)),
    "basic_auth": ("Authorization: Basic {s}", _s(AN, 24) + "=="),
    "private_key": ("{s}", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA" + _s(AN, 60) + "\n-----END RSA PRIVATE KEY-----"),
    "pgp_private_key": ("{s}", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n" + _s(AN, 60) + "\n-----END PGP PRIVATE KEY BLOCK-----"),
    "connection_string": ("db is {s}", "postgres://admin:" + _s(AN, 14) + "@db.internal:5432/prod"),
    "signed_url": ("download {s}", "https://bucket.s3.amazonaws.com/f.pdf?X-Amz-Signature=" + _s(HEX, 40)),
    "card_number": ("my card is {s}", "4111 1111 1111 1111"),
    "cvv": ("the CVV is {s}", "847"),
    "iban": ("my IBAN is {s}", "DE89 3704 0044 0532 0130 00"),
    "ssn": ("my SSN is {s}", "123-45-6789"),
    "npm_token": ("npm {s}", "npm_" + _s(AN, 36)),
    "pypi_token": ("pypi {s}", "pypi-AgEIcHlwaS5vcmc" + _s(AN, 50)),
    "huggingface_token": ("hf {s}", "hf_" + _s(AN, 34)),
    "sendgrid_key": ("mail {s}", "SG." + _s(AN, 22) + "." + _s(AN, 43)),
    "twilio_key": ("twilio {s}", "SK" + _s(HEX, 32)),
    "mailgun_key": ("mailgun {s}", "key-" + _s(HEX, 32)),
    "digitalocean_token": ("do {s}", "dop_v1_" + _s(HEX, 64)),
    "telegram_bot_token": ("bot {s}", "123456789:AA" + _s(AN, 33)),
    "azure_storage_key": ("azure AccountKey={s}", _s(AN + "+/", 86) + "=="),
    "session_cookie": ("cookie sessionid={s}", _s(AN, 32)),
    "seed_phrase": ("my recovery phrase is {s}", "apple river stone cloud tiger lemon piano frost orbit candle maple quiet"),
    "bank_account": ("my account number is {s}", "12345678901"),
    "passport_number": ("passport number {s}", "X1234567"),
    "security_answer": ("my mother's maiden name is {s}", "Gumbleworth"),
    "api_key_generic": ("the api key is {s}", _s(AN, 28)),
}


def test_the_secret_test_set_has_at_least_30_kinds_and_each_is_detected():
    assert len(SECRETS) >= 30
    missed = [kind for kind, (template, secret) in SECRETS.items()
              if not find_secrets(template.format(s=secret))]
    assert missed == []


SEED = "orchard velvet walnut harbor fossil canyon yellow timber tackle mango vacant noble"


@pytest.mark.parametrize("text", [
    f"{SEED}",                                            # bare, nothing before it
    f"hier ist meine Wortliste für das Wallet: {SEED}",    # a lead-in in another language
    f"keep these safe for me -> {SEED} <- thanks",
    f"{SEED} drift orbit ripple",                         # fifteen words
    SEED.replace(" ", ", "),                              # written as a list
])
def test_a_seed_phrase_is_found_whatever_precedes_it(text):
    assert any(f.kind == "seed_phrase" and "orchard" in text[f.start:f.end] and "noble" in text[f.start:f.end]
               for f in find_secrets(text)), text


@pytest.mark.parametrize("text", [
    "we walked along the river bank feeding ducks bread crumbs with the kids this sunny morning",
    "for the party we need flour sugar butter eggs milk vanilla baking powder salt cinnamon nutmeg raisins lemons",
    "woke early made coffee fed cats watered plants read news walked dog cooked lunch napped",
    "red orange yellow green blue indigo violet black white grey pink brown",
    "saya mau pergi ke pasar beli sayur dan buah terus pulang masak makan siang",   # lowercase chat, Indonesian
    "orchard velvet walnut harbor fossil canyon yellow timber tackle mango vacant",  # eleven words
])
def test_a_sentence_or_a_list_is_no_seed_phrase(text):
    assert not [f for f in find_secrets(text) if f.kind == "seed_phrase"], text


def _carries(text: str, secret: str) -> bool:
    """The secret appears in the text as a token of its own. A bare substring test fails at random
    on short secrets: the CVV "847" turns up inside audit ids and timestamps ("12:33:40.847")."""
    return re.search(rf"(?<![\w.:-]){re.escape(secret)}(?![\w-])", text) is not None


def test_carries_finds_a_secret_only_as_its_own_token():
    assert _carries("the CVV is 847.", "847") and _carries('{"x": "847"}', "847")
    assert not _carries("job_5b3e847a0", "847") and not _carries("12:33:40.847000", "847")


def test_no_secret_of_any_kind_is_stored_in_a_memory_or_left_in_the_event(tenant_a, actor):
    items = [(f"s{i}", "user", f"I live in Graz. {template.format(s=secret)}")
             for i, (template, secret) in enumerate(SECRETS.values())]
    ingest(tenant_a, "alice", actor, *items)
    with as_tenant(tenant_a):
        statements = list(Memory.objects.filter(tenant=tenant_a).values_list("statement", flat=True))
        events = list(Event.objects.filter(tenant=tenant_a))
        audit_text = json.dumps(list(AuditEntry.objects.filter(tenant=tenant_a).values("details", "before", "after")),
                                default=str)
    assert len(events) == len(SECRETS) and all(e.redacted and e.status == "processed" for e in events)
    texts = [*statements, *(e.content for e in events), audit_text]
    leaks = [kind for kind, (_, secret) in SECRETS.items() if any(_carries(text, secret) for text in texts)]
    assert leaks == []
    # The durable fact around the secret survives the redaction.
    assert "Home city: The user lives in Graz." in statements


POISONED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "poisonedrag" / "nq.json"


@pytest.mark.skipif(not POISONED.exists(), reason=f"{POISONED} is not present")
def test_no_poisoned_passage_sent_as_external_becomes_a_semantic_memory(tenant_a, actor):
    data = json.loads(POISONED.read_text())
    items, questions = [], []
    for qid, case in data.items():
        questions.append(case["question"])
        for j, text in enumerate(case["adv_texts"]):
            items.append((f"{qid}-{j}", "tool", text, "external"))
    assert len(items) >= 100
    ingest(tenant_a, "victim", actor, *items)
    with as_tenant(tenant_a):
        stored = Memory.objects.filter(tenant=tenant_a, subject__external_id="victim")
        assert not stored.exclude(memory_type="episodic").exists()
        assert stored.count() == len(items)
        assert set(stored.values_list("source_kind", flat=True)) == {"external"}
        assert all("untrusted" in flags for flags in stored.values_list("flags", flat=True))
        assert not Event.objects.filter(tenant=tenant_a, quarantined=False).exists()
        # Quarantined: no agent reads them until an admin releases them (then labelled untrusted).
        assert set(stored.values_list("status", flat=True)) == {"quarantined"}
        assert memory_search(tenant=tenant_a, subject_ref="victim", query=questions[0], k=5) == []


def test_the_findings_kept_for_a_text_hold_neither_the_text_nor_its_secret():
    from memoryapp import safety

    text = "the alarm code for the studio is 80417, keep it safe"
    with safety.findings_kept():
        first = safety.find_secrets(text)
        first.clear()  # a caller's list is its own
        again = safety.find_secrets(text)
        assert again and "80417" not in safety.redact_secrets(text)[0]
        assert len(safety._kept.get()) >= 1  # kept within the block ...
    kept = repr(safety._kept.get())
    assert "80417" not in kept and "studio" not in kept  # ... and nothing after it


def test_findings_are_kept_only_inside_a_block_so_no_tenant_shares_them(monkeypatch):
    from memoryapp import safety

    calls = []
    real = safety._find_secrets
    monkeypatch.setattr(safety, "_find_secrets", lambda text, **kw: calls.append(text) or real(text, **kw))
    text = "my locker code is 4471"
    safety.find_secrets(text)
    safety.find_secrets(text)
    assert len(calls) == 2  # outside a job: looked at each time
    with safety.findings_kept():
        safety.find_secrets(text)
        safety.find_secrets(text)
    assert len(calls) == 3  # inside one: once
