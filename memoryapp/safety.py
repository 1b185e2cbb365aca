"""Content the write policy refuses to remember: secrets, and instructions smuggled in as facts."""
import functools
import re
import unicodedata
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from mnemonic import Mnemonic

from memoryapp.credentials import (
    TIMESTAMP, VAULT_REFERENCE, continued_credential, credential_shaped, credential_words, described_credentials,
    normalise, one_scan, original_span, refers_elsewhere,
)
from memoryapp.credential_lexicon import ACCESS_PHRASES, is_access_word


@dataclass(frozen=True)
class SecretFinding:
    kind: str
    start: int
    end: int


# What documentation writes where a value goes: "YOUR_API_KEY_HERE", "xxxxxxxx", "********".
_PLACEHOLDER = r"(?i:(?:your|my|insert|enter|example|sample|placeholder|dummy|replace)[\w-]*|x{4,}|\*{4,})"

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
    ("session_cookie", re.compile(
        r"(?i)\b(?:sessionid|session_id|session|sid|connect\.sid|PHPSESSID|JSESSIONID)=[A-Za-z0-9%._-]{16,}"
        # ... and as a member or a setting: '"session_id":"f3a9…"', "sessionid: f3a9…"
        r"|\b(?:sessionid|session_id|session_token|connect\.sid|PHPSESSID|JSESSIONID)[\"']?[ \t]*:"
        r"[ \t]*[\"']?[A-Za-z0-9%._-]{16,}")),
    ("seed_phrase", re.compile(r"(?i)\b(?:seed|recovery|mnemonic|backup) (?:phrase|words)\b[^a-z\n]{0,5}(?:is|are)?[:\s]+(?:[a-z]{3,8}[ ,]+){11,23}[a-z]{3,8}")),
    ("cvv", re.compile(r"(?i)\b(?:cvv|cvc|cvv2|security code on (?:the|my) card)\b(?:\s+(?:is|was))?\s*[:=]?\s*\d{3,4}\b")),
    ("bank_account", re.compile(r"(?i)\b(?:account|acct|routing|sort code)(?: number| no\.?| #)?(?:\s+(?:is|was))?\s*[:=]?\s*\d[\d -]{5,18}\d\b")),
    ("passport_number", re.compile(r"(?i)\bpassport (?:number|no\.?|#)(?:\s+(?:is|was))?\s*[:=]?\s*[A-Z0-9]{6,9}\b")),
    # The answer, not the question: "the security question was 'name of your first pet'" is not one.
    ("security_answer", re.compile(
        r"(?i)\b(?:security answer|"  # (a mother's maiden name and a first pet: credentials.py)
        # (not a quiz's or a homework's numbered question: "answer to question 7 ... is 1066")
        # ... and not a quiz's, nor someone's question answered ("the answer to my question is
        # yes", "the answer to the trivia question was paris")
        r"answer (?:to|for) (?!(?:the\s+)?questions?\s+(?:\d|no\b|number))"
        r"(?!(?:my|your|her|his|their|our|the|this|that|a)\s+questions?\s+(?:is|was|are|were)\b)"
        r"(?![^.\n]{0,60}?\b(?:quiz|trivia|homework|exam|test|interview|riddle|crossword|survey|maths?|essay)\b)"
        r"[^.\n]{0,60}?\bquestions?)\b[^.\n]{0,30}?"
        r"\b(?:is|was|:)\s+"
        # ... and the answer itself, not where it is written ("is on the form")
        r"(?!(?:in|on|at|the|a|an|not|never|somewhere|written|stored|saved|kept|under|behind|inside)\b)[^\s.,]+")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}\b")),
    ("openai_key", re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{20,}\b")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
    ("bearer_token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")),
    ("connection_string_password", re.compile(r"\b[a-z][a-z0-9+.-]{0,30}://[^\s:/@]*:[^\s@/]+@[^\s]+", re.I)),
    ("signed_url", re.compile(r"https?://\S+[?&](?:X-Amz-Signature|Signature|sig|X-Goog-Signature|token|access_token)=[^\s&]+", re.I)),
    ("api_key", re.compile(
        r"(?i)\b(?:api[_ -]?key|secret[_ -]?key|access[_ -]?token|auth[_ -]?token|client[_ -]?secret|token|secret)\b"
        # (whitespace read possessively: "\s*[:=]?\s*" went back over a long run of spaces)
        r"[\"']?(?:\s++(?:is|was))?\s*+[:=]?\s*+[\"']?(?!" + _PLACEHOLDER + r")[A-Za-z0-9_\-./+=]{12,}"
    )),
    # A quoted value given to a setting that names a credential, in a config file, JSON or code
    # ('psk="moth&Lantern04"', '"db_password": "..."'); not a placeholder ("<yours>"), nor a
    # reference to a secret kept elsewhere ("${DB_PASS}": _names_a_value).
    ("password", re.compile(
        # (the setting's name read 40 characters at most: "[\w.-]*" went back over all of a long run)
        r"(?i)(?<![\w.-])[\w.-]{0,40}?(?:pass(?:word|wd|phrase)|pwd|psk|secret|token|api_?key|private_?key)[\"']?\s*[:=]\s*"
        r"([\"'])(?!\[|" + _PLACEHOLDER + r"|(?:true|false|null|none|yes|no|auto|string)\1)[^\"'\s]{4,}\1")),
    # Grouped as cards are (4-4-4-4, Amex 4-6-5, or not at all), and not the digits of a decimal
    # fraction ("0.8474337369372327 volts" can pass the Luhn check) or of an order number.
    ("card_number", re.compile(
        r"(?<![\d.,-])\b(?:\d{4}([ -]?)\d{4}\1\d{4}\1\d{4}(?:\1\d{1,3})?|\d{4}([ -]?)\d{6}\2\d{5}|\d{13,19})"
        r"\b(?![.,-]\d)")),
    ("iban", re.compile(r"\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}(?:\s?[A-Z0-9]{1,3})?\b")),
    ("ssn", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    # The UK's National Insurance number: two letters, three pairs of digits, a letter.
    ("national_id", re.compile(r"\b[A-CEGHJ-PR-TW-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b")),
]


