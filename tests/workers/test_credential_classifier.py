"""The second opinion on credentials (memoryapp/credential_classifier.py): messages that give a
credential away in words no rule knows are withheld whole, through the real pipeline and the
real embedder; ordinary messages, also about passwords, are kept as they are.

The sentences here were written for this file, not taken from bench/data (which trained it)."""
import pytest
from django.test import override_settings

from memoryapp import credential_classifier, embeddings
from memoryapp.credential_classifier import MARKER, suspects_credential
from memoryapp.models import AuditEntry
from memoryapp.safety import find_secrets
from tests.conftest import as_tenant
from tests.workers.helpers import event, ingest, memories

pytestmark = pytest.mark.django_db

# (message, the value in it). No rule of safety.py finds any of them (asserted below).
DESCRIBED = [
    ("for the shed padlock it's 2 7 4 then the last one is 9", "2 7 4"),
    ("voicemail code, first two digits are 3 and 9", "3 and 9"),
    ("first bit is Harbour and the second bit is Lantern!52", "Lantern!52"),
]

ORDINARY = [
    "I keep forgetting my password, it's so annoying",
    "the bank says they will never ask for your pin over the phone",
    "my flight BA2490 leaves from gate 31 at 14:05",
    "order 77341 arrived today, the blender works great",
    "the recipe needs 250g flour and 2 eggs",
    "my username on the forum is teapot_tom",
    "call the dentist on 0117 496 0328 to move my appointment",
    "I scored 8272 points in tetris last night",
    "I switched to oat milk in my coffee last month",
]


@pytest.fixture(autouse=True)
def fresh_model():
    credential_classifier._model.cache_clear()
    yield
    credential_classifier._model.cache_clear()


@pytest.mark.parametrize("text,value", DESCRIBED)
def test_a_credential_described_in_words_is_withheld_whole(tenant_a, actor, text, value):
    assert find_secrets(text) == [], "a rule finds it: this test would not be about the classifier"
    ingest(tenant_a, "alice", actor, ("e1", "user", text))
    stored = event(tenant_a, "alice", "e1")
    assert stored.content == MARKER and stored.redacted and "secret_redacted" in stored.flags
    assert all(value not in m.statement for m in memories(tenant_a, "alice"))
    assert [m.statement for m in memories(tenant_a, "alice")] == [MARKER]
    with as_tenant(tenant_a):
        audited = AuditEntry.objects.get(tenant=tenant_a, action="secret_redacted")
    assert audited.details == {"kinds": ["credential_suspected"]}
    assert value not in str(audited.details)


@pytest.mark.parametrize("together", [True, False], ids=["one chunk", "two jobs"])
def test_the_next_message_continuing_a_withheld_one_is_looked_at_as_a_continuation(tenant_a, actor, together):
    first, second = DESCRIBED[2][0], "and it finishes with Gecko_44, no space"
    assert find_secrets(second) == []
    if together:
        ingest(tenant_a, "alice", actor, ("e1", "user", first), ("e2", "user", second))
    else:
        ingest(tenant_a, "alice", actor, ("e1", "user", first))
        ingest(tenant_a, "alice", actor, ("e2", "user", second))
    assert event(tenant_a, "alice", "e1").content == MARKER
    assert "Gecko_44" not in event(tenant_a, "alice", "e2").content
    assert event(tenant_a, "alice", "e2").content.startswith("and it finishes with")
    assert all("Gecko_44" not in m.statement for m in memories(tenant_a, "alice"))


def test_a_continuation_in_the_next_chunk_of_a_job_is_caught(tenant_a, actor):
    """The next chunk is claimed (and its continuations looked up) before this one is written:
    the withheld message is remembered for the job, not found in the database."""
    from memoryapp.services.extraction import WRITE_CHUNK_SIZE

    filler = [(f"f{i}", "user", f"we walked {i} km along the canal today") for i in range(WRITE_CHUNK_SIZE)]
    # The job's last WRITE_CHUNK_SIZE events are a chunk of their own: the second message opens it.
    after = [(f"g{i}", "user", f"we cycled {i} km to the coast") for i in range(WRITE_CHUNK_SIZE - 1)]
    ingest(tenant_a, "alice", actor, *filler, ("e1", "user", DESCRIBED[2][0]),
           ("e2", "user", "and it finishes with Gecko_44, no space"), *after)
    assert event(tenant_a, "alice", "e1").content == MARKER
    assert "Gecko_44" not in event(tenant_a, "alice", "e2").content


def test_a_speakers_name_before_the_message_does_not_hide_it(tenant_a, actor):
    from memoryapp.services.events import EventInput, event_append
    from tests.workers.helpers import run_job_here

    text, value = DESCRIBED[0]
    _, job = event_append(tenant=tenant_a, subject_ref="alice", actor=actor,
                          events=[EventInput("e1", "user", text, speaker="Maria Lopez")])
    run_job_here(tenant_a, job)
    assert event(tenant_a, "alice", "e1").content == MARKER


