"""Content the write policy refuses to remember: secrets, and instructions smuggled in as facts."""
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretFinding:
    kind: str
    start: int
    end: int


# (kind, pattern). Order matters only for overlapping spans; the first match wins.
SECRET_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|$)")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{20,}\b")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")),
    ("connection_string_password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s@/]+@[^\s]+", re.I)),
    ("signed_url", re.compile(r"https?://\S+[?&](?:X-Amz-Signature|Signature|sig|X-Goog-Signature|token|access_token)=[^\s&]+", re.I)),
    ("password", re.compile(
        r"(?i)\b(?:password|passwd|passphrase|pwd|passcode|pin(?:\s*code)?)\b(?:\s+(?:is|was|to|for\s+\S+(?:\s+\S+)?\s+is))?\s*[:=]?\s*[\"']?(?=[^\s\"']*[\d!@#$%^&*_\-A-Z])[^\s\"']{4,}"
    )),
    ("api_key", re.compile(
        r"(?i)\b(?:api[_ -]?key|secret[_ -]?key|access[_ -]?token|auth[_ -]?token|client[_ -]?secret|token|secret)\b(?:\s+(?:is|was))?\s*[:=]?\s*[\"']?[A-Za-z0-9_\-./+=]{12,}"
    )),
    ("one_time_code", re.compile(
        r"(?i)\b(?:otp|one[- ]time (?:code|password|passcode)|verification code|security code|2fa code|mfa code|auth(?:entication)? code|login code|code)\b(?:\s+(?:is|was))?\s*[:=]?\s*\d{4,8}\b"
    )),
    ("card_number", re.compile(r"\b(?:\d[ -]?){12,18}\d\b")),
    ("iban", re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}(?:\s?[A-Z0-9]{1,3})?\b")),
    ("ssn", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
]


def _luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def find_secrets(text: str) -> list[SecretFinding]:
    findings: list[SecretFinding] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in SECRET_PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(start < t_end and end > t_start for t_start, t_end in taken):
                continue
            if kind == "card_number":
                digits = re.sub(r"\D", "", match.group())
                if not (13 <= len(digits) <= 19 and _luhn_ok(digits)):
                    continue
            findings.append(SecretFinding(kind, start, end))
            taken.append((start, end))
    return sorted(findings, key=lambda f: f.start)


def redact_secrets(text: str) -> tuple[str, list[SecretFinding]]:
    findings = find_secrets(text)
    if not findings:
        return text, []
    out, last = [], 0
    for finding in findings:
        out.append(text[last:finding.start])
        out.append(f"[redacted {finding.kind}]")
        last = finding.end
    out.append(text[last:])
    return "".join(out), findings


INSTRUCTION_PATTERNS = [
    re.compile(p, re.I)
    for p in [
        r"\bignore (?:all |any |the )?(?:previous|prior|above|earlier) (?:instructions|prompts|rules|messages)",
        r"\bdisregard (?:all |any |the )?(?:previous|prior|above|earlier|your)\b",
        r"\bremember (?:that )?(?:this|the) user (?:is|has|was)\b",
        r"\b(?:store|save|write|add|record) (?:this |that |it )?(?:in|to|into) (?:your |the )?(?:long[- ]term )?memory\b",
        r"\byou (?:must|should|will) (?:now |always |from now on )?(?:obey|follow|treat|grant|give)\b",
        r"\b(?:system|developer) (?:prompt|message|instruction)s?\b",
        r"\bfrom now on,? (?:you|always|never)\b",
        r"\b(?:grant|give) (?:this user |the user |me )?(?:admin|administrator|root|elevated) (?:access|rights|privileges)\b",
        r"\bthe user is an? (?:admin|administrator|superuser|root)\b",
        r"\bnew instructions?\b",
        r"\bwrite down the (?:admin )?password\b",
    ]
]


def looks_like_instruction(text: str) -> bool:
    return any(p.search(text) for p in INSTRUCTION_PATTERNS)