# An SSH public key (its type, then its base64 body), a PEM public key or certificate, or the
# value of a setting named as a public key ("PublicKey = ZdRg…=", WireGuard's peers).
# (A block's body never crosses another BEGIN line: a private key inside a certificate's frame
# stays a private key, and an unclosed frame costs one pass.)
PUBLIC_KEY = re.compile(
    r"\b(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d{3}|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r"\s+AAAA[A-Za-z0-9+/]+=*"
    r"|-----BEGIN (?P<frame>(?:SSH2 |RSA |EC |PGP )?(?:PUBLIC KEY(?: BLOCK)?|CERTIFICATE))-----"
    r"(?:(?!-----BEGIN )[^-]|-(?!----BEGIN ))*?-----END (?P=frame)-----"
    r"|(?i:\b(?:public|pub)[ _-]?key)[\"']?[ \t]*[:=][ \t]*[\"']?[A-Za-z0-9+/=_-]{20,}")

# A JSON Web Key (RFC 7517) of an RSA key ("n", "e") or an elliptic curve's ("crv", "x") with
# no member but the public ones is a public key: what a /.well-known/jwks.json publishes. Any
# other member ("d", a prime, a symmetric key's "k", or one the RFC does not name) may hold a
# private part, and a symmetric key ("oct") has none to publish. Its members are strings and
# arrays of strings: no object nests inside, so it is read from the "{" before "kty" to the "}".
_JWK_TYPE = re.compile(r"\"kty\"\s*:")
_JWK_MEMBER = re.compile(r"\"([^\"\n]{1,40})\"\s*:")
_JWK_PUBLIC_MEMBERS = frozenset("kty use key_ops alg kid x5u x5c x5t x5t#S256 n e crv x y ext".split())


def public_json_web_keys(text: str) -> list[tuple[int, int]]:
    spans, last_end = [], 0
    for match in _JWK_TYPE.finditer(text):
        if match.start() < last_end:
            continue  # (each object is read once: a text of many "kty" stays linear)
        start, end = text.rfind("{", last_end, match.start()), text.find("}", match.end())
        if end < 0:
            break
        last_end = end + 1
        if start < 0 or "}" in text[start:match.start()] or text.find("{", match.end(), end) >= 0:
            continue
        members = set(_JWK_MEMBER.findall(text, start, end))
        if members <= _JWK_PUBLIC_MEMBERS and ({"n", "e"} <= members or {"crv", "x"} <= members):
            spans.append((start, end + 1))
    return spans


