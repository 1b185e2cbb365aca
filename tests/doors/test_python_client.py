"""Our Python client (clients/python) against a live gunicorn and a real worker: every
operation of the contract, errors as exceptions with the contract's codes, retries that never
write twice, the async client, and the same isolation as the v1 API."""
import asyncio
import socket

import httpx
import pytest

from tests.doors.python_client import wait_until_jobs_settle  # (and this checkout's memory_client first)
from memory_client import (
    AsyncMemoryClient, AuthenticationError, BadRequestError, ConflictError, MemoryClient, MemoryConnectionError,
    NotFoundError, PermissionDeniedError, PolicyRejectedError,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

UNKNOWN_ID = "mem_" + "0" * 32


@pytest.fixture(autouse=True)
def settled(live_service):
    yield
    wait_until_jobs_settle()


class LosesAnswers(httpx.BaseTransport):
    """A real transport to the live service that, for the first `times` requests matching
    (method, path suffix), lets the service do the work and then loses its answer: a read error,
    or a 502 from a proxy in between. Records every request it forwards."""

    def __init__(self, method: str, suffix: str, *, times: int = 1, as_status: int | None = None):
        self.inner = httpx.HTTPTransport()
        self.method, self.suffix, self.left, self.as_status = method, suffix, times, as_status
        self.seen: list[tuple[httpx.Request, httpx.Response]] = []

    def handle_request(self, request):
        response = self.inner.handle_request(request)
        response.read()
        self.seen.append((request, response))
        if self.left and request.method == self.method and request.url.path.endswith(self.suffix):
            self.left -= 1
            if self.as_status is None:
                raise httpx.ReadError("connection reset after the request was sent", request=request)
            return httpx.Response(self.as_status, text="<html>Bad gateway</html>", request=request)
        return response

    def close(self):
        self.inner.close()


class AsyncLosesAnswers(httpx.AsyncBaseTransport):
    """LosesAnswers for the async client."""

    def __init__(self, method: str, suffix: str):
        self.inner = httpx.AsyncHTTPTransport()
        self.method, self.suffix, self.left = method, suffix, 1
        self.seen: list[tuple[httpx.Request, httpx.Response]] = []

    async def handle_async_request(self, request):
        response = await self.inner.handle_async_request(request)
        await response.aread()
        self.seen.append((request, response))
        if self.left and request.method == self.method and request.url.path.endswith(self.suffix):
            self.left -= 1
            raise httpx.ReadError("connection reset after the request was sent", request=request)
        return response

    async def aclose(self):
        await self.inner.aclose()


def client(base_url, key, **kwargs):
    return MemoryClient(base_url, key, backoff=0.01, **kwargs)


def test_every_operation_of_the_contract_works_through_the_sync_client(live_service, keys):
    with client(live_service, keys["a"]) as memory:
        assert memory.health()["status"] == "ok"
        assert memory.key_info()["subject"] is None
        written = memory.write_memory("alice", "My favourite tea is genmaicha.", namespace="prefs/drinks",
                                      importance=0.8, metadata={"from": "client-test"})
        assert written["id"].startswith("mem_") and written["subject"] == "alice"
        assert written["namespace"] == "prefs/drinks" and written["metadata"] == {"from": "client-test"}
        assert memory.get_memory("alice", written["id"])["statement"] == "My favourite tea is genmaicha."
        page = memory.list_memories("alice", namespace="prefs", limit=10)
        assert [m["id"] for m in page["results"]] == [written["id"]] and page["next_cursor"] is None
        assert memory.list_memories("alice", q="coffee")["results"] == []

        corrected = memory.correct_memory("alice", written["id"], statement="My favourite tea is sencha.")
        assert corrected["supersedes"] == [written["id"]] and corrected["statement"].endswith("sencha.")
        history = memory.memory_history("alice", corrected["id"])
        assert [v["id"] for v in history["versions"]] == [written["id"], corrected["id"]]

        hits = memory.search("alice", "Which tea do I like?", k=3)
        assert hits[0]["id"] == corrected["id"] and 0 <= hits[0]["score"] <= 1
        assert written["id"] not in [h["id"] for h in hits]
        context = memory.context("alice", "tea", token_budget=200)
        assert "sencha" in context["context"] and context["tokens"] <= 200

        accepted = memory.append_events("alice", [{"event_id": "e-1", "role": "user", "content": "I live in Oslo."}])
        assert accepted["events"][0]["duplicate"] is False and accepted["job"].startswith("job_")
        assert memory.wait_for_job(accepted["job"])["status"] == "succeeded"
        again = memory.append_events("alice", {"event_id": "e-1", "role": "user", "content": "I live in Oslo."})
        assert again["events"][0]["duplicate"] is True

        counts = {n["namespace"]: n["memories"] for n in memory.list_namespaces("alice")["namespaces"]}
        assert counts["prefs/drinks"] == 1  # the correction is current, the first version superseded
        assert "prefs/drinks" in [n["namespace"] for n in memory.iter_namespaces("alice")]

        forgotten = memory.forget_memory("alice", corrected["id"])
        assert forgotten["job"].startswith("job_")
        with pytest.raises(NotFoundError):
            memory.get_memory("alice", corrected["id"])  # gone at once, before the job has run
        assert memory.wait_for_job(forgotten["job"])["status"] == "succeeded"

        export = memory.wait_for_job(memory.request_export("alice")["job"])
        assert export["status"] == "succeeded"
        document = memory.download_export(export["result"]["download"])
        assert isinstance(document, dict) and "memories" in document

        link = memory.console_link("alice")
        assert link["url"].startswith("http") and link["expires_at"]

        memory.write_memory("bob", "Bob plays chess.")
        receipt = memory.wait_for_job(memory.erase_subject("bob")["job"])
        assert receipt["status"] == "succeeded" and receipt["result"]
        assert memory.list_memories("bob")["results"] == []


def test_iter_memories_follows_the_cursor_to_the_end(live_service, keys):
    with client(live_service, keys["a"]) as memory:
        ids = {memory.write_memory("alice", f"Numbered fact {n} about lamps.")["id"] for n in range(5)}
        assert memory.list_memories("alice", limit=2)["next_cursor"] is not None
        assert {m["id"] for m in memory.iter_memories("alice", limit=2)} == ids


def test_errors_are_exceptions_carrying_the_contract_code_status_and_details(live_service, keys):
    with client(live_service, "not-a-key") as stranger, pytest.raises(AuthenticationError) as unauthenticated:
        stranger.list_memories("alice")
    assert unauthenticated.value.code == "unauthenticated" and unauthenticated.value.status == 401

    with client(live_service, keys["a_alice"]) as alice:
        with pytest.raises(PermissionDeniedError) as forbidden:
            alice.list_memories("bob")
        assert forbidden.value.code == "subject_forbidden" and forbidden.value.status == 403
        with pytest.raises(NotFoundError) as missing:
            alice.get_memory("alice", UNKNOWN_ID)
        assert missing.value.code == "memory_not_found" and missing.value.status == 404
        with pytest.raises(BadRequestError) as invalid:
            alice.write_memory("alice", "A fine statement.", confidence=7)
        assert invalid.value.code == "invalid_request" and "confidence" in invalid.value.details
        with pytest.raises(PolicyRejectedError) as refused:
            alice.write_memory("alice", "My AWS key is AKIAIOSFODNN7EXAMPLE")
        assert refused.value.code == "policy_rejected" and refused.value.status == 422
        assert refused.value.details.get("secret_kinds")
        alice.write_memory("alice", "I like kites.", idempotency_key="fixed-key-1")
        with pytest.raises(ConflictError) as reused:
            alice.write_memory("alice", "I like boats.", idempotency_key="fixed-key-1")
        assert reused.value.code == "idempotency_key_reused" and reused.value.status == 409

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    with client(f"http://127.0.0.1:{closed_port}", keys["a"], max_retries=1) as nowhere:
        with pytest.raises(MemoryConnectionError) as unreachable:
            nowhere.health()
    assert unreachable.value.code == "connection_error" and unreachable.value.status is None


def test_the_same_idempotency_key_twice_stores_one_memory(live_service, keys):
    with client(live_service, keys["a"]) as memory:
        first = memory.write_memory("alice", "I keep bees.", idempotency_key="bees-1")
        second = memory.write_memory("alice", "I keep bees.", idempotency_key="bees-1")
        assert second["id"] == first["id"]
        assert [m["id"] for m in memory.list_memories("alice")["results"]] == [first["id"]]


def test_a_write_whose_answer_is_lost_is_retried_with_its_key_and_replayed_not_repeated(live_service, keys):
    transport = LosesAnswers("POST", "/memories")
    with httpx.Client(transport=transport) as http, client(live_service, keys["a"], http_client=http) as memory:
        written = memory.write_memory("alice", "I cycle to work.")
        posts = [(req, resp) for req, resp in transport.seen if req.method == "POST"]
        assert len(posts) == 2
        assert posts[0][0].headers["Idempotency-Key"] == posts[1][0].headers["Idempotency-Key"]
        assert posts[1][1].headers.get("Idempotent-Replayed") == "true"
        assert posts[0][1].json()["id"] == written["id"]
        assert [m["id"] for m in memory.list_memories("alice")["results"]] == [written["id"]]


def test_a_correction_retried_after_a_5xx_makes_one_new_version(live_service, keys):
    with client(live_service, keys["a"]) as memory:
        original = memory.write_memory("alice", "My desk is by the window.")
    transport = LosesAnswers("PATCH", original["id"], as_status=502)
    with httpx.Client(transport=transport) as http, client(live_service, keys["a"], http_client=http) as memory:
        corrected = memory.correct_memory("alice", original["id"], statement="My desk is by the door.")
        assert len([r for r, _ in transport.seen if r.method == "PATCH"]) == 2
        history = memory.memory_history("alice", corrected["id"])
        assert [v["id"] for v in history["versions"]] == [original["id"], corrected["id"]]


def test_a_forget_whose_answer_is_lost_is_not_sent_again(live_service, keys):
    with client(live_service, keys["a"]) as memory:
        doomed = memory.write_memory("alice", "My bike lock is orange.")
    transport = LosesAnswers("DELETE", doomed["id"])
    with httpx.Client(transport=transport) as http, client(live_service, keys["a"], http_client=http) as memory:
        with pytest.raises(MemoryConnectionError):
            memory.forget_memory("alice", doomed["id"])
        assert len([r for r, _ in transport.seen if r.method == "DELETE"]) == 1
        with pytest.raises(NotFoundError):
            memory.get_memory("alice", doomed["id"])  # the one request did forget it


def test_the_async_client_covers_the_same_operations(live_service, keys):
    async def scenario():
        async with AsyncMemoryClient(live_service, keys["a_alice"], backoff=0.01) as memory:
            info = await memory.key_info()
            written = await memory.write_memory("alice", "I am learning Welsh.", namespace="learning")
            listed = [m["id"] async for m in memory.iter_memories("alice", namespace="learning")]
            hits = await memory.search("alice", "Which language am I learning?", k=2)
            corrected = await memory.correct_memory("alice", written["id"], statement="I am learning Irish.")
            history = await memory.memory_history("alice", corrected["id"])
            context = await memory.context("alice", "language")
            namespaces = [n["namespace"] async for n in memory.iter_namespaces("alice")]
            job = await memory.forget_memory("alice", corrected["id"])
            try:
                await memory.get_memory("alice", corrected["id"])
                gone = False
            except NotFoundError:
                gone = True
            finished = await memory.wait_for_job(job["job"])
            try:
                await memory.list_memories("bob")
                forbidden = None
            except PermissionDeniedError as exc:
                forbidden = exc.code
            return info, written, listed, hits, corrected, history, context, namespaces, gone, finished, forbidden

    info, written, listed, hits, corrected, history, context, namespaces, gone, finished, forbidden = asyncio.run(
        scenario())
    assert info["subject"] == "alice"
    assert listed == [written["id"]] and hits[0]["id"] == written["id"]
    assert corrected["supersedes"] == [written["id"]]
    assert [v["id"] for v in history["versions"]] == [written["id"], corrected["id"]]
    assert "Irish" in context["context"] and namespaces == ["learning"]
    assert gone and finished["status"] == "succeeded" and forbidden == "subject_forbidden"


def test_the_async_client_retries_a_lost_write_under_the_same_key(live_service, keys):
    transport = AsyncLosesAnswers("POST", "/memories")

    async def scenario():
        async with (httpx.AsyncClient(transport=transport) as http,
                    AsyncMemoryClient(live_service, keys["a"], backoff=0.01, http_client=http) as memory):
            written = await memory.write_memory("alice", "I collect stamps.")
            listed = await memory.list_memories("alice")
        return written, listed

    written, listed = asyncio.run(scenario())
    posts = [(req, resp) for req, resp in transport.seen if req.method == "POST"]
    assert len(posts) == 2 and posts[0][0].headers["Idempotency-Key"] == posts[1][0].headers["Idempotency-Key"]
    assert posts[1][1].headers.get("Idempotent-Replayed") == "true"
    assert [m["id"] for m in listed["results"]] == [written["id"]]


def test_another_tenants_key_sees_nothing_and_a_bound_key_only_its_subject(live_service, keys):
    with client(live_service, keys["a"]) as a:
        secret = a.write_memory("alice", "Alice's allergy is to peanuts.", namespace="health")
        a.write_memory("bob", "Bob's allergy is to cats.")
    with client(live_service, keys["b"]) as b:
        assert b.list_memories("alice")["results"] == []
        assert b.search("alice", "allergy") == []
        assert b.list_namespaces("alice")["namespaces"] == []
        with pytest.raises(NotFoundError):
            b.get_memory("alice", secret["id"])
        with pytest.raises(NotFoundError):
            b.forget_memory("alice", secret["id"])
    with client(live_service, keys["a_bob"]) as bob:
        assert [m["statement"] for m in bob.list_memories("bob")["results"]] == ["Bob's allergy is to cats."]
        for call in (lambda: bob.list_memories("alice"), lambda: bob.search("alice", "allergy"),
                     lambda: bob.get_memory("alice", secret["id"]), lambda: bob.list_namespaces("alice"),
                     lambda: bob.write_memory("alice", "Injected."), lambda: bob.erase_subject("alice")):
            with pytest.raises(PermissionDeniedError):
                call()
    with client(live_service, keys["a"]) as a:
        assert a.get_memory("alice", secret["id"])["status"] == "active"
