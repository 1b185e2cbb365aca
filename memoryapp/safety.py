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
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)")),
    # Provider tokens with a recognisable prefix: specific kinds before the generic ones below.
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("pypi_token", re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("sendgrid_key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("twilio_key", re.compile(r"\bSK[0-9a-f]{32}\b")),
    ("mailgun_key", re.compile(r"\bkey-[0-9a-f]{32}\b")),
    ("mailchimp_key", re.compile(r"\b[0-9a-f]{32}-us\d{1,2}\b")),
    ("digitalocean_token", re.compile(r"\bdo[pro]_v1_[0-9a-f]{64}\b")),
    ("shopify_token", re.compile(r"\bshp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}\b")),
    ("square_token", re.compile(r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,}")),
    ("telegram_bot_token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b")),
    ("discord_token", re.compile(r"\b[MN][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,38}\b")),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+")),
    ("azure_storage_key", re.compile(r"(?i)\bAccountKey=[A-Za-z0-9+/=]{40,}")),
    ("aws_secret_key", re.compile(r"(?i)\baws_?secret(?:_access)?_?key\b\s*[:=]?\s*[\"']?[A-Za-z0-9/+=]{40}")),
    ("basic_auth", re.compile(r"(?i)\bbasic\s+[A-Za-z0-9+/]{12,}={0,2}")),
    ("session_cookie", re.compile(r"(?i)\b(?:sessionid|session_id|session|sid|connect\.sid|PHPSESSID|JSESSIONID)=[A-Za-z0-9%._-]{16,}")),
    ("seed_phrase", re.compile(r"(?i)\b(?:seed|recovery|mnemonic|backup) (?:phrase|words)\b[^a-z\n]{0,5}(?:is|are)?[:\s]+(?:[a-z]{3,8}[ ,]+){11,23}[a-z]{3,8}")),
    ("cvv", re.compile(r"(?i)\b(?:cvv|cvc|cvv2|security code on (?:the|my) card)\b(?:\s+(?:is|was))?\s*[:=]?\s*\d{3,4}\b")),
    ("bank_account", re.compile(r"(?i)\b(?:account|acct|routing|sort code)(?: number| no\.?| #)?(?:\s+(?:is|was))?\s*[:=]?\s*\d[\d -]{5,18}\d\b")),
    ("passport_number", re.compile(r"(?i)\bpassport (?:number|no\.?|#)(?:\s+(?:is|was))?\s*[:=]?\s*[A-Z0-9]{6,9}\b")),
    ("security_answer", re.compile(r"(?i)\b(?:mother'?s maiden name|security (?:question|answer)|first pet'?s name)\b[^.\n]{0,30}?\b(?:is|was|:)\s+[^\s.,]+")),
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
    ("api_key", re.compile(
        r"(?i)\b(?:api[_ -]?key|secret[_ -]?key|access[_ -]?token|auth[_ -]?token|client[_ -]?secret|token|secret)\b(?:\s+(?:is|was))?\s*[:=]?\s*[\"']?[A-Za-z0-9_\-./+=]{12,}"
    )),
    # Not the digits of a decimal fraction ("0.8474337369372327 volts" can pass the Luhn check).
    ("card_number", re.compile(r"(?<![\d.,])\b(?:\d[ -]?){12,18}\d\b(?![.,]\d)")),
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


# Credentials people describe in words ("my PIN number is 7391", "the door code for the shed is
# 4482", "password for Nordbank is kestrel-Fjord-22"): a word that names a credential, then,
# within a few words, a value shaped like one. The finding spans both, so a redaction covers the
# value, not just the word (a redaction that leaves "My [redacted password] is 7391" redacts
# nothing).
CREDENTIAL_WORDS: list[tuple[str, re.Pattern]] = [
    ("one_time_code", re.compile(
        r"(?i)\b(?:otp|one[- ]time\s+(?:code|password|passcode|pin)|(?:verification|confirmation|security|2fa|mfa|"
        r"auth(?:entication)?|login|sign[- ]?in|recovery|backup|reset)\s+codes?)\b")),
    ("access_code", re.compile(
        r"(?i)\b(?:(?:door|gate|alarm|lock|safe|locker|garage|access|entry|entrance|building|keypad|unlock|"
        r"padlock|bike\s+lock)\s+(?:codes?|combination|combo|pin)|combination|combo)\b")),
    ("pin", re.compile(r"(?i)\bpin(?:\s*(?:code|number|no\.?|#))?\b")),
    ("password", re.compile(r"(?i)\b(?:pass(?:word|wd|phrase|code)s?|pwd|pw)\b")),
    # A bare "code" only directly before digits: "zip code", "dress code" and "source code" are
    # not credentials.
    ("one_time_code", re.compile(
        r"(?i)(?<!zip )(?<!postal )(?<!post )(?<!area )(?<!country )(?<!dress )(?<!source )(?<!promo )"
        r"(?<!discount )(?<!error )(?<!status )(?<!product )(?<!colour )(?<!color )(?<!qr )(?<!bar )"
        r"(?<!tax )(?<!airport )(?<!language )\bcode\b(?=\s*(?:is|was|:|=)?\s*\d{4,8}\b)")),
]
# Words that may stand between the credential word and its value.
_FILLERS = frozenset(
    "is was are were will be to for of the my our your his her their a an on at number no no. # code new old "
    "current still now set reset changed just it's its this that here here's".split()
)
_ASSIGNMENT = frozenset({"is", "was", "are", "were", ":", "=", "it's", "to"})
# After "is": a place or a negation, not the value ("my password is in the drawer").
_STOP = frozenset("in on at under behind inside written stored saved kept the a an not never somewhere with".split())
# The clause moved on: whatever comes next is not this credential's value.
_BREAK = frozenset("and or but because so which while when if than must should has have needs expires expired "
                   "has expired".split())
# Right after the credential word, a noun it only describes: "password manager", "PIN pad",
# "door code keypad" name things, not a credential.
_DESCRIBED = frozenset("manager managers hint hints policy policies field prompt requirement requirements rule rules "
                       "strength protected keypad pad panel reader app vault generator length expiry reminder "
                       "sharing".split())
_MAX_GAP = 6
_MAX_PASSPHRASE_WORDS = 6
_TOKEN = re.compile(r"\S+")
_EDGE_PUNCTUATION = "\"'()[]{}<>,;.!?“”‘’"
_TIME = re.compile(r"(?i)^\d{1,2}[:.]\d{2}(?:am|pm)?$|^\d{1,2}(?:am|pm)$|^\d+(?:st|nd|rd|th)$")
_DATE_PARTS = re.compile(r"^(\d{1,4})[-/.](\d{1,2})[-/.](\d{1,4})$")
_YEAR = re.compile(r"^(?:19|20)\d{2}$")
_DIGITS = re.compile(r"^\d+$")


def _is_date(token: str) -> bool:
    """2024-03-01, 12/31/2025, 31.12.25: a year (or two digits), a month and a day."""
    match = _DATE_PARTS.match(token)
    if not match:
        return False
    parts = [int(p) for p in match.groups()]
    year_first = len(match.group(1)) == 4
    month, day = (parts[1], parts[2]) if year_first else sorted(parts[:2])
    return 1 <= month <= 12 and 1 <= day <= 31


def credential_shaped(token: str, *, previous: str = "") -> bool:
    """A value that looks like a credential rather than a word of the sentence: enough digits,
    letters mixed with digits, or symbols mixed in. Times and dates are words of the sentence,
    and so is a year unless the sentence assigns it ("my PIN is 1987")."""
    if len(token) < 4 or _TIME.match(token) or _is_date(token):
        return False
    if _YEAR.match(token) and previous not in _ASSIGNMENT:
        return False
    digits = sum(c.isdigit() for c in token)
    letters = sum(c.isalpha() for c in token)
    if digits >= 4 and not letters:
        return True
    if digits and letters:
        return True
    if letters and any(c in "!@#$%^&*+=_~/\\|" for c in token) and len(token) >= 6:
        return True
    return len(token) >= 8 and any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)


def _credential_findings(text: str) -> list[SecretFinding]:
    findings = []
    for kind, word in CREDENTIAL_WORDS:
        for match in word.finditer(text):
            end = _credential_value_end(text, match.end(), strict=kind == "password")
            if end is not None:
                findings.append(SecretFinding(kind, match.start(), end))
    return findings


def _words(text: str, start: int):
    """(raw token, the token without edge punctuation, where that starts) from `start` on."""
    for token in _TOKEN.finditer(text, start):
        raw = token.group()
        word = raw.strip(_EDGE_PUNCTUATION)
        yield raw, word, token.start() + (raw.find(word) if word else 0)


def _credential_value_end(text: str, start: int, *, strict: bool) -> int | None:
    """Where the credential value after position `start` ends, or None when no value follows
    within a few words. `strict` (passwords): plain words right after "is", ":" or "=" are the
    value too ("my password is hunter", "... is correct horse battery staple")."""
    previous = ""
    words = list(_words(text, start))
    for count, (raw, word, at) in enumerate(words[:_MAX_GAP]):
        lowered = word.lower()
        if count == 0 and lowered in _DESCRIBED:
            return None
        if raw in (":", "=") or raw.endswith((":", "=")) and not word:
            previous = raw
            continue
        if word and _DIGITS.match(word) and not raw.endswith((".", "!", "?", ",")):
            # Digits written in groups ("22 14 36", "123 45 6789") are one value.
            end, digits = at + len(word), len(word)
            for next_raw, next_word, next_at in words[count + 1:count + 4]:
                if not _DIGITS.match(next_word):
                    break
                end, digits = next_at + len(next_word), digits + len(next_word)
                if next_raw != next_word:
                    break
            if digits >= 4 and (digits > len(word) or credential_shaped(word, previous=previous)):
                return end
        elif word and credential_shaped(word, previous=previous):
            return at + len(word)
        if strict and word.isalpha() and previous in _ASSIGNMENT and lowered not in _STOP \
                and lowered not in _FILLERS and lowered not in _BREAK and len(word) >= 4:
            end = at + len(word)
            # A passphrase runs on in plain words until the sentence or the clause does.
            for next_raw, next_word, next_at in words[count + 1:count + 1 + _MAX_PASSPHRASE_WORDS]:
                if raw != word or not next_word.isalpha() or next_word.lower() in _BREAK | _STOP:
                    break
                end, raw = next_at + len(next_word), next_raw
            return end
        if lowered in _BREAK or (lowered in _STOP and previous in _ASSIGNMENT):
            return None
        if raw.endswith((".", "!", "?")) and not word[-1:].isdigit():
            return None  # the sentence ended without a value
        previous = ":" if raw.endswith(":") else lowered
    return None


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
    for finding in _credential_findings(text):
        if any(finding.start < t_end and finding.end > t_start for t_start, t_end in taken):
            continue
        findings.append(finding)
        taken.append((finding.start, finding.end))
    return sorted(findings, key=lambda f: f.start)


def text_values(value) -> list[str]:
    """Every string inside a JSON-like value (dict values and keys, list items), for the checks
    that must see all of a request's text, not only its main field."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*text_values(k), *text_values(v))]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in text_values(item)]
    return []


def redact_value(value):
    """`value` with secrets redacted in every string inside it (same shape)."""
    if isinstance(value, str):
        return redact_secrets(value)[0]
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    return value


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