# A secret already encrypted by the tools made to keep secrets in a repository or a config:
# Ansible Vault's header and hex lines, a SealedSecret's values (kubeseal's "Ag…"), a SOPS value
# in its whole form, a PGP or age message. What they print is a ciphertext only its key opens,
# meant to be committed and shared. As with a public key, only what was found by its shape
# inside it, or a name outside giving it as a value ("db_password: !vault |"), is let go: a
# credential named in words inside ("Comment: passphrase is …") is still one.
_VAULT_BODY = r"\$ANSIBLE_VAULT;[\d.]+;AES256(?:;[\w-]+)?[ \t]*\n(?:[ \t]*[0-9a-fA-F]{20,}[ \t]*(?:\n|$))+"
CIPHERTEXT = re.compile(
    r"!vault[ \t]*\|[ \t]*\n[ \t]*" + _VAULT_BODY + r"|" + _VAULT_BODY
    + r"|(?<=:)[ \t]*Ag[A-Za-z0-9+/]{60,}={0,2}(?=[ \t]*(?:\n|$))"
    r"|ENC\[(?:AES256_GCM|PGP|age),data:[A-Za-z0-9+/=]{1,10000},iv:[A-Za-z0-9+/=]{8,100},tag:[A-Za-z0-9+/=]{8,100},"
    r"type:[a-z]{1,10}\]"
    r"|-----BEGIN (?P<sealed>PGP MESSAGE|AGE ENCRYPTED FILE)-----(?:(?!-----BEGIN )[^-]|-(?!----BEGIN ))*?"
    r"-----END (?P=sealed)-----")


# Where a configuration points at a secret in a vault (credentials.VAULT_REFERENCE), the path
# names the secret ("…/secrets/DbPassword/9a8b…" is its version); it does not give it.
_MAY_POINT_TO_A_VAULT = re.compile(r"KeyVault\(|ref\+|op://")


def holds_ciphertext(text: str) -> bool:
    """Whether `text` holds a secret encrypted by a secret-keeping tool (CIPHERTEXT)."""
    return _MAY_BE_SEALED.search(text) is not None and CIPHERTEXT.search(text) is not None


_MAY_BE_SEALED = re.compile(r"\$ANSIBLE_VAULT|:[ \t]*Ag[A-Za-z0-9+/]{60}|ENC\[|-----BEGIN (?:PGP MESSAGE|AGE)")

# Kinds found by a value's shape alone (the body of a public key has every shape of a secret).
_SHAPE_KINDS = frozenset({"key_material", "encoded_secret", "token", "api_key"})

# Around a long number, words that make it a parcel's, an order's or a booking's reference
# (a 14-digit tracking number passes the Luhn check one time in ten) unless a card is named too.
_REFERENCE_WORDS = re.compile(
    r"(?i)\b(?:tracking|parcel|package|shipment|consignment|waybill|courier|delivery|order|invoice|"
    r"booking|reservation|ref|reference|ticket|receipt|isbn|imei|serial)\b")
_CARD_WORDS = re.compile(r"(?i)\b(?:card|visa|mastercard|amex|maestro|discover|cvv|cvc|expiry|expires|exp|debit|"
                         r"credit|pay|paid|charge|charged)\b")


def _names_a_parcel_or_order(text: str, start: int, end: int) -> bool:
    """A reference word right before the number ("tracking number 1550…", "order #…") or named
    after it as what it is ("… as the tracking ref"); "use 4539… for the order" pays for one."""
    before, after = text[max(0, start - 25):start], text[end:end + 40]
    named = _REFERENCE_WORDS.search(before) or _NAMED_AFTER.match(after)
    return bool(named) and not _CARD_WORDS.search(before + " " + after)


# A card named in the common languages, in the message around a number grouped as cards print it.
# A payment card named in the common languages ("kort", "carta", "karta" and "visa" alone are as
# often "short", paper, a map or a memory card, and a passport's visa).
_A_CARD = re.compile(r"(?i)\b(?:(?:credit|debit|bank|replacement|new|payment)\s+card|"
                     r"card(?:['’]s)?\s+(?:number|no\b|is|:)|"
                     r"carte\s+(?:bancaire|de\s+cr[ée]dit|bleue)|num[ée]ro\s+de\s+(?:la\s+)?carte|"
                     r"tarjeta\s+de\s+(?:cr[ée]dito|d[ée]bito)|cart[ãa]o\s+de\s+(?:cr[ée]dito|d[ée]bito)|"
                     r"(?:kredit|bank|ec-)karte|numero\s+della\s+carta|carta\s+di\s+credito|"
                     r"mastercard|amex|maestro)\b")
