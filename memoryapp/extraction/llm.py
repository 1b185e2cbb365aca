"""An optional extractor backed by any OpenAI-compatible chat endpoint (POST {base}/chat/completions).

It emits the same Candidate schema as the rules, with an add/update/none decision per
candidate. It is advisory only: the write policy (secrets, trust, supersession by key and
source authority) applies to its output exactly as to the rules'. On a timeout, an HTTP
error, or output that is not the schema, it falls back to the deterministic rules, so an
unreachable model slows extraction down but never stops it.
"""
import json
import logging
import re
import urllib.error
import urllib.request

from memoryapp.extraction.candidates import DECISIONS, Candidate
from memoryapp.extraction.keys import slug
from memoryapp.extraction.rules import RULES_VERSION, extract_candidates

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = """You extract durable memories about the user from one chat message.
Return only JSON: {"memories": [{"statement": str, "kind": "fact|preference|plan|correction|procedure",
"key": "user:<attribute>" or "", "value": str, "confidence": 0..1, "decision": "add|update|none"}]}.
Only stable facts, preferences, plans and corrections the user states about themself; nothing for
small talk or things true only today. Never include passwords, tokens or codes. Use "update" when
the message replaces an earlier value (a move, a new job, "actually ...")."""

_KEY = re.compile(r"^[a-z_]+:[a-z0-9_:]{1,120}$")
_MEMORY_TYPE = {"procedure": "procedural"}


class LLMExtractor:
    def __init__(self, *, base_url: str, model: str, timeout: float = 20.0, api_key: str = ""):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.api_key = api_key
        self.version = f"llm:{model}"
        self.fallbacks = 0

    def extract(self, text: str, *, role: str = "user") -> list[Candidate]:
        if role not in ("user", "assistant"):
            return []
        try:
            return self._parse(self._complete(text, role))
        except (OSError, ValueError, KeyError, TypeError, urllib.error.URLError) as exc:
            # Timeouts are OSError (socket.timeout); bad JSON is ValueError.
            self.fallbacks += 1
            logger.warning("LLM extractor failed (%s); using the rules", type(exc).__name__)
            self.version = RULES_VERSION
            return extract_candidates(text, role=role)

    def _complete(self, text: str, role: str) -> str:
        body = json.dumps({
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"Message from the {role}:\n{text}"},
            ],
        }).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=headers,
                                         method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            payload = json.loads(response.read().decode())
        self.version = f"llm:{self.model}"
        return payload["choices"][0]["message"]["content"]

    def _parse(self, content: str) -> list[Candidate]:
        content = content.strip()
        # Some models wrap JSON in a code fence.
        content = re.sub(r"^```(?:json)?\s*|\s*```$", "", content)
        data = json.loads(content)
        items = data["memories"] if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ValueError("memories is not a list")
        out = []
        for item in items:
            if not isinstance(item, dict):
                raise ValueError("a memory is not an object")
            decision = item.get("decision", "add")
            if decision not in DECISIONS:
                raise ValueError(f"unknown decision {decision!r}")
            if decision == "none":
                continue
            statement = str(item["statement"]).strip()
            if not statement or len(statement) > 1000:
                raise ValueError("empty or oversized statement")
            kind = item.get("kind", "fact")
            key = str(item.get("key") or "").strip().lower()
            if key and not _KEY.match(key):
                key = f"user:{slug(key)}"
            confidence = float(item.get("confidence", 0.8))
            out.append(Candidate(
                statement=statement, kind=kind if kind in ("fact", "preference", "plan", "correction", "procedure")
                else "fact", key=key, value=str(item.get("value", ""))[:300],
                confidence=min(max(confidence, 0.0), 1.0), memory_type=_MEMORY_TYPE.get(kind, "semantic"),
                decision=decision,
            ))
        return out
