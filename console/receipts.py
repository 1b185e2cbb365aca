"""A deletion job's receipt in plain words. The receipt itself (the job's result, written by
services/erasure.py) counts what was removed by internal kind; the console says what each kind
is, leaves out what is zero, and states the check that nothing remains."""
from memoryapp.models import Job

# The receipt's kinds (erasure.RECEIPT_KINDS) in words, in the order a person reads them.
KIND_WORDS = {
    "subjects": "your record as a person",
    "memories": "memories",
    "derived_memories": "summaries and facts made from them",
    "events": "messages they came from",
    "embeddings": "search indexes of their text",
    "evidence_links": "links from memories to their messages",
    "lineage_links": "links from memories to what was made from them",
    "memory_changes": "records of earlier states of the memories",
    "export_files": "export files (each held a copy)",
    "read_audit_rows": "records of who read them",
    "read_audit_refs": "mentions of them in records of who read what",
    "idempotency_records": "stored replies to repeated requests that quoted them",
    "cache_keys": "temporary copies",
    "signin_links": "sign-in links",
    "console_accounts": "console accounts",
    "jobs": "records of earlier background jobs",
    "audit_payloads_redacted": "audit log entries blanked (the entries stay, to show what happened, without the content)",
}


def receipt_summary(job: Job) -> dict:
    """{"removed": [(words, count)], "verified": bool | None, "verification": sentence,
    "kept": count, "scope": "subject" | "memory"} for a deletion job; empty lists before it ends."""
    result = job.result if isinstance(job.result, dict) else {}
    removed = result.get("removed") if isinstance(result.get("removed"), dict) else {}
    rows = [(words, removed[kind]) for kind, words in KIND_WORDS.items()
            if isinstance(removed.get(kind), int) and removed[kind] > 0]
    known = set(KIND_WORDS)
    # A kind added to the runner after this list: shown under its own name rather than hidden.
    rows += [(kind.replace("_", " "), n) for kind, n in removed.items()
             if kind not in known and isinstance(n, int) and n > 0]
    verification = result.get("verification") if isinstance(result.get("verification"), dict) else {}
    passed = verification.get("passed") if verification else None
    if passed is True:
        sentence = "Checked afterwards: nothing of it is left, by id or by its text."
    elif passed is False:
        sentence = "Checked afterwards: something was left behind. An administrator has been told and can run it again."
    else:
        sentence = ""
    kept = result.get("kept")
    kept_count = kept.get("memories", 0) if isinstance(kept, dict) else (kept if isinstance(kept, int) else 0)
    return {
        "scope": result.get("scope") or (job.params or {}).get("scope", "subject"),
        "removed": rows, "verified": passed, "verification": sentence, "kept": kept_count,
    }