# ... and the number's own label, when it names something else: "transaction ID 5123 …", "die
# Kundennummer lautet …", "numer seryjny …".
_ANOTHER_NUMBER = re.compile(r"(?i)\b(?:id|ref\w*|serial|seri\w*|seryjny|kunden\w*|saks\w*|protocollo|afiliaci\w*|"
                             r"transaction|slot|event|dossier\w*|order|invoice|account|iban|tracking|policy|member\w*|"
                             r"customer|case|ticket|contract|nummer|lautet|transport\w*|student\w*|estudiante|"
                             r"library|loyalty|payback|clubcard|chipkaart|parking|gift|membership)\b")


def _printed_as_a_card(text: str, match: re.Match) -> bool:
    """A number grouped 4-4-4-4 (or Amex's 4-6-5) with a card's first digit, a card named just
    before it: a card's number, even one mistyped (the Luhn check fails on a wrong digit)."""
    if not (match.group(1) or match.group(2)) or match.group()[0] not in "23456":
        return False
    start, end = match.span()
    return _A_CARD.search(text, max(0, start - 60), start) is not None \
        and not _ANOTHER_NUMBER.search(text, max(0, start - 60), start) \
        and not _names_a_parcel_or_order(text, start, end)


_NAMED_AFTER = re.compile(r"(?i)\s+(?:is|as|was)\s+(?:the|my|our|a|an|its)?\s*(?:[\w-]+\s+)?"
                          r"(?:ref|reference|number|tracking|order|invoice|booking|id)\b")


_WORD_PART = re.compile(r"(?:^|[-_])[A-Za-z]{4,}(?=[-_]|$)")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# A value that opens with a moment: "20240612T0815…", "1718180102114…".
_STAMPED = re.compile(r"\d{8}T\d{4}|\d{10,13}")


def _random_session_id(match: str) -> bool:
    """Whether the value of a session's id given as a member or a setting ('"session_id":"f3a9…"')
    looks drawn at random: letters and digits, no dotted name, no words joined by hyphens or
    underscores (a placeholder, a column's type, a label)."""
    name, value = (part.strip(" \t\"'") for part in match.split(":", 1))
    if _UUID.fullmatch(value) or _STAMPED.match(value):
        # a chat's or a trace's id (an agent's own API sends them) unless a server's cookie names it
        return name.lower() in ("jsessionid", "phpsessid", "connect.sid")
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and "." not in value \
        and not _WORD_PART.search(value) and not refers_elsewhere(value)


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


def _iban_ok(candidate: str) -> bool:
    """ISO 13616's check: the country and check digits moved to the end, read as a number
    with letters as 10..35, leave 1 modulo 97."""
    compact = re.sub(r"\s", "", candidate).upper()
    number = "".join(str(int(c, 36)) for c in compact[4:] + compact[:4])
    return int(number) % 97 == 1


# Within one extraction job a text is looked at several times (as the event's content and its
# episode, as the message before the next one): findings_kept() keeps each one's findings for
# the job's length. Only for the block's own work, one tenant's: no text outlives the block, and
# nothing one tenant sent can make another's call faster.
_CACHED_UP_TO = 4096
_kept: ContextVar[dict | None] = ContextVar("secret_findings_kept", default=None)


@contextmanager
def findings_kept():
    token = _kept.set({})
    try:
        yield
    finally:
        _kept.reset(token)


@one_scan  # (one message: credential_shaped remembers its answers until it is scanned)
def find_secrets(text: str, *, continues: bool = False, carried: bool = False) -> list[SecretFinding]:
    """Every secret in `text`, as spans of `text`. Looked for in the text normalised
    (credentials.normalise: compatibility forms, zero-width characters, look-alike letters,
    spaced-out letters), by token shape (SECRET_PATTERNS) and as credentials described in words
    or scored by shape and context (credentials.py).
    `continues`: the previous message of the same person ended with a credential's word, so a
    value at the start of this one finishes it. `carried`: that message named a credential
    somewhere (mentions_credential), so a value opening this one scores as if named here."""
    kept = _kept.get()
    if kept is None or len(text) > _CACHED_UP_TO:
        return _find_secrets(text, continues=continues, carried=carried)
    key = (text, continues, carried)
    if key not in kept:
        kept[key] = tuple(_find_secrets(text, continues=continues, carried=carried))
    return list(kept[key])


