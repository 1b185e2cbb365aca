"""The optional LLM extractor against a small local server speaking /v1/chat/completions."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.workers.helpers import ingest, memories

pytestmark = pytest.mark.django_db


class FakeChat(BaseHTTPRequestHandler):
    mode = "good"
    requests: list = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeChat.requests.append((self.path, body))
        if FakeChat.mode == "slow":
            time.sleep(1.5)
        if FakeChat.mode == "garbage":
            content = "Sure! Here are the memories: the user lives somewhere."
        else:
            content = json.dumps({"memories": [
                {"statement": "The user is relocating to Kyoto.", "kind": "correction", "key": "user:home_city",
                 "value": "Kyoto", "confidence": 0.9, "decision": "update"},
                {"statement": "ignored", "kind": "fact", "key": "", "decision": "none"},
            ]})
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout case)

    def log_message(self, *args):
        pass


@pytest.fixture
def chat_server(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeChat.requests = []
    settings.MEMORY_LLM_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.MEMORY_LLM_MODEL = "test-model"
    settings.MEMORY_LLM_TIMEOUT = 0.5
    yield FakeChat
    server.shutdown()
    server.server_close()


def test_llm_candidates_go_through_the_same_write_policy(chat_server, tenant_a, actor):
    chat_server.mode = "good"
    ingest(tenant_a, "alice", actor, ("e1", "user", "We are packing, Kyoto here we come."))
    path, body = chat_server.requests[0]
    assert path == "/v1/chat/completions" and body["model"] == "test-model"
    [fact] = memories(tenant_a, "alice", memory_type="semantic")
    assert (fact.statement, fact.key, fact.extractor_version) == ("The user is relocating to Kyoto.",
                                                                   "user:home_city", "llm:test-model")
    assert fact.metadata["decision"] == "update"


def test_llm_timeout_falls_back_to_the_rules(chat_server, tenant_a, actor):
    chat_server.mode = "slow"
    started = time.monotonic()
    ingest(tenant_a, "alice", actor, ("e1", "user", "I live in Nagoya."))
    assert time.monotonic() - started < 30
    [fact] = memories(tenant_a, "alice", memory_type="semantic")
    assert fact.statement == "Home city: The user lives in Nagoya." and fact.extractor_version.startswith("rules")


def test_llm_bad_output_falls_back_to_the_rules(chat_server, tenant_a, actor):
    chat_server.mode = "garbage"
    ingest(tenant_a, "alice", actor, ("e1", "user", "My favourite tea is sencha."))
    [fact] = memories(tenant_a, "alice", memory_type="semantic")
    assert fact.key == "user:preference:tea" and fact.extractor_version.startswith("rules")


def test_llm_is_never_asked_about_untrusted_content(chat_server, tenant_a, actor):
    chat_server.mode = "good"
    ingest(tenant_a, "alice", actor, ("w1", "tool", "The user moved to Kyoto.", "external"))
    assert chat_server.requests == []
    assert memories(tenant_a, "alice", memory_type="semantic") == []


def test_with_the_llm_extractor_events_are_claimed_a_write_at_a_time(chat_server, tenant_a, actor, monkeypatch):
    # Each event costs a model call while its chunk is prepared, one chunk ahead of its write:
    # chunks as large as the rules extractor's would let slow calls outlast the stale-claim
    # window. 6 events with writes of 2: chunks of 2, where the rules would take all 6 at once.
    from memoryapp.services import extraction

    chat_server.mode = "good"
    monkeypatch.setattr(extraction, "CHUNK_SIZE", 8)
    monkeypatch.setattr(extraction, "WRITE_CHUNK_SIZE", 2)
    monkeypatch.setattr(extraction, "LLM_CHUNK_SIZE", 2)
    real_embed, embedded = extraction._embed, []

    def counting_embed(prepared, *rest):
        embedded.append(len(prepared))
        return real_embed(prepared, *rest)

    monkeypatch.setattr(extraction, "_embed", counting_embed)
    ingest(tenant_a, "alice", actor, *[(f"e{i}", "user", f"Day {i} of packing for Kyoto.") for i in range(6)])
    assert embedded == [2, 2, 2]
    assert len(chat_server.requests) == 6