def test_weights_that_cannot_be_read_leave_the_rules_alone_in_charge(tenant_a, actor, tmp_path, monkeypatch, caplog):
    broken = tmp_path / "credential_classifier.json"
    broken.write_text('{"weights": [1, 2, 3]}')
    monkeypatch.setattr(credential_classifier, "WEIGHTS", broken)
    credential_classifier._model.cache_clear()
    text, value = DESCRIBED[0]
    ingest(tenant_a, "alice", actor, ("e1", "user", text), ("e2", "user", "My bank PIN is 4831"))
    assert event(tenant_a, "alice", "e1").content == text  # processed, by the rules alone
    assert "4831" not in event(tenant_a, "alice", "e2").content
    assert event(tenant_a, "alice", "e1").status == "processed"
    assert "cannot be loaded" in caplog.text


def test_ordinary_messages_are_kept_as_they_are(tenant_a, actor):
    ingest(tenant_a, "alice", actor, *[(f"e{i}", "user", text) for i, text in enumerate(ORDINARY)])
    for i, text in enumerate(ORDINARY):
        assert event(tenant_a, "alice", f"e{i}").content == text
    assert not any(MARKER in m.statement for m in memories(tenant_a, "alice"))


def test_a_message_with_nothing_that_could_be_a_value_is_kept_whatever_it_is_about(tenant_a, actor):
    text = "my login name for work is my first initial and surname"
    assert suspects_credential(embeddings.embed_texts([text])[0]), "the classifier passes it: nothing to test"
    ingest(tenant_a, "alice", actor, ("e1", "user", text))
    assert event(tenant_a, "alice", "e1").content == text


@pytest.mark.parametrize("text,holds", [
    ("my login name for work is my first initial and surname", False),
    ("mi contraseña del banco caducó y tengo que crear una nueva", False),
    ("so I had to go into a branch with id", False),
    ("the code is 3 and 9", True),
    ("it starts with Copper", True),
    ("the letters are kilo papa, then four", True),
    ("spelled out: h o p s c o t c h", True),
    ("my hint is 'first pet'", True),
    ("LAVENDERS is the word", True),
])
def test_what_could_hold_a_value(text, holds):
    assert credential_classifier.could_hold_value(text) is holds


def test_with_the_classifier_off_the_rules_alone_decide(tenant_a, actor):
    text, value = DESCRIBED[0]
    with override_settings(MEMORY_CREDENTIAL_CLASSIFIER=False):
        credential_classifier._model.cache_clear()
        ingest(tenant_a, "alice", actor, ("e1", "user", text))
    assert event(tenant_a, "alice", "e1").content == text


def test_a_classifier_trained_for_another_model_is_not_used(monkeypatch):
    vector = embeddings.embed_texts([DESCRIBED[0][0]])[0]
    assert suspects_credential(vector)
    credential_classifier._model.cache_clear()
    monkeypatch.setattr(embeddings, "EMBEDDING_VERSION", "another-model@1")
    assert not suspects_credential(vector)


def test_an_explicit_write_is_left_to_the_rules(tenant_a, actor):
    """Agents write statements, not chat: "Alice's locker code hint is the blue door" read as a
    credential to the classifier, and refusing an agent's write is worse than withholding a
    chat turn. Explicit writes keep the rules alone (policy_refusal)."""
    from memoryapp.services.memories import MemoryDraft, memory_write

    text = "Alice's locker code hint is the blue door."
    memory_write(tenant=tenant_a, subject_ref="alice", draft=MemoryDraft(statement=text), actor=actor)
    assert [m.statement for m in memories(tenant_a, "alice")] == [text]


def test_a_stricter_threshold_suspects_less():
    vector = embeddings.embed_texts([DESCRIBED[0][0]])[0]
    probability = credential_classifier.disclosure_probability(vector)
    with override_settings(MEMORY_CREDENTIAL_CLASSIFIER_THRESHOLD=min(0.9999, probability + (1 - probability) / 2)):
        credential_classifier._model.cache_clear()
        assert not suspects_credential(vector)


SEALED = ("the sealed secret for the payments api, safe to commit:\nkind: SealedSecret\nspec:\n  encryptedData:\n"
          "    password: AgQm3xT8vK1pW6zR9nB2cY5hL7dF0sJ4gE8uA1oI3qZ6wX9vC2bN5mK8jH1gF4dS7a==")


def test_a_sealed_secret_is_kept_whatever_the_classifier_says(tenant_a, actor):
    assert find_secrets(SEALED) == []
    assert not credential_classifier.may_withhold(SEALED)
    # A threshold low enough that the classifier suspects it, so the exemption is what keeps it.
    with override_settings(MEMORY_CREDENTIAL_CLASSIFIER_THRESHOLD=0.001):
        credential_classifier._model.cache_clear()
        assert suspects_credential(embeddings.embed_texts([SEALED])[0]), "the classifier passes it: nothing to test"
        ingest(tenant_a, "alice", actor, ("e1", "user", SEALED))
    assert event(tenant_a, "alice", "e1").content == SEALED