# Patterns that read a value after the name of what it is: the value may instead name a secret
# kept elsewhere ("token = os.environ.get('API_TOKEN')", "postgres://app:${DB_PASSWORD}@db/x").
_VALUE_AFTER_A_NAME = frozenset({"api_key", "password", "bearer_token", "connection_string_password"})
# (the name, then "is", ":" or "=": what follows is the value)
_NAME_AND_CUE = re.compile(r"(?i)[^\s:=\"']*[\"']?(?:\s+(?:is|was)\b)?\s*[:=]?\s*[\"']?")


def _names_a_value(kind: str, match: re.Match) -> bool:
    text = match.string
    if kind == "connection_string_password":
        userinfo_end = match.group().index("@")
        start = match.start() + match.group().index(":", match.group().index("://") + 3) + 1
        return not refers_elsewhere(text[start:match.start() + userinfo_end])
    start = match.end(1) if kind == "password" else _NAME_AND_CUE.match(text, match.start()).end()
    return not refers_elsewhere(text[start:start + 200])


def _find_secrets(text: str, *, continues: bool = False, carried: bool = False) -> list[SecretFinding]:
    """find_secrets' work, not cached."""
    normal, origin = normalise(text)
    found: list[SecretFinding] = []
    for kind, pattern in SECRET_PATTERNS:
        for match in pattern.finditer(normal):
            if kind == "card_number":
                digits = re.sub(r"\D", "", match.group())
                if not (13 <= len(digits) <= 19 and (_luhn_ok(digits) or _printed_as_a_card(normal, match))):
                    continue
                if match.group().isdigit() and _names_a_parcel_or_order(normal, *match.span()):
                    continue  # (grouped as a card is printed, it is one whatever surrounds it)
            if kind == "iban" and not _iban_ok(match.group()):
                continue  # a parcel's tracking code has the shape, not the check digits
            if kind == "session_cookie" and "=" not in match.group() and not _random_session_id(match.group()):
                continue  # "session_id: YOUR_SESSION_ID_HERE", "sessionid: chat-2024-06-12-morning"
            if kind in _VALUE_AFTER_A_NAME and not _names_a_value(kind, match):
                continue
            found.append(SecretFinding(kind, *match.span()))
    found += seed_phrases(normal)
    found += _named_seed_phrases(normal)
    found += login_pairs(normal)
    public = [m.span() for m in PUBLIC_KEY.finditer(normal)] + public_json_web_keys(normal)
    sealed = [m.span() for m in CIPHERTEXT.finditer(normal)] if _MAY_BE_SEALED.search(normal) else []
    pointed = [m.span() for m in VAULT_REFERENCE.finditer(normal)] if _MAY_POINT_TO_A_VAULT.search(normal) else []
    found += [SecretFinding(f.kind, f.start, f.end)
              for f in described_credentials(normal, _holds_secret, carried=carried or continues)]
    if continues and (finding := continued_credential(normal)) is not None:
        found.append(SecretFinding(finding.kind, finding.start, finding.end))
    # A public key is meant to be handed out, whatever its body looks like, and a ciphertext
    # opens only with its key; but only what was found by its shape, its body read as a value
    # from a name outside it ("our release signing key" under the block, "password:" before a
    # sealed value), or what a word outside names as a value ("my public key: ssh-ed25519
    # AAAA…"), is let go: a credential named in words inside a block ("Comment: bank PIN 4417",
    # "Comment: wallet private key L1a…") is still one, and so is a private key in its own frame.
    if public or sealed:
        opened_by_key = public + sealed
        found = [f for f in found if normal.startswith("-----BEGIN", f.start) or not any(
            f.start < end and start < f.end and (
                f.kind in _SHAPE_KINDS or f.start < start or _read_from_its_body(normal, f, start, end))
            for start, end in opened_by_key)]
    if pointed:  # kept in a vault: the path names the secret, whatever names it
        found = [f for f in found if not any(f.start < end and start < f.end for start, end in pointed)]
    # A token's shape near a credential word is no value when it is a moment (a log line's
    # timestamp beside "token expired"). Only shapes: a timestamp someone says is their password
    # is still one. (Not in credential_shaped: that would let the password go too.)
    found = [f for f in found if f.kind not in _SHAPE_KINDS or not TIMESTAMP.fullmatch(normal, f.start, f.end)]
    # Overlapping findings merge into one span (the one starting first names it): a token shape
    # inside a longer described credential must not leave the rest of that credential behind.
    merged: list[SecretFinding] = []
    for finding in sorted(found, key=lambda f: f.start):
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = SecretFinding(last.kind, last.start, max(last.end, finding.end))
        else:
            merged.append(finding)
    findings = [SecretFinding(f.kind, *original_span(origin, f.start, f.end, len(text))) for f in merged]
    # Text redacted once (at append) is looked at again by extraction: what a marker already
    # stands for is not found a second time ("my password is [redacted password]").
    markers = [m.span() for m in REDACTION_MARKER.finditer(text)]
    findings = [f for f in findings if not any(f.start < end and start < f.end for start, end in markers)]
    return sorted(findings, key=lambda f: f.start)


REDACTION_MARKER = re.compile(r"\[redacted ([a-z_]+)\]")
_BODY_RUN = re.compile(r"[A-Za-z0-9+/=_-]{40,}")
_SEALED_MANIFEST = re.compile(r"\bkind:[ \t]*SealedSecret\b|\bencryptedData:")


def _read_from_its_body(text: str, finding: SecretFinding, start: int, end: int) -> bool:
    """Whether `finding`, inside the public key or the ciphertext text[start:end], is a piece of
    its body: a line of a block's body (read as a private key, or as any credential's value from
    a name outside the block), or the whole of a one-line value ("password: AgBy3i…" sealed)."""
    value = text[finding.start:finding.end]
    if any(c.isspace() for c in value):
        return False
    if finding.kind == "private_key":
        return True
    if not _BODY_RUN.fullmatch(value):
        return False
    line_start, line_end = text.rfind("\n", 0, finding.start) + 1, text.find("\n", finding.end)
    line_end = len(text) if line_end < 0 else line_end
    whole_line = not text[line_start:finding.start].strip() and not text[finding.end:line_end].strip()
    # (a one-line value opens with its key only where a sealed secret's manifest says it is one:
    # a password may begin with "Ag" too)
    return whole_line or not any(c.isspace() for c in text[start:end].strip()) and _SEALED_MANIFEST.search(text)


# A wallet's seed phrase whatever precedes it (the lead-in pattern above knows English lead-ins
# only): SEED_WORDS words in a row, every one of them from one BIP-39 word list. The lists hold
# 2,048 words each, so a sentence or a list of groceries with twelve words in a row all on one
# of them is vanishingly rare, while a test on the words' shape alone took "flour sugar butter
# eggs milk ..." and lowercase chat in many languages for seed phrases.
SEED_WORDS = 12
SEED_LANGUAGES = ("english", "spanish", "french", "italian", "portuguese", "czech")
_SEED_WORD = re.compile(r"[^\W\d_]+")
_SEED_GAP = re.compile(r"[\s,]*")  # what may stand between two words of a phrase


@functools.cache
def _seed_wordlists() -> tuple[frozenset, ...]:
    return tuple(frozenset(unicodedata.normalize("NFC", w) for w in Mnemonic(language).wordlist)
                 for language in SEED_LANGUAGES)


def seed_phrases(text: str) -> list[SecretFinding]:
    """Runs of at least SEED_WORDS words of one BIP-39 list, separated by spaces or commas."""
    words = [(m.group().lower(), m.start(), m.end()) for m in _SEED_WORD.finditer(text)]
    if len(words) < SEED_WORDS:
        return []
    found = []
    for wordlist in _seed_wordlists():
        run: list[tuple[str, int, int]] = []
        for word in words + [("", len(text), len(text))]:
            joined = run and _SEED_GAP.fullmatch(text, run[-1][2], word[1]) is not None
            if word[0] in wordlist and (not run or joined):
                run.append(word)
                continue
            if len(run) >= SEED_WORDS:
                found.append(SecretFinding("seed_phrase", run[0][1], run[-1][2]))
            run = [word] if word[0] in wordlist else []
    return found


# Named as a wallet's words ("my ledger seed is ...", "wallet words off the steel card: 1. ember
# 2. parrot ..."), twelve words or more, most of them from one word list: a phrase copied by hand
# with a word misremembered is still the wallet's key.
# (the words named: "seed phrase", "wallet words", "recovery phrase"; or "seed" / "mnemonic"
# given a value right away: "my ledger seed is ...", not "seed packets I bought: ...")
_SEED_LEAD_IN = re.compile(r"(?i)\b(?:(?:seed|mnemonic|wallet|recovery|backup)\s+(?:phrase|words?)\b(?:[^\n:.?!]{0,40}:)?|"
                           r"(?:seed|mnemonic)\b\s*(?:is|are|was|:))[\s:]*(?=(?:\d{1,2}[.)]\s*)?[a-z])")
_SEED_LISTED = re.compile(r"(?:[\s,;]|\s-\s)*(\d{1,2}[.)][ \t]*)?([a-z]{3,8})\b")
SEED_SHARE = 0.7


def _named_seed_phrases(text: str) -> list[SecretFinding]:
    found = []
    for lead_in in _SEED_LEAD_IN.finditer(text):
        words, at = [], lead_in.end()
        while len(words) < 24 and (word := _SEED_LISTED.match(text, at)) is not None:
            words.append(word.group(2))
            at = word.end()
        if len(words) >= SEED_WORDS and any(
                sum(w in wordlist for w in words) >= SEED_SHARE * len(words) for wordlist in _seed_wordlists()):
            found.append(SecretFinding("seed_phrase", lead_in.end(), at))
    return found


# A login given as a pair, the way sign-in details are written down and pasted ("kevin@mail.com /
# moonlight77", "admin / Horizon2021", "root:toor123"): an email address or an administrator's
# name, a separator, and a value shaped like a password (letters with digits, or a symbol inside).
_LOGIN_PAIR = re.compile(
    r"(?i)(?<![\w.+/-])(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|admin|root|administrator)"
    r"[ \t]*(?:/|\||:(?!//))[ \t]*(?P<value>[^\s,;|/@]{6,64})(?P<at>@?)"
)


def login_pairs(text: str) -> list[SecretFinding]:
    found = []
    for match in _LOGIN_PAIR.finditer(text):
        value = match.group("value").rstrip(".!?)")
        letters, digits = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
        symbol = any(c in "!#$%^&*?~+=" for c in value[1:-1])
        if match.group("at") and "@" in match.group()[:match.start("value") - match.start()]:
            continue  # a second address ("a@b.com / alice2@c.com"); after root or admin, user:pass@host
        if "." in value.strip(".") or not letters or not (digits or symbol):
            continue  # a domain or a file, a phone number, a plain word
        found.append(SecretFinding("password", match.start("value"), match.start("value") + len(value)))
    return found


def _holds_secret(decoded: str) -> bool:
    """A base64 string decoded: a secret in it, or anything shaped like a credential (people do
    not encode harmless chat)."""
    return bool(find_secrets(decoded)) or any(credential_shaped(word.strip(".,;:!?\"'()")) for word in decoded.split())


def ends_with_credential_word(text: str) -> bool:
    """Whether a message stops where a credential's value would start ("... the tax site is",
    "my password:", or a redaction a value was cut from): the next message may carry it."""
    tail = normalise(text)[0].rstrip().lower()
    if re.search(r"\[redacted [a-z_]+\][\s.,;:!?-]*$", redact_secrets(text)[0].rstrip().lower()):
        return True  # "... is Harbor" then "Lights!2024": a value cut short may go on
    return bool(re.search(r"(?:\b(?:is|was|are|ist|es|est|é|è|lautet|jest|to)|[:=])\s*$", tail)
                and credential_words(tail[-60:]))


def follows_credential(previous: str) -> tuple[bool, bool]:
    """(continues, carried) for a message whose sender's previous message was `previous`: it
    stopped where a value starts, or it named a credential somewhere (find_secrets' flags)."""
    continues = ends_with_credential_word(previous)
    return continues, not continues and mentions_credential(previous)


def mentions_credential(text: str) -> bool:
    """Whether a message names a credential or a way in ("my bank PIN, next message", "this
    one unlocks the shed"): a value opening the sender's next message is then scored as if
    named there. (A message that ended on a secret is ends_with_credential_word's.)"""
    normal = normalise(text)[0]
    if credential_words(normal) or ACCESS_PHRASES.search(normal):
        return True
    return any(is_access_word(word.strip(".,;:!?\"'()")) for word in normal.split())


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


def redact_secrets(text: str, *, continues: bool = False, carried: bool = False) -> tuple[str, list[SecretFinding]]:
    findings = find_secrets(text, continues=continues, carried=carried)
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
