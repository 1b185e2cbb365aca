"""Credentials people describe in words rather than paste as tokens, found as a class.

safety.py finds tokens with a recognisable shape (provider keys, card numbers, JWTs). People also
write "my PIN number is 7391", "the door code for the shed is 4482", "mein Passwort ist
Sonnenblume!73", "use 8841 to unlock the tablet", "the code for the side gate is four four one
two". What they have in common:

- a word that names a credential (in the common languages, found by its stem through any
  inflection or compound: credential_lexicon), and within a few words a value shaped like one
  (digits, letters mixed with digits or symbols, or, right after "is", plain words: "my
  password is correct horse battery staple");
- or any value-shaped token scored, as Presidio's recognisers and detect-secrets do, by its
  shape (a PIN-like number, a mixed token, a random-looking string by its entropy) plus the
  words around it in its clause (a credential word, an access cue such as "unlocks" or "gets
  me into", a counting cue such as "room" or "after ... requests" that lowers it), and kept as
  a credential at THRESHOLD;
- or a credential hidden in base64, or key material on its own (a long high-entropy base64 run:
  a private key's body without its header line, and the block of base64 lines around it).

The finding spans the word and the value, so a redaction covers the value. Text is looked at
after normalising what would hide a word from a pattern: compatibility forms (full-width
digits), zero-width and other format characters, letters of other scripts that look like
Latin ones (a Cyrillic "а" in "pаssword"), and letters or digits spaced out ("p a s s w o r d",
"6 0 4 8"); findings are mapped back to the original text.

Nothing here is tuned to an evaluation's phrasings: the word lists are closed classes of the
languages, and bench/changing_facts_blind.py measures the detector on credentials and harmless
numbers written blind to it (dev split to tune, held-out split to report).
"""
import base64
import binascii
import bisect
import collections
import functools
import itertools
import json
import math
import re
import unicodedata
from contextvars import ContextVar
from dataclasses import dataclass

from memoryapp.credential_lexicon import (
    ACCESS_PHRASES, COUNTED_BEFORE, LOOKALIKES, NOT_ACCESS_AFTER, SCRIPT_WORDS, SECURITY_QUESTION_WORDS, UNITS,
    UNSPACED_WORD, credential_word_kind, is_access_word,
)


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


# --- normalising ------------------------------------------------------------------------------

# Three or more single letters or digits with a space, a dot, a hyphen or an underscore (or a
# spaced one, "3 . 8 . 0") between them: a word or a value spelt out ("P I N", "p a s s w o r d",
# "k 9 m 2 p 7", "6 0 4 8") is read as written together.
_SPACED_OUT = re.compile(r"(?<!\S)[^\W_](?:[ ._\-·•]{1,3}[^\W_]){2,}(?![^\s.,;:!?)\]])")


def normalise(text: str) -> tuple[str, list[int]]:
    """`text` as patterns should see it, and for each of its characters the index of the
    original character it came from."""
    if text.isascii():  # most messages: nothing to fold, no format characters, no look-alikes
        return _joined_spaced_out(text, list(range(len(text))))
    out: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cf":  # zero-width spaces and joiners, BOM, soft hyphen
            continue
        for normal in unicodedata.normalize("NFKC", char).translate(LOOKALIKES):
            out.append(normal)
            origin.append(index)
    return _joined_spaced_out("".join(out), origin)


def _joined_spaced_out(normal: str, origin: list[int]) -> tuple[str, list[int]]:
    if not _SPACED_OUT.search(normal):
        return normal, origin
    joined: list[str] = []
    joined_origin: list[int] = []
    last = 0
    for match in _SPACED_OUT.finditer(normal):
        joined.append(normal[last:match.start()])
        joined_origin += origin[last:match.start()]
        for i in range(match.start(), match.end()):
            if normal[i] not in " ._-":
                joined.append(normal[i])
                joined_origin.append(origin[i])
        last = match.end()
        # An abbreviation's last dot ("p.i.n. for the app") belongs to it and ends no sentence.
        following = normal[last + 2:last + 3]
        if normal[match.start() + 1] == "." and normal[last:last + 2] in (". ", ".") and \
                (following.islower() or following.isdigit() or following in ("=", ":")):
            last += 1  # ("P.I.N. = 2.6.0.8": nor one before its value)
    joined.append(normal[last:])
    joined_origin += origin[last:]
    return "".join(joined), joined_origin


def original_span(origin: list[int], start: int, end: int, length: int) -> tuple[int, int]:
    """The span of the original text that the normalised span [start, end) came from."""
    if not origin:
        return 0, 0
    first = origin[start] if start < len(origin) else length
    last = origin[end - 1] + 1 if 0 < end <= len(origin) else length
    return first, last


# --- a credential word, then its value ---------------------------------------------------------

# A security question's name in the common languages ("the security question was 'first pet'"
# names the question; the answer to it is the secret).
SECURITY_QUESTION_NAMES = (
    r"(?:(?:security|secret)\s+questions?|questions?\s+(?:secr[eè]tes?|de\s+s[ée]curit[ée])|"
    r"preguntas?\s+(?:secretas?|de\s+seguridad)|domand[ae]\s+(?:segret[ae]|di\s+sicurezza)|"
    r"perguntas?\s+(?:secretas?|de\s+seguran[çc]a)|pytani[ae]\s+(?:pomocnicze|bezpiecze[ńn]stwa|zabezpieczaj[ąa]ce))"
)

CREDENTIAL_WORDS: list[tuple[str, re.Pattern]] = [
    ("one_time_code", re.compile(
        r"(?i)\b(?:otp|(?:setup|authenticator|2fa|mfa|totp)\s+keys?|one[- ]time\s+(?:code|password|passcode|pin)|(?:verification|confirmation|security|2fa|mfa|"
        r"auth(?:entication)?|login|sign[- ]?in|reset|sms)\s+codes?)\b")),
    ("recovery_code", re.compile(
        r"(?i)\b(?:(?:recovery|backup|restore|rescue)\s+(?:codes?|keys?|phrase|words)|seed\s+(?:phrase|words)|"
        r"mnemonic|wallet\s+seed)\b")),
    # Keys that unlock software: what the vendor's e-mail or the box calls them.
    # ("product code", "registration code" name SKUs and conference passes, not keys.)
    ("licence_key", re.compile(
        r"(?i)\b(?:(?:licen[cs]e|product|activation|serial|registration|cd)\s+keys?|"
        r"(?:licen[cs]e|activation)\s+codes?)\b")),
    ("access_code", re.compile(
        r"(?i)\b(?:(?:door|gate|alarm|lock|safe|locker|garage|access|entry|entrance|building|keypad|unlock|"
        r"padlock|bike\s+lock|lockbox|key\s*box|key\s+safe)\s+(?:codes?|combination|combo|pin)|combination|combo|"
        r"combinaci[oó]n|combinaison|combinazione|kombination|combina[cç][aã]o|"
        r"zugangscode|t[üu]rcode|c[oó]digo\s+de\s+(?:acceso|entrada|acesso)|code\s+d'acc[eè]s|"
        r"codice\s+(?:d'accesso|del\s+cancello|della\s+porta))\b")),
    ("pin", re.compile(
        r"(?i)\b(?:pin(?:\s*(?:code|number|no\.?|#))?|puk(?:\s*(?:code|number))?|geheimzahl|entsperrcode|"
        r"c[oó]digo\s+pin|code\s+pin|codice\s+pin)\b")),
    ("password", re.compile(
        r"(?i)\b(?:pass(?:word|wd|phrase|code)s?|pwd|pw|passwort|kennwort|contrase[ñn]a|clave|"
        r"mot\s+de\s+passe|mdp|senha|pass(?=\s*[:=])|key(?=\s*[:=])|parola\s+d'ordine|chiave\s+di\s+accesso|"
        r"(?:secret|code|safe|master|vault|unlock)\s*(?:phrase|words?)|"
        # Vietnamese and Romanian without their accents ("parola" alone is Italian's "word")
        r"mat\s+khau|parol[aă](?=\s+(?:mea|ta|sa|noastr[aă]|de\s+la)\b)|kata\s+(?:sandi|laluan)|"
        r"wi-?fi(?:\s+(?:key|password|code))?)\b")),
    # The answer to a security question, not the question ("the security question was 'first pet'").
    # In French, Spanish, Italian, Portuguese and Polish too (German and Dutch name it in one
    # word: credential_lexicon): the answer, up to three words before the question's name.
    ("security_answer", re.compile(
        r"(?i)\b(?:(?:security|secret|memorable)\s+(?:questions?\s+)?(?:answers?|words?|information)|"
        r"answers?\s+to\s+(?:my|the)\s+(?:security|secret)\s+questions?|"
        # the two questions banks ask most, named without the word "question"
        r"(?:mother|mum|mom|mam)['’]?s\s+maiden\s+name|first\s+pet['’]?s\s+name|name\s+of\s+(?:my|our)\s+first\s+pet|"
        r"(?:r[ée]ponses?|respuestas?|rispost[ae]|respostas?)\s+(?:secr[eè]te?s?|secretas?|segret[ae]|"
        r"de\s+s[ée]curit[ée]|de\s+seguridad|di\s+sicurezza|de\s+seguran[çc]a)|"
        r"(?:r[ée]ponses?|respuestas?|rispost[ae]|respostas?|odpowied[źz]|answers?)\s+(?:[^\W\d]+\s+){0,3}?"
        + SECURITY_QUESTION_NAMES + r")\b")),
    # A security question quoted, and what was put for it ("answer for 'first school':", "what i
    # put for 'city where your parents met' is"): a quote, not a word, ends the name. The
    # question asks about the person's past (a quiz's "why is the sky blue" is no such question).
    ("security_answer", re.compile(
        r"(?i)\b(?:answers?|what\s+(?:i|we)\s+(?:put|use|used|gave|wrote|typed|entered))\s+(?:for|to)\s+(?:the\s+)?"
        r"['\"‘“](?=[^'\"’”\n]{0,60}\b(?:your|you|my|first|favou?rite|childhood|born|birth\w*|maiden|pet|school|"
        r"street|teacher|nickname|mother|father|mum|mom|dad|parents|grand\w+|sibling|best\s+friend|hometown)\b)"
        r"[^'\"’”\n]{3,60}['\"’”](?:\s+questions?\b)?")),
    ("api_key", re.compile(
        r"(?i)\b(?:api\s*(?:key|token)|access\s+(?:key|token)|auth\s+token|secret(?:\s+key)?|token|"
        r"chave|cl[ée]|schl[üu]ssel|chiave|llave)\b")),
    # The half of a key pair that must stay private, and the keys that sign or spend ("my metamask
    # private key is 0x…"). A public key is none: safety.PUBLIC_KEY drops what overlaps one.
    ("private_key", re.compile(
        r"(?i)\b(?:priv(?:ate)?[ _-]?keys?|(?:signing|wallet|spending|master|encryption|decryption)\s+keys?)\b")),
    ("national_id", re.compile(
        r"(?i)\b(?:ssn|social\s+security(?:\s+number)?|social(?=\s*(?:is|was|:|#|no\b|number))|national\s+(?:insurance|id(?:entity)?)(?:\s+number)?|"
        r"dni|nie|nif|cpf|codice\s+fiscale|s[ée]curit[ée]\s+sociale|personalausweis(?:nummer)?|"
        r"steuer-?id|tax\s+(?:id|number)|passport\s+number)\b")),
    # The digits on the back of a card: three or four of them, named. (A bare "CVC" or "CSC" is
    # as often a boiler or a course: "CSC 263".)
    ("card_security_code", re.compile(
        r"(?i)\b(?:cvv2?|cvc2|card\s+(?:security|verification)\s+(?:code|value)|"
        # (a bare "CID" or "CSC" is as often something else; after the card's name, its code)
        r"(?:card|amex|american\s+express|visa|mastercard|discover)['’]?s?\s+(?:cid|csc|cvc|cvv)|"
        # ... or described by where it is printed: "the little number on the back of my visa"
        r"(?:numbers?|digits?|code)\s+on\s+the\s+back\s+of\s+(?:the|my|our|your|his|her|their)\s+"
        r"(?:[\w-]+\s+){0,2}(?:card|visa|mastercard|amex|maestro)|"
        # ... or by how many they are, where a payment is made: "checkout needs the 3 numbers on
        # the back" (not a hoodie's "four numbers on the back")
        r"(?:three|four|3|4)\s+(?:little\s+|small\s+|tiny\s+)?(?:numbers|digits)\s+on\s+the\s+back(?!\s+of\b))\b")),
    # A card's number in part ("card is 4111 1111"): digits only, at least CARD_DIGITS of them, so
    # "the card ending in 4242" stays a fact.
    ("card_number", re.compile(
        r"(?i)\b(?:(?:(?:credit|debit|bank|visa|mastercard|amex)\s+)?card|"
        # a card named by its network alone ("the amex is 3714 496353"); not "visa", which is
        # as often the one in a passport
        r"amex|american\s+express|mastercard|maestro)(?:\s+(?:number|no\.?|#))?\b")),
    # A box that holds a key opens with digits: "the keybox at the cottage is 4 7 1 2".
    ("code", re.compile(r"(?i)\b(?:key\s*box|lock\s*box|key\s+safe)\b")),
    # A bare "code" only with digits for a value ("the code for the side gate is 4412", "... is
    # four four one two"): "zip code", "dress code" and "source code" are not credentials.
    ("code", re.compile(
        # (a "c" first: the lookbehinds are tried only where a word opens with one)
        r"(?i)\b(?=c)(?<!zip )(?<!postal )(?<!post )(?<!area )(?<!country )(?<!dress )(?<!source )(?<!promo )"
        r"(?<!discount )(?<!error )(?<!status )(?<!product )(?<!colour )(?<!color )(?<!qr )(?<!bar )"
        r"(?<!tax )(?<!airport )(?<!language )(?<!morse )(?<!area )"
        # a bank branch's, a customs tariff's, a program's or a protocol's public number
        r"(?<!sort )(?<!hs )(?<!exit )(?<!return )(?<!http )(?<!swift )(?<!bic )(?<!iata )(?<!sku )"
        # where a bus stops, a course or a flight is found, a booking or a parcel is looked up
        r"(?<!stop )(?<!station )(?<!route )(?<!course )(?<!module )(?<!flight )(?<!booking )(?<!tracking )"
        r"(?<!reference )(?<!voucher )(?<!coupon )(?<!referral )(?<!invite )(?<!shipping )"
        r"\b(?:code|codes|c[oó]digo|codice)\b")),
]


def credential_words(text: str) -> list[tuple[str, int, int]]:
    """Every word (or phrase) of `text` that names a credential: (kind, start, end). The phrases
    of CREDENTIAL_WORDS, and any other word whose stem names one in a common language
    (credential_lexicon: "Firmenpasswort", "wachtwoord", "hasłem", "Tresorcode", "SIM-PIN")."""
    found = [(kind, m.start(), m.end()) for kind, pattern in CREDENTIAL_WORDS for m in pattern.finditer(text)]
    found += _script_words(text)
    covered = sorted((start, end) for _, start, end in found)
    for token in _WORD.finditer(text):
        word = token.group().rstrip(_WORD_TAIL)  # (a word ends on a letter or a digit)
        kind = credential_word_kind(word) if word else None
        if kind is None:
            continue
        at = bisect.bisect_right(covered, (token.start(), len(text))) - 1
        if at >= 0 and covered[at][1] > token.start():
            continue  # a phrase of CREDENTIAL_WORDS already names it
        if unspaced := UNSPACED_WORD.search(word):  # "我的密码是abc12345": the word, not its whole token
            found.append((kind, token.start() + unspaced.start(), token.start() + unspaced.end()))
            continue
        found.append((kind, token.start(), token.start() + len(word)))
    return found


# (the tail trimmed after the match: "[\w@$'’-]*\w" went back over every "$" of "$$$$...")
_WORD = re.compile(r"[\w@$][\w@$'’-]*")
_WORD_TAIL = "@$'’-"


def _script_words(text: str) -> list[tuple[str, int, int]]:
    """SCRIPT_WORDS' matches, the first in each run of text without a space: a script written
    without spaces can hold a word many times in one token ("口令口令口令…"), and each would read
    the whole rest of that token for its value."""
    if text.isascii() and not _LATIN_SCRIPT_WORD.search(text):
        return []  # most messages: none of the scripts, nor the few phrases written in Latin letters
    found, token_end = [], -1
    for kind, pattern in SCRIPT_WORDS:
        for match in pattern.finditer(text):
            if match.start() < token_end:
                continue
            found.append((kind, match.start(), match.end()))
            space = _SPACE.search(text, match.end())
            token_end = space.start() if space else len(text)
        token_end = -1
    return found


_SPACE = re.compile(r"\s")
# The first word of SCRIPT_WORDS' phrases written in Latin letters (Vietnamese "ma pin", Swahili
# "namba ya siri"): without one, ASCII text holds none of them.
_LATIN_SCRIPT_WORD = re.compile(r"(?i)\b(?:ma|mat|namba)\s")

# Kinds whose value may be plain words after "is" ("my password is correct horse battery staple").
WORDY_KINDS = frozenset({"password", "recovery_code", "security_answer"})
# The words "code" and "pass" name a credential whose kind their value decides (credential_words):
# a finding reports what it is.
_REPORTED = {"code": "access_code", "pass": "password"}


def _reported(kind: str) -> str:
    return _REPORTED.get(kind, kind)
# Kinds whose value must be digits.
DIGIT_KINDS = frozenset({"code", "card_number", "card_security_code"})
CARD_DIGITS = 8
# Words that may stand between the credential word and its value.
_FILLERS = frozenset(
    "is was are were will be to for of the my our your his her their a an on at number no no. # code new old "
    "current still now set reset changed just it's its this that here here's literally simply basically "
    "actually only really "
    # German, Spanish, French, Portuguese, Italian articles, possessives, copulas and prepositions
    "ist war mein meine meinen für das die der den von zum zur es mi mis de del la el para los las "
    "est c'est mon ma mes pour le du des é meu minha do da para o è il lo della per "
    # Dutch, Polish, Scandinavian, Czech, and more German, French, Spanish, Italian, Portuguese
    "mijn onze het van voor bij mój moja moje mojego mojej do dla na od jest wynosi mitt min mit er är för "
    "til till je lautet lauten unser unsere unseres vom beim fürs im am zu sind notre nos au aux à son "
    "sont nuestro nuestra al su tu mio mia di al sono meus minhas dos das são no na".split()
)
_ASSIGNMENT = frozenset({"is", "was", "are", "were", ":", "=", "it's", "to", "ist", "es", "est", "c'est", "é", "è",
                         "lautet", "lauten", "sind", "jest", "wynosi", "er", "är", "je", "son", "sono", "são",
                         "zijn", "equals", "reads", "called", "named",
                         # Indonesian and Malay, Welsh
                         "adalah", "ialah", "yw", "ydy"})
# After "is": a place or a negation, not the value ("my password is in the drawer").
_STOP = frozenset("in on at under behind inside written printed stored saved kept the a an not never somewhere "
                  "with safe "
                  # a description, not the value: "the password is too long", "hard to spell"
                  "too very so really quite pretty hard easy long short difficult weird unusual strange funny "
                  "common rare simple complicated impossible wrong incorrect "
                  # ... or its strength or fate: "34 of my passwords are weak", "reused", "leaked"
                  "weak strong secure insecure reused compromised leaked stolen hashed synced "
                  "identical different similar unique "
                  # the network, not its password: "the wifi at the library is free and open"
                  "free open public down slow fast patchy unreliable terrible awful great good bad fine off "
                  "working broken protected secured encrypted "
                  # when or where, in the languages above: "mein Passwort ist nach 90 Tagen abgelaufen"
                  "nach seit über unter zwischen während après depuis avant pendant dans sous después desde "
                  "antes durante hasta bajo dentro dopo prima sotto depois até sinds tijdens onder binnen "
                  "efter sedan innan etter siden "
                  # what happened to it, in the languages above: "mein passwort ist abgelaufen"
                  "expired locked blocked abgelaufen gesperrt falsch expiré expirée bloqué bloquée caducado "
                  "caducada caducó expirado expirada vencido vencida bloqueado bloqueada scaduto scaduta "
                  "bloccato bloccata verlopen geblokkeerd".split())
# The clause moved on: whatever comes next is not this credential's value.
_BREAK = frozenset("and or but because so which while when if than must should has have needs expires expired "
                   "expire expiring has expired".split())
# Right after the credential word, a noun it only describes: "password manager", "PIN pad",
# "door code keypad" name things, not a credential.
_DESCRIBED = frozenset("manager managers hint hints policy policies field prompt requirement requirements rule rules "
                       "strength protected keypad pad panel reader app vault generator length expiry reminder "
                       "sharing id ids fingerprint size path file format type bits "
                       # what a code is when it is no credential, said after the word ("kod pocztowy")
                       "postal postale pocztowy pocztowego kreskowy rabatowy promocyjny promocional promozionale "
                       "postais network networks ssid signal speed connection".split())
# "password reset link", "PIN change form": a process, named by what changes; not "password reset to
# Hunter2024!" (reset_process)
_PROCESS_OF = frozenset("reset resets change changes recovery".split())
_PROCESS = frozenset("link links email emails e-mail mail flow flows page pages process form forms request requests "
                     "button screen url urls policy ticket tickets procedure".split())


def _names_a_process(word: str, following: str) -> bool:
    return word.lower() in _PROCESS_OF and following.lower() in _PROCESS
# "the password is the word purple then the number forty two": a value described piece by piece
# runs to the end of its clause.
_SPELLING = frozenset("word words letter letters number numbers digit digits character characters symbol "
                      "symbols phrase name".split())
NUMBER_WORDS = {"zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
                 "six": "6", "seven": "7", "eight": "8", "nine": "9"}
# ... and in the languages whose credential words are known here, read digit by digit ("mi pin
# es cuatro siete cero nueve"): Spanish, French, German, Italian, Portuguese, Dutch. (Not the
# feminine articles "una", "une", "uma", which rarely read a digit.)
NUMBER_WORDS |= {word: str(digit) for digit, words in enumerate((
    "cero zéro null nul nulla", "uno eins één um", "dos deux zwei due dois twee", "tres trois drei tre três drie",
    "cuatro quatre vier quattro quatro", "cinco cinq fünf funf cinque vijf", "seis sechs sei zes",
    "siete sept sieben sette sete zeven", "ocho huit acht otto oito", "nueve neuf neun nove negen"))
    for word in words.split()}
# Letters read out in the phonetic alphabet ("sierra hotel eight echo"): each spells one character.
PHONETIC_LETTERS = frozenset("alpha alfa bravo charlie delta echo foxtrot golf hotel india juliet juliett kilo "
                             "lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey "
                             "whisky x-ray xray yankee zulu".split())
# Before a number, a word of time or quantity: "the password workshop starts at 1500".
_PREPOSITIONS = frozenset("at after by until till since from around about over under per every for in within "
                          "than".split())
QUOTES = {"'": "'", '"': '"', "‘": "’", "“": "”", "«": "»", "„": "“"}
_MAX_GAP = 8
# Without an "is", ":" or "=", a value comes within this many words of what it names
# ("PIN for the bank 4821").
_MAX_UNASSIGNED_WORDS = 2
_MAX_PASSPHRASE_WORDS = 6
# A wallet's recovery phrase is 12 to 24 plain words.
_MAX_RECOVERY_WORDS = 24
_MAX_DIGIT_GROUPS = 19  # a card number read out digit by digit
# (at most 256 characters at a time: a value is never longer, and a message of one long token
# with a credential word every few characters, "pin-pin-pin-…", must not be read to its end for each)
_TOKEN = re.compile(r"\S{1,256}")
_EDGE_PUNCTUATION = "\"'()[]{}<>,;.!?“”‘’—–"
_TIME = re.compile(r"(?i)^\d{1,2}[:.]\d{2}(?:am|pm)?$|^\d{1,2}(?:am|pm)$|^\d+(?:st|nd|rd|th)$"
                   r"|^(?:19|20)?\d0['’]?s$")  # ... and decades: "the 1950s", "80s"
_DATE_PARTS = re.compile(r"^(\d{1,4})[-/.](\d{1,2})[-/.](\d{1,4})$")
_YEAR = re.compile(r"^(?:19|20)\d{2}$")
# (halves of up to three digits, or years: "gate code 2580-3690" is a code)
_RANGE = re.compile(r"^(\d{1,3})-(\d{1,3})$|^((?:19|20)\d\d)-((?:19|20)\d\d)$")
_DIGITS = re.compile(r"^\d+$")
# Three or more groups of four to six letters or digits joined by hyphens, the way generated keys
# are printed to be read out (app passwords, licence keys, recovery codes).
_GROUPED = re.compile(r"^[A-Za-z0-9]{4,6}(?:-[A-Za-z0-9]{4,6}){2,}$")
# "a 4-digit code", "a 12-character password", "24-hour": a number describing a word.
# ("6-digit", "64-hex-char"; not "7-purple-monkey-dishwasher")
_DESCRIPTOR = re.compile(r"^\d+-[a-z]{3,}$|^\d{1,3}(?:-(?:hex|digit|digits|char|chars|character|characters|byte|"
                         r"bytes|bit|bits|letter|letters|word|words|symbol|symbols|long|wide|length))+$")
# "50k" is a salary, "48392017K" is not: only a short number takes the k.
# An amount is a number with a currency sign or code at one end: "Girasol_2020$" is no amount.
_MONEY = re.compile(r"^[$€£¥][\d.,]+(?:k|m|bn)?(?:/\w+)?$|^[\d.,]+(?:k|m|bn)?(?:[$€£¥]|eur|usd|gbp)(?:/\w+)?$"
                    r"|^\d{1,3}(?:[.,]\d+)?k$", re.I)  # "$140/night" too


def _is_date(token: str) -> bool:
    """2024-03-01, 12/31/2025, 31.12.25: a year (or two digits), a month and a day."""
    match = _DATE_PARTS.match(token)
    if not match:
        return False
    parts = [int(p) for p in match.groups()]
    year_first = len(match.group(1)) == 4
    month, day = (parts[1], parts[2]) if year_first else sorted(parts[:2])
    return 1 <= month <= 12 and 1 <= day <= 31


# What credential_shaped said of each token during one message's scan (one_scan): after every
# credential word, value_end looks at up to eight tokens of up to 256 characters, so a long
# message of such words ("pin-pin-pin-…", 32 KB) judged the same tokens again and again (2.4 s
# for that message, 1.2 s remembered). Kept for one scan only, so no token, a credential
# perhaps, outlives its message in the process.
_SHAPES: ContextVar[dict | None] = ContextVar("credential_shapes", default=None)


def one_scan(function):
    """Run `function` as one message's scan: credential_shaped remembers its answers until it ends."""
    @functools.wraps(function)
    def scanning(*args, **kwargs):
        if _SHAPES.get() is not None:
            return function(*args, **kwargs)
        scope = _SHAPES.set({})
        try:
            return function(*args, **kwargs)
        finally:
            _SHAPES.reset(scope)
    return scanning


def credential_shaped(token: str, *, previous: str = "") -> bool:
    memo = _SHAPES.get()
    if memo is None:
        return _credential_shaped(token, previous)
    found = memo.get((token, previous))
    if found is None:
        found = memo[(token, previous)] = _credential_shaped(token, previous)
    return found


def _host_list(token: str) -> bool:
    """Whether `token` lists hosts ("localhost,127.0.0.1", "NO_PROXY=.svc,10.0.0.1"), one for
    certain among them, under no credential's name. (Each host is matched on its own: one
    pattern for the list backtracked exponentially on a long list that failed at its end.)"""
    name, _, hosts = token.rpartition("=")
    if name and (not _SETTING_NAME.fullmatch(name) or _NAMES_A_CREDENTIAL.search(name)):
        return False
    items = [item.lstrip(".*") for item in hosts.strip(",").split(",")]
    return len(items) >= 2 and all(_HOST_NAME.fullmatch(item) for item in items) and _A_HOST.search(hosts) is not None


def _credential_shaped(token: str, previous: str) -> bool:
    """A value that looks like a credential rather than a word of the sentence: enough digits,
    letters mixed with digits, or symbols mixed in. Times, dates and amounts are words of the
    sentence, and so are a year or a date unless the sentence assigns it ("my PIN is 1987")."""
    if len(token) < 4 or _TIME.match(token) or _MONEY.search(token) or _DESCRIPTOR.match(token) \
            or _DECIMAL.match(token):  # "the order was 204.99 dollars": an amount or a measure
        return False
    if _VARIABLE.match(token):
        return False  # "${DB_PASSWORD}", "$API_TOKEN": where the value comes from, not the value
    if _ZONE_OFFSET.match(token) and (_YEAR.match(previous) or _CLOCK.match(previous) or _TIME.match(previous)):
        return False  # a log's "16:02:11 2024 +0200": the time zone
    if "," in token and _host_list(token):
        return False  # "ALLOWED_HOSTS=localhost,127.0.0.1": where a service listens, not a secret
    if _PUBLIC_NAME.match(token):
        return False  # "the wifi uses WPA3", "encrypted with AES-256": a standard's name
    if _PASSWORD_MANAGER.match(token) and previous in _BEFORE_A_PRODUCT:
        return False  # "it's in 1Password"; but "my password is 1Password!", "token: 1password" give it
    if _is_date(token) and previous not in _ASSIGNMENT:
        return False  # "changed on 2024-03-01"; but a lock's combination is "5-22-41"
    if _YEAR.match(token) and previous not in _ASSIGNMENT:
        return False
    if (span := _RANGE.match(token)) and int(span.group(1) or span.group(3)) < int(span.group(2) or span.group(4)) \
            and previous not in _ASSIGNMENT:
        return False  # "pages 10-12", "lines 120-180": from one number to a greater one
    # (counted by str methods mapped in C: a generator per character made a long message of
    # credential words "pin-pin-..." cost ~3 s for 50 KB)
    digits = sum(map(str.isdigit, token))
    letters = sum(map(str.isalpha, token))
    if digits >= 4 and not letters:
        return True
    if digits and letters:
        return True
    if letters and not _SYMBOLS.isdisjoint(token) and len(token) >= 6:
        return True
    if _GROUPED.match(token):
        return True  # "kqzv-ptwe-hmsa-rydc": an app password, a licence or recovery key in groups
    return len(token) >= 8 and any(map(str.isupper, token[1:])) and any(map(str.islower, token)) \
        and not _JOINED_WORDS.match(token)


_SYMBOLS = frozenset("!@#$%^&*+=_~/\\|")
# The public names of security standards, said beside credential words (and the spray every
# stiff lock gets).
_PUBLIC_NAME = re.compile(r"(?i)^(?:wpa[23]?(?:-(?:psk|personal|enterprise))?|wep|aes-?(?:128|192|256)|"
                          r"sha-?(?:1|2|3|224|256|384|512)|md[45]|rsa-?(?:1024|2048|3072|4096)|tls-?v?1\.[0-3]|"
                          r"ssl-?v?[23]|ed25519|x25519|p-?256|fido2|u2f|oauth2|wd-?40)$")
# Password managers, where a password is kept, named as one ("it's in 1Password", "we moved
# from LastPass to Bitwarden").
_BEFORE_A_PRODUCT = frozenset("in into from to with using use uses used via on the my our their your "
                              "his her an a team shared company family work personal business".split())
_PASSWORD_MANAGER = re.compile(r"(?i)^(?:1password|keepass(?:xc|x|2)?|lastpass|nordpass|bitwarden|dashlane|roboform|"
                               r"enpass|passbolt)$")


_VARIABLE = re.compile(r"^\$(?:\{[A-Za-z_]\w*\}?|[A-Z_][A-Z0-9_]*)$")
_ZONE_OFFSET = re.compile(r"^[+-](?:0\d|1[0-4]):?[0-5]\d$")
_HOST = r"(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|[a-z0-9-]+(?:\.[a-z0-9-]+)+)(?::\d{1,5})?(?:/\d{1,3})?"
_HOST_NAME = re.compile(_HOST)
_SETTING_NAME = re.compile(r"[A-Za-z_][\w.-]*")
# ... one of them a host for certain: an address, localhost, a common domain's ending.
_A_HOST = re.compile(r"localhost|\d{1,3}(?:\.\d{1,3}){3}|\.(?:com|org|net|io|dev|local|internal|lan|app|cloud|svc|"
                     r"co\.uk|de|fr|example)\b")
# A time of day to the second.
_CLOCK = re.compile(r"(?i)^(?:[01]?\d|2[0-3]):[0-5]\d:[0-5]\d(?:[.,]\d{1,6})?z?$")


# Words joined by a hyphen or an apostrophe, each capitalised or not: "Sub-Zero", "Jean-Luc",
# "O'Sullivan" are names, not a password's mixed case.
_JOINED_WORDS = re.compile(r"^[A-Z]?[a-z]+(?:[-'’][A-Z]?[a-z]+)+$")


def _words(text: str, start: int):
    """(raw token, the token without edge punctuation, where that starts) from `start` on."""
    for token in _TOKEN.finditer(text, start):
        raw = token.group()
        word = raw.strip(_EDGE_PUNCTUATION)
        yield raw, word, token.start() + (raw.find(word) if word else 0)


def _digit_run(words: list, count: int, *, listed: bool = False, spoken: bool = False) -> tuple[int, int] | None:
    """Digits written in groups ("22 14 36", "7 3 9 1"), as words ("four four one two"), or a
    value spelt out character by character ("k 9 m 2 p 7"), from word `count` on: (end, how
    many digits or characters), or None. `listed`: the value was just assigned ("is", ":"), so
    single digits may be read out with commas between them ("three, eight, eight, zero").
    `spoken`: a credential was just named, so numbers are also read as people say them
    ("double three six one", "twelve thirty four")."""
    end = digits = groups = in_row = 0
    spelt = False
    window = words[count:count + _MAX_DIGIT_GROUPS]
    for position, (raw, word, at) in enumerate(window):
        lowered = word.lower()
        previous = window[position - 1][1].lower() if position else ""
        if _DIGITS.match(word):
            digits += len(word)
        elif _HYPHENED_DIGITS.match(word) and not groups:  # "613-840", read out in two halves
            digits += sum(c.isdigit() for c in word)
        elif spoken and lowered in _TENS_AND_TEENS:
            digits += 2
        elif (hyphened := _hyphened_number_words(lowered, spoken=spoken)) is not None:
            digits += hyphened  # "three-five-eight-oh", "twenty-two"
        elif spoken and digits and lowered in _THEN and raw == word and position + 1 < len(window) \
                and _number_word(window[position + 1][1].lower(), spoken=True):
            pass  # "twenty, twelve, then zero zero": the next group of the same value
        elif spoken and lowered in _REPEATED and raw == word and position + 1 < len(window) \
                and window[position + 1][1].lower() in NUMBER_WORDS:
            digits += _REPEATED[lowered]  # "double three": the digit after it counts once more
        elif lowered in NUMBER_WORDS:
            # (a unit after a ten is its second digit: "thirty four" is two)
            digits += 0 if spoken and previous in _TENS and raw == word else 1
        elif len(word) == 1 and word.isalnum() or lowered in PHONETIC_LETTERS:
            digits += 1
            spelt = True
        else:
            break
        end, groups = at + len(word), groups + 1
        in_row = in_row + 1 if lowered in NUMBER_WORDS or len(word) == 1 and word.isdigit() else 0
        # Three digits read out or more, a comma, more of them: a code read out in groups ("four
        # four seven, zero two one"), wherever it stands.
        grouped = in_row >= 3 and _listed_digit(raw, word, window[position + 1:position + 2])
        if grouped:
            in_row = 0
        if raw != word and not grouped and not (listed and _listed_digit(raw, word, window[position + 1:position + 2])) \
                and not (spoken and listed and _next_group(raw, word, window[position + 1:position + 3])):
            break  # punctuation ends the value
    if spelt and not any(c.isdigit() for c in text_between(words, count, end)):
        return None  # single letters alone ("a b c d") spell no credential
    return (end, digits, groups) if digits else None


# Numbers as people say them: "twelve thirty four", "double three six one", and the tens and
# teens of the other languages whose digits are known ("doce, treinta, cero cinco"; not the
# Spanish "once" or the German "elf", which are English words).
_TENS = frozenset("twenty thirty forty fifty sixty seventy eighty ninety "
                  "veinte treinta cuarenta cincuenta sesenta setenta ochenta noventa "
                  "vingt trente quarante cinquante soixante "
                  "zwanzig dreißig dreissig vierzig fünfzig sechzig siebzig achtzig neunzig "
                  "venti trenta quaranta cinquanta sessanta settanta ottanta novanta "
                  "vinte trinta quarenta cinquenta sessenta setenta oitenta noventa".split())
_TENS_AND_TEENS = _TENS | frozenset("ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen "
                                    "nineteen diez doce trece catorce quince dieciséis dieciseis diecisiete "
                                    "dieciocho diecinueve dix onze douze treize quatorze quinze seize zehn zwölf "
                                    "zwoelf dreizehn vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn dieci "
                                    "undici dodici tredici quattordici quindici sedici diciassette diciotto "
                                    "diciannove dez onze doze treze catorze quinze dezesseis dezessete dezoito "
                                    "dezenove".split())
_REPEATED = {"double": 1, "triple": 2}
# Between two groups of one value read out: "zéro neuf, puis trois cinq". (Not the Spanish "y" or
# the Italian "e": a single letter is read as a character of a value spelt out.)
_THEN = frozenset("then and puis et dann und luego después despues poi depois daarna en".split())


def _number_word(lowered: str, *, spoken: bool) -> bool:
    return lowered.isdigit() or lowered in NUMBER_WORDS or spoken and lowered in _TENS_AND_TEENS \
        or _hyphened_number_words(lowered, spoken=spoken) is not None


def _hyphened_number_words(lowered: str, *, spoken: bool) -> int | None:
    """How many digits "three-five-eight-oh" or "twenty-two" read out, or None when `lowered`
    is not number words joined by hyphens."""
    if "-" not in lowered:
        return None
    digits, previous = 0, ""
    for part in lowered.split("-"):
        if part in NUMBER_WORDS:
            digits += 0 if previous in _TENS else 1
        elif spoken and part in _TENS_AND_TEENS:
            digits += 2
        else:
            return None
        previous = part
    return digits


def _next_group(raw: str, word: str, following: list) -> bool:
    """Whether a comma after a number read out continues the value with another group ("twenty,
    twelve, then zero zero"; "quatre sept, deux un"): only where a credential was just named and
    its value assigned."""
    said = lambda w: not w.isdigit() and _number_word(w, spoken=True) or len(w) == 1 and w.isdigit()  # noqa: E731
    if raw != word + "," or not following or not said(word.lower()):
        return False  # ("set the combination oven to 180, then 160": numbers in digits are no read-out)
    nxt = following[0][1].lower()
    if nxt in _THEN and following[0][0] == following[0][1] and len(following) > 1:
        nxt = following[1][1].lower()
    return said(nxt)


# (not a range of years: "valid 2021-2024")
_HYPHENED_DIGITS = re.compile(r"^(?!(?:19|20)\d\d-(?:(?:19|20)?\d\d)$)\d{2,4}(?:-\d{2,4})+$")


def _listed_digit(raw: str, word: str, following: list) -> bool:
    """Whether a comma after one digit (or number word) continues a value read out digit by
    digit ("three, eight, eight, zero", "five five five five, five five five five"): the comma
    follows a single digit or a number word, and another comes next."""
    if raw != word + "," or not following:
        return False
    nxt = following[0][1].lower()
    single = lambda w: len(w) == 1 and w.isdigit() or w in NUMBER_WORDS  # noqa: E731
    return single(word.lower()) and single(nxt)


def text_between(words: list, count: int, end: int) -> str:
    return "".join(word for _, word, at in words[count:] if at < end)


def value_end(text: str, start: int, *, wordy: bool, digits_only: bool = False, sentence: bool = False,
              phrase_words: int = _MAX_PASSPHRASE_WORDS, min_word: int = 4, min_digits: int = 4) -> int | None:
    """Where the credential value after position `start` ends, or None when no value follows
    within a few words. `wordy`: plain words (of `min_word` letters or more) right after "is",
    ":" or "=" are the value too;
    `digits_only`: only digits (in groups or as words) are a value."""
    previous = ""
    assigned = False
    relative = False  # the value follows "which is": only one shaped like a credential counts
    other_words = 0
    # Only the words a value can reach: reading the rest of the text for every credential word
    # made a long message of them ("pin pin pin ...") quadratic (82 s for 40 KB).
    words = list(itertools.islice(_words(text, start), _MAX_GAP + max(phrase_words, _MAX_DIGIT_GROUPS) + 1))
    for count, (raw, word, at) in enumerate(words[:_MAX_GAP]):
        lowered = word.lower()
        if count == 0 and (lowered.lstrip("-_") in _DESCRIBED
                           or len(words) > 1 and _names_a_process(lowered, words[1][1])):
            return None  # ("password manager", "--secret-id prod/db", "password reset link")
        if count == 0 and lowered in _PROCESS_OF and raw == word and not (
                len(words) > 1 and words[1][1].lower() in ("to", "it", "is", "was")):
            return None  # ("my password reset never came through"; not "the PIN reset to 0000")
        assigned = assigned or previous in _ASSIGNMENT
        # "the API key got rate limited after 1000 requests": 1000 is not its value.
        too_far = other_words > _MAX_UNASSIGNED_WORDS and not assigned
        if raw in (":", "=") or raw.endswith((":", "=")) and not word:
            previous = raw
            continue
        if lowered in ("which", "that") and count + 1 < len(words) and words[count + 1][1].lower() in _ASSIGNMENT:
            # "my memorable word, which is LAVENDERS": the clause gives the value, if one shaped
            # like it ("my password, which is annoying" says what it is like)
            previous, relative = lowered, True
            continue
        # (right after the credential word, "118-402" is its value, not a range of pages; "pin
        # 12-13" is two of a board's pins)
        named = ":" if not count and _HALVES.match(word) else previous
        # A lone letter may start a spelt value, but not the Italian or French "is" (è, é).
        starts_run = _DIGITS.match(word) or lowered in NUMBER_WORDS or lowered in PHONETIC_LETTERS or (
            _hyphened_number_words(lowered, spoken=True) is not None) or (
            _HYPHENED_DIGITS.match(word) and credential_shaped(word, previous=named)) or (
            len(word) == 1 and word.isalnum() and lowered not in _ASSIGNMENT) or (
            lowered in _TENS_AND_TEENS or lowered in _REPEATED)
        run = _digit_run(words, count, listed=previous in _ASSIGNMENT or previous == ":", spoken=True) \
            if starts_run and previous not in _PREPOSITIONS else None
        if run is not None and run[1] >= min_digits and (
                run[2] > 1 or credential_shaped(word, previous=named) or min_digits < 4):
            return None if too_far else run[0]
        if digits_only:
            if lowered in _BREAK or (raw.endswith((".", "!", "?")) and not word[-1:].isdigit()):
                return None
            # Words between count here too: "I wrote code for 3 years at a company with 5000
            # employees" names no code.
            if lowered not in _FILLERS and lowered not in _ASSIGNMENT:
                other_words += 1
            previous = ":" if raw.endswith(":") else lowered
            continue
        if word and not _DIGITS.match(word) and credential_shaped(word, previous=previous):
            return None if too_far else _spaced_groups_end(words, count) or at + len(word)
        if wordy and previous in _ASSIGNMENT and raw[:1] in QUOTES and word:
            # A quoted value runs to its closing quote: "is 'blue heron at midnight'".
            closing = text.find(QUOTES[raw[0]], at, at + 120)
            if closing > at and not _VARIABLE.match(text[at:closing]):
                return None if too_far else closing
        if wordy and word.isalpha() and previous in _ASSIGNMENT and lowered not in _STOP | _ASSIGNMENT \
                and not (relative and not (word.isupper() and len(word) >= 6)) \
                and lowered not in _FILLERS and lowered not in _BREAK and len(word) >= min_word \
                and not (_asks(words, count) and not raw.endswith(",")):  # (", what are they?" asks apart)
            end = at + len(word)
            # A passphrase runs on in plain words until the sentence or the clause does.
            last_raw, last_word = raw, word
            for offset, (next_raw, next_word, next_at) in enumerate(words[count + 1:count + 1 + phrase_words]):
                if next_raw.endswith(":") and next_raw[:-1].isalpha() and count + 2 + offset < len(words):
                    # "is three words: copper kettle morning": what the colon opens is the value
                    return _clause_end(words, count + 2 + offset, _MAX_RECOVERY_WORDS)
                if last_raw != last_word or not next_word.isalpha() or next_word.lower() in _BREAK | _STOP:
                    break  # punctuation after the last word, or a word that starts another clause
                end, last_raw, last_word = next_at + len(next_word), next_raw, next_word
            return end
        if previous in _ASSIGNMENT and lowered == "the" and count + 1 < len(words) \
                and words[count + 1][1].lower() in _SPELLING:
            return _clause_end(words, count, _MAX_RECOVERY_WORDS)
        if sentence and previous in _ASSIGNMENT and lowered == "the" and raw == word \
                and (end := _sentence_phrase_end(words, count, phrase_words)) is not None:
            return end  # "the passphrase is the owl sings at midnight": a sentence, article and all
        if lowered in _BREAK or (lowered in _STOP and previous in _ASSIGNMENT):
            return None
        if raw.endswith((".", "!", "?")) and not word[-1:].isdigit():
            return None  # the sentence ended without a value
        if lowered not in _FILLERS and lowered not in _ASSIGNMENT:
            other_words += 1
        previous = ":" if raw.endswith(":") else lowered
    return None


# What an article after "the passphrase is" opens when it says which, not what: "the same as
# before", "the one on the sticker", "the name of my dog".
_WHICH_ONE = frozenset("same one ones usual default old new first last second standard name word words thing bit "
                       "problem issue reason worst best longest hardest easiest usual current pain nightmare mess "
                       "feature requirement sentence sequence layer set annoyance point idea key part rest".split())
# A description, not a passphrase: "the passphrase is the thing you type to unlock it".
_DESCRIBES = frozenset("to of for i every from instead you your which that used is are was were between if than "
                       "our this these link spot option piece difference choice".split())
_EVALUATES = re.compile(r"(?i)^(?:\w+est|\w+er|only|main|critical|real|optional|key|important|same|whole|entire|"
                        r"biggest|primary|extra|single|last|first)$")


def _sentence_phrase_end(words: list, count: int, limit: int) -> int | None:
    """Where a passphrase that is a sentence ends ("the goat ate seven blue umbrellas"): plain
    words after the article, to the clause's end; None unless at least two follow it."""
    end, taken = None, 0
    following = words[count + 1:count + 2 + limit]
    if following and _EVALUATES.match(following[0][1]):
        return None  # "the weakest link", "the only thing", "the optional extra word"
    for raw, word, at in following:
        if word.lower() in _DESCRIBES:
            return None
        if not word.isalpha() or word.lower() in _BREAK or not taken and word.lower() in _WHICH_ONE | _STOP:
            break
        end, taken = at + len(word), taken + 1
        if raw != word:
            break  # punctuation ends the clause
    return end if taken >= 2 else None


def _spaced_groups_end(words: list, count: int) -> int | None:
    """Where a key printed in groups of one length ends ("af6n fuus 4m4g oimi 4b3s xzhd", an
    authenticator's setup key), or None: four groups or more, two of them with a digit."""
    size = len(words[count][1])
    if not 4 <= size <= 8:
        return None
    last = count
    for raw, word, _ in words[count + 1:count + 16]:
        if len(word) != size or not word.isalnum():
            break
        last += 1
        if raw != word:
            break  # punctuation ends the key
    groups = [word for _, word, _ in words[count:last + 1]]
    if len(groups) < 4 or sum(any(c.isdigit() for c in g) for g in groups) < 2:
        return None
    return words[last][2] + size


def _asks(words: list, count: int) -> bool:
    """Whether the sentence word `count` is in ends with a question mark. Plain words in a question
    are no value given ("ich habe mein Passwort vergessen, wie setze ich es zurück?": German "es"
    is Spanish "is"): nobody states a passphrase by asking."""
    for raw, word, _ in words[count:]:
        if raw.endswith("?"):
            return True
        if raw.endswith((".", "!", ";")) and not word[-1:].isdigit():
            return False
    return False


def _clause_end(words: list, count: int, limit: int) -> int:
    """Where the clause that word `count` starts ends: at the end of a sentence, or `limit` words on."""
    end = words[count][2]
    for raw, word, at in words[count:count + limit]:
        end = at + len(word)
        if raw.endswith((".", "!", "?", ";")) and not word[-1:].isdigit():
            break
    return end


def _card_grouped(value: str) -> bool:
    """A card's digits as people write them: groups of four or more digits (4-4-4-4, Amex's
    4-6-5), or read out as words; "1 800 528 4800" is a phone number, "1 250 000 000" a count."""
    return all(len(group) >= 4 for group in re.findall(r"\d+", value))


def _counted_before_digits(value: str) -> bool:
    """Whether the word right before the first digits of `value` says what they count or
    order ("Mastercard, order 12345678": an order's number)."""
    words = [w.strip(_EDGE_PUNCTUATION).lower() for w in value.split()]
    first = next((i for i, w in enumerate(words) if any(c.isdigit() for c in w)), None)
    return bool(first) and words[first - 1] in COUNTED_BEFORE and words[first - 1] not in ("number", "no", "nr", "#")


def _key_shaped(value: str) -> bool:
    """A key's value is no bare number ("the private key is 2048 bits long" gives a size, "master
    key for room 1204" a room) and no file's path ("~/.ssh/id_ed25519")."""
    token = value.split()[-1].strip(_EDGE_PUNCTUATION) if value.split() else ""
    return bool(token) and not token.isdigit() and not token.startswith(("/", "~", "./", "../")) and "\\" not in token


def _digit_count(value: str) -> int:
    """Digits in `value`, written as digits or as words ("five five five five, 4444")."""
    return sum(c.isdigit() for c in value) + sum(
        word.lower().strip(_EDGE_PUNCTUATION) in NUMBER_WORDS for word in value.split())


# A value masked or left to be filled in says nothing ("REDACTED", "********", "sk_live_••••3xQ9",
# "your-password-here", "changeme"; "changeme2024!" is a password).
# ("changeme-not-set": a placeholder's words after it, in lowercase; "ChangeMe-Admin" is deployed)
_MASKED = (r"(?:change[-_]?me-(?:not-set|later|please|before-[a-z]+|in-[a-z]+)"
           r"|(?i:redacted|removed|hidden|masked|changeme|change[-_]me|x{3,}|\*{3,}|todo|tbd|n/a|"
           r"your[-_][\w-]*[-_]here|[a-z]+(?:[-_][a-z]+)*[-_]here|[\w-]{0,12}•{3,}[\w-]{0,6}))")
# (a lowercase name holds no digit: "env.prod7k2m9x4q1" is a token)
_NAME = r"(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*|[a-z]+(?:_[a-z]+)*|[a-z]+(?:[A-Z][a-z]+)+)"
# Templates, substitutions and lookups in brackets, each read at most a line's worth (no
# backtracking over a long run of openers): "${DB_PASSWORD}", "${X:?unset}", "${{ secrets.X }}",
# "$(pass show db)", "{{ .Values.password }}", "<%= ENV['X'] %>", "%env(DB_PASS)%".
_TEMPLATE = (r"\$\{[A-Za-z_][\w.]{0,80}(?::?\?[^}\n]{0,200})?\}|\$\{\{[^{}\n]{0,200}\}\}|\$\([^()\n]{0,200}\)"
             r"|\{\{[^{}\n]{0,200}\}\}|\{%[^%\n]{0,200}%\}|<%=?[^%\n]{0,200}%>|%env\([^()\n]{0,200}\)%")
# Where a value would stand, what names one kept elsewhere (detect-secrets' heuristic filters
# drop the same): a variable or a template to be filled in ("${DB_PASSWORD}", "$API_TOKEN",
# "{{ secrets.NPM_TOKEN }}", "<YOUR_TOKEN_HERE>", "%(password)s", "vault('db/pass')"), a setting left null or
# boolean, or the name of the variable or file that holds the secret ("TF_VAR_db_password",
# "/run/secrets/db_password"). Only the whole value: "${HOME}Summer2024!" and "$ailboat77" give
# a password, and a name read after "env." or "secrets." must look like a name, not like a key
# ("env.Kx9mQ2vL7pR4wT8").
# A secret's place in a vault, in a syntax made for it: an App Service's Key Vault reference,
# vals' ("ref+vault://secret/db#/password"); 1Password's "op://" is read in _REFERENCE below.
_VAULT_SYNTAX = r"@Microsoft\.KeyVault\([^()\n]{0,300}\)|\bref\+[a-z0-9]+://[^\s\"'`]{1,300}"
# ... anywhere in a text (safety.find_secrets drops what is found inside one)
VAULT_REFERENCE = re.compile(_VAULT_SYNTAX + r"|\bop://[\w./-]{1,300}")
_REFERENCE = re.compile(
    r"(?:" + _TEMPLATE + r"|\$[A-Z_][A-Z0-9_]*|%\(\w+\)s|<[A-Za-z][A-Za-z_ -]{0,60}>|<[A-Z][A-Z0-9_]{0,60}>"
    r"|(?:secrets|env|vars?|ENV|process\.env|os\.environ)(?:\." + _NAME + r"|\[[\"']" + _NAME + r"[\"']\])+"
    r"|op://[\w./ -]+|arn:aws[\w-]*:(?:secretsmanager|ssm):[\w:/+=,.@-]+"
    # (any other resource named by words: "arn:aws:iam::123456789012:mfa/ci-bot"; not ".../user/Summer2024x")
    r"|arn:aws[\w-]*:[\w-]+:[\w-]*:\d{0,12}:(?:[A-Za-z_-]+|\d+)(?:[:/](?:[A-Za-z_-]+|\d+))*"
    r"|" + _VAULT_SYNTAX +
    r"|(?i:null|none|nil|true|false|undefined)|" + _MASKED + r"|\[" + _MASKED + r"\])"
    r"(?=[\s\"'`,;)\]}]|$)")
# A function that looks a secret up by its name ("vault('secret/data/api#db_pass')",
# "os.getenv('DB_PASSWORD')", "lookup('env', 'API_TOKEN')"): its arguments are names or paths
# and its fallback, if any, is empty; "env('DB_PASSWORD', 'L4ravel_Sunset!')" gives the password.
_CALL = re.compile(r"[A-Za-z_][\w.:]*\((?P<args>(?:[^()\n]|\([^()\n]*\))*)\)(?=[\s\"'`,;)\]}]|$)")
_ARGUMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z_.#:-]*|[\w.#:-]*/[\w./#:-]*|")


def _looks_up_by_name(value: str) -> bool:
    call = _CALL.match(value)
    return call is not None and all(
        _ARGUMENT_NAME.fullmatch(argument.strip().strip("\"'`")) for argument in call["args"].split(","))


# The name of a variable or a file that holds a secret ends with what it holds ("db_password",
# "TF_VAR_db_password", "/run/secrets/api_token"); "secret_garden" is a password, and a
# lowercase name holds no digit ("my_password1" is a password too).
_SECRET_NAME = re.compile(r"^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+(?:_[a-z]+)+|"
                          r"[A-Za-z]+(?:_[A-Za-z]+){2,}|[~.]?/[\w./-]+)$")
# A credential word that is part of such a reference names the secret, it does not give it.
# (so is one inside a path, or given to a function: "/run/secrets/db_password", "vault('secret/…')");
# but a dotted setting given a value is a setting ("secrets.password: Xk8#pq2Lz").
_INSIDE_REFERENCE = re.compile(r"(?:\$[{(]?|\{\{\s*|<|%\(|\b(?:secrets|env|vars?)\.|\b(?:environ|env|ENV)\[['\"]"
                               r"|\w\(['\"]?|(?:^|[\s\"'=:])[~.]?/(?:[\w.-]+/)*)$")
_ASSIGNED = re.compile(r"[\w.-]{0,64}[\"'\]]*\s*(?::(?!-)|=)\s*\S")


def refers_elsewhere(value: str) -> bool:
    """Whether `value` (the text where a credential's value would start) names a secret kept
    elsewhere rather than giving one."""
    value = value[_LEAD.match(value).end():]
    if _REFERENCE.match(value) or _looks_up_by_name(value):
        return True
    first = value.split(maxsplit=1)
    token = first[0].rstrip(",;:.)\"'`") if first else ""
    if _DOTTED.fullmatch(token):  # "settings.STRIPE_SECRET_KEY", "var.db_password", "config.password"
        parts = token.split(".")
        # (code's first name is lowercase: "Guest.Password" is a password; a resource's name may
        # come first: "random_password.db.result")
        return parts[0][:1].islower() and (_ends_with_credential_word(parts[-1]) and (
            bool(_SECRET_NAME.match(parts[-1])) or parts[-1].isalpha() and parts[-1].islower()) or all(
            _CODE_NAME.fullmatch(part) for part in parts) and any(
            _SECRET_NAME.match(part) and _ends_with_credential_word(part) for part in parts[:-1]))
    return bool(_SECRET_NAME.match(token)) and _ends_with_credential_word(token)


# What stands between a credential's name and its value: quotes closing the name, and "=", ":",
# "=>", ":=", "->" ("'password' => env('DB_PASSWORD', '')").
_LEAD = re.compile(r"[\s\"'`\]]*(?:=>|:=|->|[:=])?[\s\"'`]*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CODE_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _ends_with_credential_word(name: str) -> bool:
    spaced = re.sub(r"[_./-]", " ", name).rstrip()
    return any(end == len(spaced) for _, _, end in credential_words(spaced))


def _inside_reference(text: str, start: int) -> bool:
    at = start
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    if _ASSIGNED.match(text, at):
        return False
    if text[start:start + 1] == "$":
        return True
    return bool(_INSIDE_REFERENCE.search(text[max(0, start - 20):start]))


# A message points at secrets kept elsewhere when it holds a reference that names one: a
# template or a variable ("${MYSQL_ROOT_PASSWORD}", "$CI_REGISTRY_PASSWORD"), a lookup in the
# environment or a store ('getenv("KEYSTORE_PASSWORD")', "op://vault/db/password"), a secrets
# file, or a credential's setting left masked ("SECRET_KEY=xxxxxxxx"). Bounded, as _TEMPLATE.
_KEPT_ELSEWHERE = re.compile(
    _TEMPLATE + r"|\$[A-Z_][A-Z0-9_]{2,}\b"
    r"|\b(?:getenv|Getenv|GetEnvironmentVariable|environ\.get|environ|ENV|env|vault|lookup)[(\[][^()\[\]\n]{0,200}"
    r"|\bprocess\.env\.\w+|op://\S{1,200}|/run/secrets/\S{1,200}"
    r"|[\w.-]{1,60}[\"']?\s*[:=]\s*[\"']?" + _MASKED + r"(?=[\s\"'`,;)\]}]|$)")
_NAMES_A_CREDENTIAL = re.compile(r"(?i)pass|pwd|secret|token|key|cred|auth|pin\b")


def names_secrets_kept_elsewhere(text: str) -> bool:
    """Whether `text` points at secrets kept elsewhere (_KEPT_ELSEWHERE), or every credential it
    names is kept elsewhere: named by a variable or a file ("DB_PASSWORD se queda en el vault").
    Such a message talks about where secrets live; the rules have read it for values given
    beside (the classifier, which reads what a message is about, is not asked)."""
    if any(_NAMES_A_CREDENTIAL.search(match[0]) for match in _KEPT_ELSEWHERE.finditer(text)):
        return True
    names = credential_words(text)
    return bool(names) and all(
        _inside_reference(text, start) or refers_elsewhere(text[end:end + 200]) or _names_a_variable(text, start, end)
        for _, start, end in names)


def _names_a_variable(text: str, start: int, end: int) -> bool:
    """Whether the credential word at text[start:end] is part of a variable's name that is
    talked about, not given a value ("DB_PASSWORD stays in the vault"; not "my DB_PASSWORD is …")."""
    token = _token_at(text, start, end)
    # (or of a dotted reference in code: "random_password.db.result", "var.db_password")
    if not (_SECRET_NAME.match(token) and _ends_with_credential_word(token)
            or _DOTTED.fullmatch(token) and refers_elsewhere(token)):
        return False
    after = text.find(token, max(0, start - len(token))) + len(token)
    following = text[after:after + 12].split()
    # (at the end of the text nothing follows: "" is in every string)
    return not (text[after:after + 1] and text[after:after + 1] in ":=" or following and following[0].lower() in _ASSIGNMENT)


def _token_at(text: str, start: int, end: int) -> str:
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_./"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] in "_./"):
        end += 1
    return text[start:end].rstrip("./")


# Where a configuration or code holds references, a value inside one is part of a lookup
# ("$(pass show work/vpn)", "{{ .Values.db.password }}"), not a secret given.
_REFERENCE_IN_TEXT = re.compile(_TEMPLATE)
_MAY_REFER = re.compile(r"[$%{]")
# A key of a configuration, not its value: "ansible_user:", "retries:".
_KEY = re.compile(r"[\"']?[A-Za-z_][\w.-]*[\"']?:")
# An identifier made of words ("aws_db_instance", "ansible_user"): a name in code, not a value.
_SNAKE_WORDS = re.compile(r"[\"'`(]*[a-z]+(?:_[a-z]+)+[\"'`),;]*")


# A lookup's fallback is a value given in the open: "os.getenv('SECRET_KEY', 'dj-8f#k2@q!x7m')",
# "env('DB_PASSWORD', 'L4ravel_Sunset!')", "${DB_PASSWORD:-Pelican_Row_12}", Spring's "${key:AIza…}".
_FALLBACK = re.compile(r"""\b(?:getenv|Getenv|get|env|getProperty|fetch|lookup)\(\s*["'][^"'\n]{1,80}["']\s*,\s*"""
                       r"""(["'])(?P<call>[^"'\n]{4,200})\1"""
                       r"""|\$\{[A-Za-z_][\w.-]{0,80}(?::-|:)(?P<default>[^}\s]{4,200})\}""")


def _fallbacks(text: str) -> list[Finding]:
    if "(" not in text and "${" not in text:
        return []
    found = []
    for match in _FALLBACK.finditer(text):
        group = "call" if match["call"] is not None else "default"
        value = match[group]
        # (strong or random: "os.getenv('PORT', '8080')" and "${HOST:-localhost}" are no secrets)
        if _shape(value, "") in ("strong", "strong_symbol", "random", "random_mixed") and not refers_elsewhere(value):
            found.append(Finding("password", match.start(group), match.end(group)))
    return found


def _names_a_setting(text: str, value_start: int, value_end: int) -> bool:
    """Whether the value read after a credential's name is instead another setting's key (the
    last word of its line, ending with ":") or a credential's name itself ("key: password")."""
    raw = text[value_start:value_end].rstrip()
    value = raw.strip(" \t\n:=\"'")
    if not value:
        return False
    line_end = text.find("\n", value_end)
    line_rest = text[value_end:line_end if line_end >= 0 else len(text)]
    key = raw.split()[-1]
    if raw.endswith(":") and _KEY.fullmatch(key) and not any(c.isdigit() for c in key) and not line_rest.strip() \
            and line_end >= 0:
        return True  # (the configuration goes on below it; "wifi password: Sunset42:" is a value)
    return _whole_word_names_credential(value)


def _whole_word_names_credential(value: str) -> bool:
    return bool(value) and " " not in value and any(
        start == 0 and end == len(value) for _, start, end in credential_words(value))


def _names_rather_than_gives(text: str, start: int, end: int, references: list[tuple[int, int]]) -> bool:
    """Whether the candidate value text[start:end], found near a credential's name, names or
    points at something rather than giving a secret: a reference or a lookup by name
    ("$API_TOKEN", "<YOUR_TOKEN_HERE>", "settings.STRIPE_SECRET_KEY"), a part of one, a
    configuration's key, an identifier in words ("aws_db_instance"; the worded forms read
    "my password is secret_garden"), or text ending with a secret's name
    ('log.Fatal("GITHUB_TOKEN' in 'log.Fatal("GITHUB_TOKEN not set")')."""
    token = text[start:end]
    if refers_elsewhere(text[start - (start > 0 and text[start - 1] in "<$"):start + 200]):
        return True
    if any(ref_start <= start and end <= ref_end for ref_start, ref_end in references):
        return True
    if _KEY.fullmatch(token) and (end == len(text) or text[end].isspace()) or _SNAKE_WORDS.fullmatch(token):
        return True
    if _a_variables_name(text, start, end):
        return True
    tail = re.search(r"[A-Za-z][\w]*$", token.rstrip("\"'`,;:)"))
    return bool(tail) and tail.start() > 0 and bool(_SECRET_NAME.match(tail[0])) and _ends_with_credential_word(tail[0])


_ENVIRONMENT_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_HEADER_NAME = re.compile(r"[A-Z][a-z]*(?:-[A-Z][a-z]*)+")


def _a_variables_name(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is, whole, an environment variable's name that names a credential
    ("injects STRIPE_KEY, DB_PASSWORD"), or an HTTP header's ("the X-Api-Key header")."""
    bare = text[start:end].strip(_EDGE_PUNCTUATION + "`:")
    if _ENVIRONMENT_NAME.fullmatch(bare):
        return _ends_with_credential_word(bare) or bare.endswith(("_KEY", "_KEYS"))
    return _HEADER_NAME.fullmatch(bare) is not None and _ends_with_credential_word(bare) and (
        bare.startswith("X-") or text[end:end + 8].lstrip(" \"'`").lower().startswith("header"))
# A setting's name and its value in one token ("DB_HOST=localhost"): the name says what the value is.
_SETTING = re.compile(r"^([A-Za-z_][\w.-]*)=(.+)$")


def _cue_ends_the_line(rest: str) -> bool:
    """Whether what follows a credential's name on its line lets the value come on the next one
    ("password:\n  hunter2", "mein Passwort ist\n…", "set to\n…"): nothing, or a cue last."""
    rest = rest.rstrip(" \t\r\"'`")
    last = rest.split()[-1].lower() if rest.split() else ""
    return not rest or rest.endswith((":", "=", "=>", "->", "→")) or last in _ASSIGNMENT


# A line that is an entry of a configuration of its own: "KEY=…", "key: …", "- key: …", "[section]".
_ENTRY_LINE = re.compile(r"[ \t]*(?:-[ \t]+)?(?:(?P<key>[\w.-]+)[ \t]*(?P<cue>=|:(?=\s|$))|\[[\w .-]+\][ \t]*(?=\n|$))")
_CAMEL_CASE = re.compile(r"[a-z]+(?:[A-Z][a-z0-9]+)+")  # "existingSecretName"
# A setting's name before "=": joined words or capitals ("DB_HOST", "db.host", "dbHost"), not a
# plain word ("tiger=Blue42" may be the value).
_JOINED_SETTING_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[_.-][A-Za-z0-9]+)+|[A-Z][A-Z0-9]{2,}|[a-z]+(?:[A-Z][a-z0-9]+)+")


def _an_entry_of_its_own(text: str, line_end: int) -> bool:
    """Whether the line after a name whose value was left empty ("DB_PASSWORD=", "password:") is
    another entry ("DB_HOST=localhost", "  size: 20Gi", "[database]"): then nothing was given,
    whatever the entry holds. A value alone on the next line ("password:\n  hunter2") is still the
    value, and so is one with "=" in it after a plain word ("tiger=Blue42", "Xq7=kP2m!v")."""
    entry = _ENTRY_LINE.match(text, line_end + 1)
    if entry is None or entry["key"] is None:
        return entry is not None
    if entry["cue"] == "=":
        return bool(_JOINED_SETTING_NAME.fullmatch(entry["key"]))
    return bool(_CONFIGURATION_KEY.fullmatch(entry["key"]) or _CAMEL_CASE.fullmatch(entry["key"]))


_NAMES_A_FILE = re.compile(r"(?i)[_.-](?:file|path|dir|filename|location)$")


def _another_setting(setting: re.Match, text: str, at: int) -> bool:
    """Whether the setting "NAME=value" (matched by _SETTING in text at `at`) sets something other
    than a credential: "DB_HOST=localhost" beside "DB_PASSWORD=…", or a credential's setting that
    names a secret kept elsewhere ('PGPASSWORD="$(aws secretsmanager …)"'). A random value is a
    secret whatever its setting is called ("OPENWEATHER_KEY=74ab…"); the shape of the setting's
    value is read, not of "NAME=value" ("DB_HOST=10.0.3.14" is no key)."""
    if not (_CONFIGURATION_KEY.fullmatch(setting[1]) or ";" in setting[2] and setting[1].istitle()) \
            or setting[2].startswith("="):
        return False  # "Xq7=kP2m!v", "Mq==Lk72pz": a password with "=" in it ("Server=db02;…" is a setting)
    if _NAMES_A_FILE.search(setting[1]) and _PATH.match(setting[2].strip("\"'")):
        return True  # "ssh_private_key_file=~/.ssh/deploy_ed25519": where the key is kept
    # A connection string's settings ("Server=sql01;Database=Shop;User"): none may give a credential
    # ("…;AccountKey=q8Zt…").
    pairs = [part.partition("=") for part in setting[0].split(";")]
    if len(pairs) > 1 and any(_NAMES_A_CREDENTIAL.search(name) and value and not refers_elsewhere(value)
                              for name, _, value in pairs):
        return False
    return _shape(pairs[0][2], "") not in ("random", "random_mixed") and (
        not credential_words(_spaced(setting[1])) or refers_elsewhere(text[at + setting.start(2):][:200]))


_PASSES_THROUGH = re.compile(r"(?:^|\s)(?:-e|--env)\s+$")


def _passed_through(text: str, start: int, name_end: int) -> bool:
    """Whether the credential's name is a variable handed on by name ("-e POSTGRES_PASSWORD", no
    "=", then another option): the program reads its value from the environment, and what
    follows belongs to the next option."""
    reach = max(0, start - 200)  # (a name is a short token: reading back further made long texts quadratic)
    space = max(text.rfind(" ", reach, start), text.rfind("\n", reach, start), text.rfind("\t", reach, start))
    token_start = space + 1 if space >= 0 else reach
    token_end = name_end
    while token_end < len(text) and (text[token_end].isalnum() or text[token_end] == "_"):
        token_end += 1
    if _PASSES_THROUGH.search(text[max(0, token_start - 8):token_start]) is None \
            or _ENVIRONMENT_NAME.fullmatch(text[token_start:token_end]) is None:
        return False
    # ... and only before the next option or the end: "-e DB_PASSWORD hunter2" gives it
    following = text[token_end:token_end + 3]
    return following.strip() == "" or re.match(r"[ \t]+--?[A-Za-z]", following + " x") is not None


def _only_a_cue(between: str) -> bool:
    """Whether only a cue stands between a credential's name and what follows ("password is
    x=Tiger88" gives the value; "-e POSTGRES_PASSWORD -e APP_ENV=prod" another setting)."""
    words = [w.strip("\"'`") for w in re.sub(r"[:=]", " ", between).split()]
    return all(not w or w.lower() in _ASSIGNMENT for w in words)


# A configuration's key: "APP_ENV", "POSTGRES_USER", "host", "spring.datasource.url", "AccountName".
_CONFIGURATION_KEY = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,}|[a-z][a-z0-9]{2,}(?:[._-][a-z0-9]+)*"
                                r"|[a-z][a-z0-9]*(?:[._-][a-z0-9]+)+|(?:[A-Z][a-z]+){2,5}")


def _spaced(name: str) -> str:
    """A setting's name as words: "DB_PASSWORD", "db.password", "AccountKey" -> "DB PASSWORD", …"""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", re.sub(r"[_.-]", " ", name))


_NAMES_THE_NETWORK = re.compile(r"(?i)\s*(?:is|was|'s)?\s*(?:called|named)\b")


def _worded(text: str, names: list[tuple[str, int, int]]) -> list[Finding]:
    findings = []
    for kind, start, name_end in names:
        if _WRITTEN_WITHOUT_SPACES.search(text, start, name_end):  # a word of a script without spaces
            if (value := _unspaced_value(text, name_end, wordy=kind in WORDY_KINDS)) is not None:
                findings.append(Finding(_reported(kind), start, value))
            continue
        end = value_end(text, name_end, wordy=kind in WORDY_KINDS, digits_only=kind in DIGIT_KINDS,
                        sentence=kind == "password" and "phrase" in text[start:name_end].lower(),
                        phrase_words=_MAX_RECOVERY_WORDS if kind == "recovery_code" else _MAX_PASSPHRASE_WORDS,
                        # A pet's or a teacher's name answers a security question: "Rex".
                        min_word=2 if kind == "security_answer" else 4,
                        # a card's security code is three or four digits
                        min_digits=3 if kind == "card_security_code" else 4)
        if end is None:
            continue
        value = text[name_end:end]
        last_word = value.split()[-1] if value.split() else ""
        if refers_elsewhere(text[name_end:name_end + 200]) or refers_elsewhere(last_word):
            continue  # "DB_PASSWORD=${DB_PASSWORD}", "password: null", "pass it with TF_VAR_DB_PASSWORD"
        if "/" in last_word and _a_files_name(last_word.rstrip(_EDGE_PUNCTUATION + ":")):
            continue  # "keys from /.well-known/jwks.json": where they are kept, a file's path
        if _names_a_setting(text, name_end, end):
            continue  # "- name: DB_PASSWORD\n  valueFrom:", "key: password": a configuration's names
        line_end = text.find("\n", name_end, end)
        if line_end >= 0 and (not _cue_ends_the_line(text[name_end:line_end]) or _an_entry_of_its_own(text, line_end)):
            continue  # "id-token: write\n  contents: read …": a value read past the name's line was not given after it
        if _a_variables_name(text, end - len(last_word), end):
            continue  # "exports GITLAB_TOKEN, NPM_KEY", "the X-Api-Key header": names
        if (setting := _SETTING.match(last_word)) and _another_setting(setting, text, end - len(last_word)) \
                and not _only_a_cue(text[name_end:end - len(last_word)]):
            continue  # "-e POSTGRES_PASSWORD -e POSTGRES_USER=app": another setting, not the value
        if _passed_through(text, start, name_end):
            continue  # "docker run -e POSTGRES_PASSWORD -p 5432:5432": the port is no password
        if kind == "card_number" and (_digit_count(value) < CARD_DIGITS or not _card_grouped(value)
                                      or _counted_before_digits(value)):
            continue
        if kind == "private_key" and not _key_shaped(value):
            continue
        if kind == "password" and _NAMES_THE_NETWORK.match(text, name_end) and text[start:name_end].lower() in (
                "wifi", "wi-fi"):
            continue  # "our wifi is called skynet": the network's name ("the wifi password is called …" is not)
        if kind == "pass" and text[name_end:end].strip(" :=").replace(" ", "").isdigit():
            continue  # "bus pass 4471" is a ticket
        findings.append(Finding(_reported(kind), start, end))
    return findings


# --- the value first: "hunter2 is my password", "Pemberton is what I put for the security questions"

_VALUE_FIRST_KINDS = frozenset({"password", "pin", "access_code", "security_answer", "one_time_code", "code"})
_SECURITY_QUESTIONS = re.compile(r"(?i)\b" + SECURITY_QUESTION_NAMES + r"\b")
_POSSESSIVES = frozenset("my our the his her their your its".split())
# "what I put for", "what we use as": the value is what someone chose for the credential.
_CHOSE = frozenset("put use used entered typed chose chosen set gave give wrote picked".split())
# Words that stand for a value named elsewhere: "this is my password" names none.
_PRONOUNS = frozenset("this that it which what there here mine ours yours his hers theirs one same who "
                      "everything nothing something anything all".split())
_VALUE_FIRST_REACH = 10
# What may follow a credential's name when the name ends the clause.
_NAME_ENDS = frozenset("for on to of at in with and but so is was".split())


def _value_before(words: list, index: int, kind: str) -> Finding | None:
    """The value that words[index] (a copula right before a credential's name) follows, if any."""
    if index == 0:
        return None
    raw, word, at = words[index - 1]
    if raw != word or not word or word.lower() in _PRONOUNS | _FILLERS:
        return None  # punctuation between the value and "is" ends the clause
    before = words[index - 2][0] if index >= 2 else ""
    starts_clause = index == 1 or before.endswith((".", "!", "?", ",", ";", ":")) or before.lower() in _BREAK
    # Nothing assigns the value before it, so a year or a date stays a word of the sentence.
    shaped = credential_shaped(word)
    plain = kind in WORDY_KINDS and word.isalpha() and len(word) >= 3 and starts_clause
    return Finding(kind, at, at + len(word)) if shaped or plain else None


def _value_first(text: str, names: list[tuple[str, int, int]]) -> list[Finding]:
    names = [(kind, start, end) for kind, start, end in names if kind in _VALUE_FIRST_KINDS]
    names += [("security_answer", m.start(), m.end()) for m in _SECURITY_QUESTIONS.finditer(text)]
    if not names:
        return []
    words = list(_words(text, 0))
    starts = [at for _, _, at in words]
    findings = []
    for kind, name_start, name_end in names:
        # The name ends its clause ("hunter2 is my password.", "... is my PIN for the bank"):
        # "Keeper is my password manager" and "Monday was the password reset day" name other things.
        rest = text[name_end:name_end + 20].lstrip()
        following = rest.split()[0].lower() if rest else ""
        if rest and rest[0] not in _EDGE_PUNCTUATION and following not in _NAME_ENDS:
            continue
        # The words before the credential's name, back to a copula, within the same sentence.
        first_after = bisect.bisect_left(starts, name_start)
        before = list(range(max(0, first_after - _VALUE_FIRST_REACH), first_after))
        for position, i in enumerate(reversed(before)):
            raw, word, _ = words[i]
            if position and raw.endswith((".", "!", "?", ";")):
                break
            if word.lower() not in ("is", "was", "="):
                continue
            between = [w.lower() for _, w, _ in words[i + 1:before[-1] + 1]]
            possessed = len(between) <= 4 and (not between or between[0] in _POSSESSIVES)
            chosen = len(between) >= 3 and between[0] == "what" and between[2] in _CHOSE
            if possessed or chosen:
                if (finding := _value_before(words, i, kind)) is not None:
                    findings.append(finding)
            break
    return findings


# --- a security question's answer named by the question's topic ----------------------------------
# "for the security question about my favourite film i used Jaws2", "my 'first car' answer is
# vauxhall corsa", "for 'city where your parents met' i put Swindon". Only where the topic's own
# sentence says it is such a question: "my first pet was a hamster" is a fact to remember, and so
# is "My first pet was Rex" after "I never use real answers for security questions."

# A security question named, in the common languages ("security q", "question secrète",
# "Sicherheitsfrage", "контрольный вопрос", "שאלת אבטחה", "câu hỏi bảo mật").
_QUESTION_NAMES = r"(?:" + SECURITY_QUESTION_NAMES + r"|" + SECURITY_QUESTION_WORDS + r")"
_ANSWER_FRAME = re.compile(r"(?i)\b(?:security|secret|recovery|verification)\s+(?:questions?|answers?|qs?)\b|"
                           r"(?<!\w)" + _QUESTION_NAMES)
_QUOTES = "'‘’\"“”"
_SENTENCE_BREAK = re.compile(r"[.!?\n]")
# The topics banks and sites ask about, in English.
_QUESTION_TOPIC = re.compile(
    r"(?i)\b(?:name\s+of\s+(?:your|my|the)\s+(?:first|childhood|favou?rite)\s+\w+|"
    r"(?:first|childhood)\s+(?:pet|car|school|job|teacher|concert|boss|street|home|house|phone|"
    r"best\s+friend|friend)(?:['’]s\s+name)?|pet['’]?s?\s+name|maiden\s+name|birth\s*place|"
    r"(?:city|town|place|hospital|country)\s+(?:where\s+)?(?:i|you)\s+(?:was|were)\s+born|where\s+(?:i|you)\s+(?:was|were)\s+born|"
    r"(?:primary|elementary|junior|high|secondary|middle)\s+school|"
    r"favou?rite\s+(?:teacher|film|movie|book|food|colou?r|band|(?:sports?\s+)?team|city|place|animal|song|"
    r"singer|holiday|dish|meal|drink|subject|author)|"
    r"street\s+(?:i|you|we)\s+grew\s+up\s+on|(?:city|town)\s+where\s+(?:your|my)\s+parents\s+met|"
    r"childhood\s+(?:nickname|hero|dream\s+job)|(?:mother|father|mum|mom|dad)['’]?s\s+middle\s+name)\b")
# After the topic, in its sentence: what gives the answer.
_ANSWER_CUE = re.compile(
    r"(?i)[^.!?\n]{0,40}?(?:\b(?:is|was)|[=:—–]|\b(?:i|we)\s+(?:put|said|used|wrote|entered|gave|typed)|"
    r"\banswer\s+(?:is|was))\s+")
_RELATIVE = re.compile(r"(?i)\b(?:which|that|it|this)\b")
# "… — I put Port Talbot", "first car: I typed it as corolla94": who chose the answer, before it.
_PUT = re.compile(
    r"(?i)(?:(?:i|we)\s+(?:put|said|used|wrote|entered|gave|typed|chose|picked|answered|replied)(?:\s+it)?"
    r"(?:\s+(?:in\s+)?(?:as|with))?|"
    r"j['’]ai\s+(?:mis|écrit|ecrit|répondu|repondu|choisi)|puse|escribí|escribi|elegí|ho\s+(?:messo|scritto)|"
    r"coloquei|escrevi|pus|ich\s+hab(?:e)?|habe\s+ich|heb\s+ik|"
    r"я\s+(?:написал|написала|указал|указала|ответил|ответила)|"
    r"c['’]est|it['’]s|it\s+is)\s+")
_ANSWER_WORD = re.compile(r"[^\s,.;:!?()\"“”]+")
_ANSWER_ENDS = frozenset("and but so because with which that lol haha i we it is was for on in at to or "
                         "maybe though".split())
_ANSWER_WORDS = 3


_LOOKS_BACK = re.compile(r"(?i)\s*(?:those|these|that|this|they|both|it)(?:\s+(?:are|is|were|was)|['’]s)\s+"
                        r"(?:(?:my|our|the|his|her|their|two|three|both|all)\s+){0,2}(?:\w+\s+)?"
                        r"(?:security|secret|recovery|verification)\s+(?:questions?|answers?)\b")
_ASKED = re.compile(r"(?i)\b(?P<asker>bank|building\s+society|agent|adviser|advisor|customer\s+service|support|"
                    r"helpline|help\s*desk|call\s+cent(?:re|er)|operator|app|site|website|provider|insurer|"
                    r"they)\b[^.!?\n]{0,30}?\basked\b")
# ... to check who is calling, said in the same sentence ("the bank asked my favourite colour for
# the card design" checks nobody).
_VERIFYING = re.compile(r"(?i)\b(?:verif(?:y|ied|ying|ication)|identity|id\s+check|security\s+(?:check|step)|"
                        r"(?:for|as\s+a)\s+security\b|"
                        r"(?:prove|confirm)\w*\s+(?:it\s+was|it['’]s|that\s+i\s+was)\s+(?:really\s+)?me|"
                        r"locked\s+out|(?:to\s+)?(?:reset|unlock|recover)\s+(?:my|the)\s+(?:account|password|login|pin))")
_TOPIC_SENTENCE_REACH = 300  # characters each way
_KEEPS_ACCOUNTS = frozenset({"bank", "building society", "helpline", "customer service", "call centre", "call center",
                             "operator", "provider", "insurer"})


def _framed(text: str, topic: re.Match) -> bool:
    """Whether the topic's sentence says it speaks of a security answer: "security / recovery
    question" in it, or the topic quoted as a question is ("for 'city where your parents met' i
    put", "my 'first car' answer is"; not "an essay called 'First Pet'")."""
    # (a bounded stretch each way: a long text of topics made every topic scan the whole sentence)
    reach = max(0, topic.start() - _TOPIC_SENTENCE_REACH)
    start = max((m.end() for m in _SENTENCE_BREAK.finditer(text, reach, topic.start())), default=reach)
    limit = min(len(text), topic.end() + _TOPIC_SENTENCE_REACH)
    broken = next(_SENTENCE_BREAK.finditer(text, topic.end(), limit), None)
    end = broken.start() if broken else limit
    if _ANSWER_FRAME.search(text, start, end):
        return True
    # The next sentence looks back at it: "street i grew up on = Larkspur Lane. those are my
    # recovery questions".
    if broken is not None and _LOOKS_BACK.match(text, broken.end()):
        return True
    # Asked by who checks one's identity, and answered: "the bank asked where i was born and i
    # said …" ("my son asked where i was born" is a conversation, not a check).
    asked = _ASKED.search(text, start, topic.start())
    # (who keeps one's account asks the classic questions only to check; a favourite is asked
    # for many reasons: "the bank asked my favourite colour for the card design")
    if asked is not None and (" ".join(asked["asker"].lower().split()) in _KEEPS_ACCOUNTS
                              and not topic[0].lower().startswith("favo")
                              or _VERIFYING.search(text, start, end)):
        return True
    opened, closed = text[topic.start() - 1:topic.start()], text[topic.end():topic.end() + 1]
    if not (opened and opened in _QUOTES and closed and closed in _QUOTES):
        return False
    return bool(re.search(r"(?i)\b(?:for|answer\s+to|wanted|wants|asked(?:\s+for)?|asks(?:\s+for)?)\s*$",
                          text[max(0, topic.start() - 16):topic.start() - 1])
                or re.match(r"(?i)\s*(?:answer|question)\b", text[topic.end() + 1:topic.end() + 12]))


def _answers_by_topic(text: str) -> list[Finding]:
    findings = []
    for topic in _QUESTION_TOPIC.finditer(text):
        if not _framed(text, topic):
            continue
        at = topic.end()
        if text[at:at + 1] in _QUOTES and text[at:at + 1]:
            at += 1  # the topic quoted: "my 'first car' answer is …"
        cue = _ANSWER_CUE.match(text, at)
        if cue is None or _RELATIVE.search(cue[0]):
            continue  # ("… 'name of your first school', which is silly" says what it is like)
        start = end = (put.end() if (put := _PUT.match(text, cue.end())) else cue.end())
        if put is None and cue[0].rstrip()[-1:] in "—–":
            # after a dash, a short answer ends the sentence ("— Alderney Road."), or it is a
            # remark ("— Vanguard asked it again", "— I'll set it up tonight")
            broken = _SENTENCE_BREAK.search(text, start, start + 200)
            if _A_CONTRACTION.match(text, start) or not _a_short_answer(
                    text, start, broken.start() if broken else min(len(text), start + 200)):
                continue
        for count in range(_ANSWER_WORDS):
            word = _ANSWER_WORD.match(text, end if not count else end + 1)
            if word is None or word[0].lower() in _ANSWER_ENDS or (count and text[end] != " "):
                break
            if not count and (word[0].lower() in _PRONOUNS | _FILLERS or word[0].lower() in ("a", "an", "the", "my")):
                break  # "the first pet was a dog", "was it …": no answer given
            end = word.end()
        if end > start:
            findings.append(Finding("security_answer", start, end))
    return findings


# --- the answer after a security question's name and a separator ----------------------------------
# "security question (first pet): Rex", "Güvenlik sorusu: ilk öğretmeninizin adı — Nermin Hoca
# yazdım", "Відповідь на секретне питання «дівоче прізвище матері» — Шевчук", "Pour la question
# secrète « ville natale » j'ai mis Brest": the answer follows the last separator (a dash, a colon,
# a closing quote or bracket) in the question's sentence, where the question's topic stands
# between its name and that separator, or someone says they put it ("… — I put Desmond"). A
# heading ("Security questions: Honestly, I hate them", "秘密の質問：忘れました"), a menu's path
# ("Settings » Security question » Edit") and a status ("(optional) — Skipped") give none; nor
# does a question, the topic itself ("security question: first pet") or a word of the sentence.
_QUESTION_NAME = re.compile(r"(?i)\b(?:security|secret)\s+(?:questions?|qs?)\b|(?<!\w)" + _QUESTION_NAMES)
_SEPARATOR = re.compile(r"\s*(?:[—–»”)]|(?<!\d):(?!\d))\s*|\s+-\s+|(?<=\w)['’\"],?\s+")
_ASKS_OR_TELLS = re.compile(
    r"(?i)(?:what|which|who|where|when|how|why|do|does|did|is|are|was|were|can|could|should|will|would|now|about|"
    r"the|a|an|my|your|his|her|their|our|it|its|this|that|these|those|they|i|we|you|not|no|yes|also|just|still|"
    r"then|so|and|but|or|if|all|one|same|none|nothing|n/a|anyone|everyone|someone|nobody|people|"
    r"qu\w+|comment|où|wie|was|wo|welche\w*|cuál|cual|qué|"
    r"dónde|donde|quale|come|dove|qual|como|onde|le|la|les|un|une|der|die|das|ein|eine|el|los|las|il|lo|gli|"
    r"o|os|as|um|uma)(?!\w)")
_SEPARATED_ANSWER_WORDS = 4
_A_CONTRACTION = re.compile(r"(?i)\w+['’](?:ll|re|ve|d|m)\b")
# "… — Nermin Hoca yazdım", "… — Барон, я написал": who wrote it down, after the answer.
_WROTE = re.compile(r"(?i)\b(?:yazdım|yazdim|написал[аи]?|eingetragen|geschrieben|ingevuld|opgeschreven|skrev|"
                    r"wrote|typed|put)\b")# What every name of _QUESTION_NAME written in ASCII holds.
_QUESTION_HINTS = ("security", "secret", "question", "pregunta", "domand", "pergunta", "pytani", "frage", "vraag",
                   "sikkerh", "turvakysymy", "guvenlik", "pertanyaan")
# What a note on a security question says of it rather than answering it.
_A_STATUS = re.compile(r"(?i)(?:skipped|skip|done|updated|update|fixed|set|changed|change|reset|removed|deleted|"
                       r"forgot|forgotten|remind|reminder|pending|optional|none|unknown|todo|tbd|edit|later|"
                       r"see|mentioned|contains|overrated|deprecated|honestly|thanks|thank)(?!\w)")
_AN_OPINION = re.compile(r"(?i)\s+(?:are|were|is|was|seem|seems|sound|sounds|look|looks|suck|sucks|feel|feels)\b")


def _a_short_answer(text: str, start: int, end: int) -> bool:
    """Whether what runs from `start` to the sentence's end is an answer, not a remark: two words
    (three with "wrote" after them: "Nermin Hoca yazdım"), or six letters of a script written
    without spaces ("招商银行说明天回电" is a sentence)."""
    clause = text[start:end].strip(" \t.,;:!?")
    if _WRITTEN_WITHOUT_SPACES.search(clause) and " " not in clause:
        return len(clause) <= 6
    return len(clause.split()) <= 2 + bool(_WROTE.search(clause))


def _answers_after_a_question_name(text: str) -> list[Finding]:
    if text.isascii():  # (most messages: a substring check first, as the pattern costs ~8 µs a message)
        lowered = text.lower()
        if not any(hint in lowered for hint in _QUESTION_HINTS):
            return []
    findings = []
    for name in _QUESTION_NAME.finditer(text):
        broken = _SENTENCE_BREAK.search(text, name.end(), name.end() + 200)
        end = broken.start() if broken else min(len(text), name.end() + 200)
        if broken is not None and broken.group() == "?":
            continue  # "security question: what was your first car?" asks it
        separators = list(_SEPARATOR.finditer(text, name.end(), end))
        if not separators or _AN_OPINION.match(text, name.end(), separators[0].start()):
            continue  # ("security questions are dumb: anyone can find my first school")
        start = separators[-1].end()
        topic = text[name.end():separators[-1].start()].strip(" \t,.:;()[]«»\"'“”‘’—–-")
        put = _PUT.match(text, start)
        if put is None and (len(topic.split()) < 2 if " " in topic or topic.isascii() else len(topic) < 4):
            continue  # no topic between the name and the answer, and nobody says they put it
        if put is not None:
            start = put.end()
        if _QUESTION_TOPIC.match(text, start) or _ASKS_OR_TELLS.match(text, start) or _A_STATUS.match(text, start) \
                or _A_CONTRACTION.match(text, start):
            continue
        if put is None and not _a_short_answer(text, start, end):
            continue  # "(first pet) — Barclays wants both", "…: Mads fra support ringer i morgen": a remark
        answer_end = start
        for count, word in enumerate(_ANSWER_WORD.finditer(text, start, end)):
            if count >= _SEPARATED_ANSWER_WORDS or count and (word[0].lower() in _ANSWER_ENDS
                                                                or text[answer_end:word.start()].strip()):
                break  # (a comma or a bracket after the answer ends it)
            answer_end = word.end()
        if answer_end > start:
            findings.append(Finding("security_answer", start, answer_end))
    return findings


# --- a value described by what one does with it ---------------------------------------------------
# "what i type when paypal asks me to confirm it's me is Chutney*Fox55", "the word i use to lock the
# diary is pistachio", "the thing the bank texted me just now is 583920": no credential is named;
# the clause says the value is typed in, unlocks or was sent to sign in. (Not "what i use for
# running is Brooks Ghost", nor "the thing i need to buy is flour".)
_DESCRIBED_BY_USE = re.compile(
    r"(?i)\b(?:what|(?:the\s+)?(?:thing|word|words|number|digits|code|bit|letters))\s+"
    r"(?:(?:i|we|you)\s+(?:(?:need|have|got)\s+to\s+|always\s+|usually\s+)?"
    # typed in where one signs in or a door opens ("what i type when paypal asks me to confirm
    # it's me", "each time i ssh into the pi", "into the card reader")
    r"(?:(?:type|enter|punch|key|tap)\b(?=[^.!?\n]{0,60}?\b(?:log\s*in|sign\s*in|logon|unlock|ssh|vpn|confirm|"
    r"verify|asks?|prompts?|portal|account|reader|keypad|door|gate|alarm|lift|turnstile|kiosk|laptop|phone|"
    r"tablet|computer|wifi|router|safe|lock)\b)|use\s+to\s+(?:unlock|lock(?!\s+(?:in|up|down|out)\b)|log\s*in|sign\s*in))|"
    # ... or sent by who asks for it back
    r"(?:the\s+|my\s+)?(?:\w+\s+)?(?:bank|app|site|website|service|provider|paypal|council|gov\w*|hmrc|dvla|nhs|"
    r"amazon|apple|google|microsoft|whatsapp|telegram|signal|company|insurer|courier)(?:['’]s\s+\w+)?\s+"
    r"(?:texted|sent|emailed|messaged)\s+(?:me|us))\b"
    r"[^.!?\n]{0,80}?\s(?:is|was)\s+(?=\S)")
_DESCRIBED_VALUE_ENDS = frozenset("and but so because with which lol haha".split())


def _described_by_use(text: str) -> list[Finding]:
    findings = []
    for described in _DESCRIBED_BY_USE.finditer(text):
        word = _ANSWER_WORD.match(text, described.end())
        if word is None:
            continue
        value, after = word[0], text[word.end():word.end() + 12].split()
        ends = not after or text[word.end():word.end() + 1] in ",.;:!?()" or after[0].lower() in _DESCRIBED_VALUE_ENDS
        sent = re.search(r"(?i)texted|sent|emailed|messaged", described[0]) is not None
        # A value shaped like one, or a plain word ending the clause; what was sent is a code of
        # digits alone ("is 583920", not "is 1950s wedding photos").
        if (value.isdigit() and 4 <= len(value) <= 8 and ends if sent else credential_shaped(value, previous="is") or (
                ends and value.isalpha() and len(value) >= 4 and value.lower() not in _PRONOUNS | _FILLERS)):
            findings.append(Finding("one_time_code" if sent else "password", word.start(), word.end()))
    return findings


# A dial's combination read as turns: "left to twenty two, right to nine, left to thirty", "R 36
# L 12 R 4", "22 right, 9 left, 30 right": two turns or more, where the text names a lock with a
# dial; directions on a road ("left on 5th") turn to no number.
_TURN = (r"(?:left|right|l|r|clockwise|anti-?clockwise|counter-?clockwise|cw|ccw|izquierda|derecha|links|rechts|"
         r"gauche|droite|sinistra|destra)")
_DIAL_NUMBER = (r"(?:\d{1,2}(?![\w/:.]\d)(?!\w)|(?:" + "|".join(sorted(_TENS_AND_TEENS)) + r")(?:[\s-]+(?:"
                + "|".join(word for word in NUMBER_WORDS if word.isascii() and len(word) > 2) + r"))?(?![\w-])|(?:"
                + "|".join(word for word in NUMBER_WORDS if word.isascii() and len(word) > 2) + r")(?![\w-]))")
_DIAL_STEP = (r"(?:" + _TURN + r"\b(?:\s+(?:\w+\s+)?(?:to|past)\b)?\s*" + _DIAL_NUMBER
              + r"(?:\s+(?:to|past)\s+" + _DIAL_NUMBER + r")?|" + _DIAL_NUMBER + r"\s+(?:to\s+the\s+)?" + _TURN + r"\b)")
_A_TURN = re.compile(r"(?i)(?<![\w-])" + _TURN + r"\b")
_DIAL = re.compile(r"(?i)(?<![\w-])" + _DIAL_STEP + r"(?:[\s,;]+(?:(?:and\s+)?then\s+|and\s+)?" + _DIAL_STEP + r"){1,5}")
# A lock that has a dial, named as a thing: not "the safe route", "lock the door", a dance's
# "combination", a boxing "combo", an oven's or a washing machine's dial.
_DIAL_LOCK = re.compile(
    r"(?i)\b(?:padlocks?|lockers?|masterlock|(?:combination|combo|bike|gym|luggage|suitcase|school|dial)\s+locks?|"
    r"dial\s+(?:combination|combo)|(?:combination|combo)\s+(?:to|for|of)\s+(?:my|the|our|his|her)\s+"
    r"(?:locker|safe|padlock|lock)|"
    r"locks?['’]?s?\s+(?:combination|combo|dial)|safes?['’]?s?\s+(?:combination|combo|dial|code)|"
    r"(?:the|my|our|his|her|their|a|gun|office|wall|hotel|floor|home|shop|dad['’]s|mum['’]s|mom['’]s)\s+safe"
    r"(?![\w-]|\s+(?:route|volume|place|side|bet|way|word|space|distance|speed|level|zone|stretch|tyres?|pressures?|"
    r"for|to|with|and|enough|here|there|now)\b)|tresor|kombination|combinaci[oó]n|combinaison|combinazione|cadenas|"
    r"candado|lucchetto|kluis|sejf)")


_DIAL_HINTS = ("lock", "safe", "combin", "kombin", "combo", "tresor", "cadenas", "candado", "lucchetto", "kluis", "sejf")


def _dial_combination(text: str) -> list[Finding]:
    """Two turns or more, in a message that names a lock with a dial."""
    findings = []
    lowered = text.lower()
    # (a substring first: the pattern costs 7 µs a message, and most name no lock)
    if not any(hint in lowered for hint in _DIAL_HINTS) or not _DIAL_LOCK.search(text):
        return findings
    for dial in _DIAL.finditer(text):
        if len(_A_TURN.findall(dial[0])) >= 2:
            findings.append(Finding("access_code", dial.start(), dial.end()))
    return findings


# A file, an archive or a sheet protected by a value: "the zip's protected with Figaro1786", "the
# payroll pdf is locked with Q3budget$". Only a file (not "the pc is protected by Norton360", "the
# shelf is secured with M10x50 bolts"), and only a value with a password's mixed case or symbol
# (not "encrypted using 7zip", "luks2", a standard's name).
_PROTECTED_WITH = re.compile(r"(?i)\b(?:password[\s-]*)?(?:protected|locked|encrypted|secured)\s+(?:with|by|using)"
                             r"\s*:?\s+(?:the\s+(?:password|passphrase|pin|code)\s+)?(?=\S)")
_A_FILE = re.compile(r"(?i)\b(?:zip|file|pdf|archive|rar|7z|sheet|spreadsheet|workbook|excel|document|doc|docx|"
                     r"folder|attachment|backup|export|usb|drive|volume|container|keystore|wallet)s?\b")
_VALUE_IN_QUOTES = re.compile(r"[\"'“‘]([^\s\"'”’]{4,64})[\"'”’]|[^\s,;()\"“”]+")


def _protected_with(text: str) -> list[Finding]:
    findings = []
    for protected in _PROTECTED_WITH.finditer(text):
        clause = re.split(r"[.!?;\n]", text[max(0, protected.start() - 80):protected.start()])[-1]
        if not _A_FILE.search(clause):
            continue
        word = _VALUE_IN_QUOTES.match(text, protected.end())
        if word is None:
            continue
        start = word.start(1) if word.group(1) else word.start()
        value = (word.group(1) or word.group()).rstrip(".,!?'’")
        shape = _shape(value, "is")
        if shape in ("strong", "strong_symbol", "random", "random_mixed") or shape == "mixed" and (
                len(value) >= 7 or not _SYMBOLS.isdisjoint(value)):
            findings.append(Finding("password", start, start + len(value)))
    return findings


# A value one is told to try on what it opens: "try Figaro1786 on the zip file", "enter 4471 at
# the side gate", "use Kestrel!9 for the vpn". Digits alone only on a lock ("use 2024 for the file
# name" names a year); never a standard's name ("use WD40 on the lock", "try 5G on the phone").
_LOCKS = r"door|gate|safe|lock|padlock|locker|keypad|alarm|phone|intercom|garage|shed"
_A_LOCK = re.compile(_LOCKS, re.I)
_TRIED_ON = re.compile(
    r"(?i)\b(?:try|use|enter|type|put\s+in|punch\s+in|key\s+in)\s+(?P<value>[^\s,;:()\"“”]+?)[.!?]?\s+"
    r"(?:on|for|in|into|at|to\s+(?:open|unlock|get\s+into))\s+(?:the|my|your|our|his|her|their|that|this)\s+"
    r"(?:[\w-]+\s+){0,2}?(?P<thing>zip|file|pdf|archive|rar|7z|workbook|document|login|account|"
    r"wifi|wi-fi|router|admin|site|website|portal|vpn|vault|" + _LOCKS + r")s?\b")


def _tried_on(text: str) -> list[Finding]:
    findings = []
    for tried in _TRIED_ON.finditer(text):
        value = tried["value"]
        if value.isdigit():
            if 4 <= len(value) <= 8 and _A_LOCK.fullmatch(tried["thing"]):
                findings.append(Finding("access_code", tried.start("value"), tried.end("value")))
            continue
        # (what a device is, or runs: "use iOS17 on the phone", "try Python3 on the laptop")
        if _A_LOCK.fullmatch(tried["thing"]) and tried["thing"].lower() != "safe":
            continue
        if _shape(value, "is") in ("strong", "strong_symbol", "random", "random_mixed"):
            findings.append(Finding("password", tried.start("value"), tried.end("value")))
    return findings


# --- a key drawn for the word: "🔑 amazon: RedKayak#77", "wifi 🔐 Seashell_44" -----------------
# The value right after the key (or after one label and a colon), shaped like a password: a key
# also heads notes and lists ("🔑 takeaways from today: …", "🔑 Locksmith: Tuesday 0930").
_KEY_DRAWN = re.compile(r"[\U0001F511\U0001F510\U0001F5DD]\ufe0f?[ \t]*(?:(?P<label>[\w.-]{1,30})[ \t]*[:=→>-]+[ \t]*)?"
                        r"(?P<value>[^\s\U0001F511\U0001F510\U0001F5DD]+)")
# Labels of what is looked up, not what opens: "🔑 Booking: HX7732K", "🔑 Room: 4B12".
_LOOKED_UP = frozenset("booking order flight room ticket model sku tracking ref reference id meeting case invoice "
                       "seat gate table part serial item".split())


def _key_drawn(text: str) -> list[Finding]:
    if "\U0001F511" not in text and "\U0001F510" not in text and "\U0001F5DD" not in text:
        return []
    findings = []
    for drawn in _KEY_DRAWN.finditer(text):
        value = drawn["value"].rstrip(_EDGE_PUNCTUATION) or drawn["value"]
        if (drawn["label"] or "").lower() in _LOOKED_UP:
            continue
        if _shape(value, ":") in ("strong", "strong_symbol", "random", "random_mixed"):
            findings.append(Finding("password", drawn.start("value"), drawn.start("value") + len(value)))
    return findings


# --- a value worked out from a recipe: "… plus the year we moved, so Juniper2019!" -------------
# A credential named, then how it is built ("my dad's birth year backwards", "the cat's name plus a
# bang"), then the result after a word of conclusion, in the common languages. The result must
# be shaped like a value (a year counts: it is assigned) and must end its clause: "so Summer2024!
# would fail" is an example, not the value.
_CONCLUSION = re.compile(
    r"(?i)(?:^|[\s,;(])(?:so|thus|therefore|hence|which\s+(?:gives|makes)(?:\s+it)?|i\.e\.|meaning|"
    r"donc|alors|also|quindi|dunque|así\s+que|asi\s+que|entonces|então|entao|portanto|dus|więc|wiec)"
    r"[\s,:]+(?:(?:it['’]?s|it\s+is|that['’]?s|that\s+is|c['’]est|es|ist|è|é|is)\s+)?"
    r"(?P<value>[^\s,;()\"“”]+)")
# The value ends its clause: punctuation, a bracket, a dash or the end after it ("so 1407. Not
# their years", "so Juniper2019!"); "so 1900 sharp", "so 2025 planning can start" are no values.
_NEXT_SENTENCE = re.compile(r"\s*(?:$|\n|[A-Z])")
# (also what ends a corrected value's clause: "… it's 1934 hash", "2580 oops, 1530 is when …" is none)
_CLAUSE_ENDS = re.compile(r"(?i)[.,;:!?()#*\"“”]|\s*$|\s*\n|\s+\(|\s+[—–-]\s|"
                          r"\s+(?:if|in\s+case|btw|lol|haha|hash|pound|star|then|and|not|sorry)\b")
_CONCLUSION_KINDS = frozenset({"password", "pin", "access_code", "code", "one_time_code", "pass"})
_CONCLUSION_REACH = 240
_LOGIN_NOUN = re.compile(r"(?i)\blog-?(?:in|on)\s+(?:is|was|=)")
# How a value is built: from names, dates and numbers, in order, with something added.
_RECIPE = re.compile(r"(?i)\b(?:plus|backwards?|reversed|twice|doubled|followed\s+by|then|name|year|birthday|birth|"
                     r"born|initials?|letters?|digits|numbers?|stuck\s+together|together|joined|dates?|days?|"
                     r"anniversary|capital|and\s+the|with\s+(?:a|an|the))\b|[+&]")
_OTHER_ABOUT = frozenset("expires expired expiry policy policies seats seat changed change rules rule "
                         "length".split())


def _concluded(text: str, names: list[tuple[str, int, int]]) -> list[Finding]:
    # ("the laptop login is the cat's name plus …": a login named as what one types)
    logins = {("password", m.start(), m.end()) for m in _LOGIN_NOUN.finditer(text)} if "log" in text.lower() else set()
    named = []
    for kind, name_start, name_end in sorted([*names, *logins], key=lambda name: name[2]):
        if kind not in _CONCLUSION_KINDS:
            continue
        following = _WORD.match(text, name_end + 1) if text[name_end:name_end + 1] == " " else None
        if following is not None and following[0].lower() in _DESCRIBED | _PROCESS | _PROCESS_OF | _OTHER_ABOUT:
            continue  # "password manager", "code policy", "password expires": no value to work out
        named.append((name_end, kind, (kind, name_start, name_end) in logins))
    if not named:
        return []
    ends = [name_end for name_end, _, _ in named]
    findings = []
    # Each conclusion is the nearest name's before it (one pass: a text dense with names and
    # conclusions read every conclusion again for every name near it).
    for conclusion in _CONCLUSION.finditer(text, named[0][0]):
        nearest = bisect.bisect_right(ends, conclusion.start()) - 1
        if nearest < 0 or conclusion.start() - ends[nearest] > _CONCLUSION_REACH:
            continue
        name_end, kind, login = named[nearest]
        if not _RECIPE.search(text, name_end, conclusion.start()):
            continue  # how the value is built stands between its name and the result
        token = conclusion["value"]
        value = token.rstrip(".?:") or token
        if not (token[-1] in ".?:" or _CLAUSE_ENDS.match(text, conclusion.end("value"))
                or token[-1] == "!" and _NEXT_SENTENCE.match(text, conclusion.end("value"))):
            continue
        digits_only = value.isdigit()
        if kind in ("code", "access_code", "pin") and not digits_only or login and digits_only:
            continue  # a code's value is digits; a login's a password ("login is at 9 so 0900 sharp")
        bare = value.rstrip("!") or value  # ("that's so stunning!" is a word and an exclamation)
        if credential_shaped(bare, previous=":") and (digits_only or _shape(bare, ":") is not None):
            findings.append(Finding(_reported(kind), conclusion.start("value"), conclusion.start("value") + len(value)))
    return findings


# --- any value, scored: its shape, and the words around it --------------------------------------

# Presidio's recognisers give a pattern match a base score and raise it when context words stand
# near it; detect-secrets flags a string by its entropy and by a keyword next to it. Here every
# value-shaped token (or digit run: "22 14 36", "two eight eight one") gets the score of its
# shape, plus what surrounds it in its sentence, and is a credential at THRESHOLD or above:
# a PIN-shaped number needs a credential word or an access cue ("use 8841 to unlock the
# tablet", "4821 gets me into the bank app", "the keypad takes 2291"); a random-looking string
# of letters in both cases and digits is one on its own ("keep this: q8ZtW2mR7xKp4LvN9sYb").
# The described forms above (a credential word, "is", then its value) stay as they are: they
# read plain-word passphrases and spelt values this score cannot judge.
SHAPE_SCORE = {
    "digits": 0.4,          # 4821, 0-4-9-1, 22 14 36
    "mixed": 0.5,           # Harbor7, 4B719, Gr8Sc0tt
    "strong": 0.7,          # 8+ long, both cases and a digit: Tr0mbone!Sunset42, Wolke7Blau
    # ... and a symbol inside it that user names, files, versions and formulas seldom hold, as
    # password rules demand one: quartzPelican!7 ("Dark_Knight99", "iPhone15+", "x+=Delta2" are
    # none); as "strong", it needs a cue
    "strong_symbol": 0.7,
    "random": 0.7,          # 16+ long, letters and digits, entropy of 3 bits or more (a hex token)
    "random_mixed": 0.9,    # 20+ long, both cases and digits, entropy of 4 bits or more
    # digits keyed in with the keypad's own keys: 2580#, 1357*, 7#2#8 (a hash or a star first
    # is a phone's menu or a room: *100#, #302); a lock or a door in the message makes it a code
    "keypad": 0.5,
}
CONTEXT_SCORE = {
    "credential_word": 0.5,  # a word naming a credential in the same sentence, near the value
    "access": 0.5,           # "unlocks", "to log in", "gets me into", "keypad", "entsperrt"
    "carried": 0.5,          # the sender's previous message named a credential (the value opens this one)
    "keep": 0.2,             # "keep this", "hold onto", "stash", "remember": asked to be kept
    "identity": 0.3,         # an e-mail address beside it: "marta.l@mail.com / Biscuit_Tin9" is a login
    "counted": -0.6,         # "after 1000 requests", "room 4417", "2500 steps": a number of the sentence
    # a site or an app one signs into, beside a value with a password's symbol: "is quartzPelican!7
    # decent? it's what i use on my main email"
    "account": 0.2,
    # ... unless the value is named as a name: "my IGN on the app is Sn!per2000"
    "a_name": -0.6,
}
THRESHOLD = 0.9
# Presidio's context window is five words; a value shaped like a password is judged by its
# whole sentence ("das Kennwort ... steht nicht mehr auf dem Zettel, es ist jetzt Wolke7Blau").
_CONTEXT_REACH = 5
_SENTENCE_REACH = 25
# ("keep this", "kept safe": not "can you keep Precision1 in", which is a contact lens)
_KEEP = re.compile(r"(?i)\b(?:keep\s+(?:this|that|it|these|those|safe|hold\s+of)|kept\s+(?:safe|secret)|hold\s+onto|"
                   r"hang\s+on\s+to|stash|safekeeping|remember|memori[sz]e|"
                   r"save|store|write\s+(?:it|this|that)?\s*down|note\s+(?:it|this|that)?\s*down|jot)\b")
_VERSION = re.compile(r"^v?\d+(?:\.\d+){1,3}[a-z]?$", re.I)
_DECIMAL = re.compile(r"^[-+]?\d*[.,]\d+$")
_TIME_RANGE = re.compile(r"^(\d{1,2}):?(\d{2})-(\d{1,2}):?(\d{2})$")
_PHONE = re.compile(r"^\+?\(?\d{1,4}\)?(?:[-. ]\d{2,4}){2,4}$")


def _is_phone(value: str) -> bool:
    return bool(_PHONE.match(value)) and sum(c.isdigit() for c in value) >= 9


_PATH = re.compile(r"^(?:~|\.{1,2})?/[\w.@-]+(?:/[\w.@-]*)+$")
# What names a resource rather than unlocking one: a cloud resource's name
# ("arn:aws:iam::123456789012:role/deploy", "urn:isbn:…"), a package at a version
# ("actions/checkout@v4", "aws-actions/configure-aws-credentials@v4"), an API's group and version
# ("external-secrets.io/v1beta1").
_RESOURCE_NAME = re.compile(r"(?i)^(?:arn:[\w-]+:[\w-]*:[\w-]*:\d*:|urn:[\w-]+:)[^\s;=,]+$"
                            r"|^[\w.-]+/[\w./-]+@(?:v\d+(?:\.\d+)*|\d+(?:\.\d+)+)$"
                            r"|^[\w-]+(?:\.[\w-]+)+/v\d+(?:(?:alpha|beta)\d*)?$")
# What names or describes a thing rather than unlocking one: a digest labelled by its algorithm
# (an image's "sha256:1f3a…", a key's fingerprint "SHA256:5PYV…", a lock file's "sha512-…"), a
# file's name ("Win11_23H2_x64.iso", "dist/app.tar.gz"), a key combination ("Ctrl+Alt+Del"), a
# token's prefix alone ("sk_live_", "lr_test_"), a setting's name left empty ("SENTRY_DSN=").
_DIGEST_ALGORITHM = r"sha(?:1|224|256|384|512)|sha3-(?:224|256|384|512)|md5"
_DIGEST = re.compile(r"(?i)^(?P<algorithm>" + _DIGEST_ALGORITHM + r")[:-](?P<body>[A-Za-z0-9+/=_-]{16,})$")
# How long each algorithm's digest is, in bytes: printed in hex, or in base64 with or without
# its padding. A body of another length is not that digest ("sha256:Sunflower2024abc").
_DIGEST_BYTES = {"md5": 16, "sha1": 20, "sha224": 28, "sha256": 32, "sha384": 48, "sha512": 64}


def digest_sized(algorithm: str, body: str) -> bool:
    """Whether `body` has the length of `algorithm`'s digest, in hex or in base64."""
    size = _DIGEST_BYTES.get(algorithm.lower().replace("sha3-", "sha"))
    if size is None:
        return False
    if re.fullmatch(r"[0-9a-fA-F]+", body) and len(body) == 2 * size:
        return True
    return abs(len(body.rstrip("=")) - math.ceil(size * 4 / 3)) <= 1  # (a character lost in copying)


def _a_digest(value: str) -> bool:
    match = _DIGEST.match(value)
    return match is not None and digest_sized(match["algorithm"], match["body"])
_NAMED_FILE = re.compile(r"(?i)^[\w.~/-]*\w\.(?:iso|img|zip|tar|gz|tgz|bz2|xz|7z|rar|dmg|exe|msi|deb|rpm|apk|jar|whl|"
                         r"pdf|docx?|xlsx?|pptx?|csv|tsv|json|ya?ml|toml|ini|cfg|conf|txt|md|log|py|js|ts|go|rs|java|"
                         r"rb|php|sh|ps1|bat|html?|css|png|jpe?g|gif|svg|webp|mp3|mp4|mov|avi|mkv|wav|flac|sql|bak|"
                         r"pem|crt|cer|pub|der|p12|pfx|kdbx|ovpn)$")
_KEY_NAME = (r"(?:ctrl|control|alt|altgr|option|opt|shift|cmd|command|win|super|meta|fn|del|delete|esc|escape|tab|"
             r"enter|return|space|backspace|home|end|insert|ins|pgup|pgdn|pageup|pagedown|up|down|left|right|"
             r"prtsc|printscreen|f\d{1,2}|[a-z0-9]|[^\w\s])")
_KEY_COMBINATION = re.compile(r"(?i)^(?:ctrl|control|alt|altgr|option|opt|shift|cmd|command|win|super|meta|fn)"
                              r"(?:\+" + _KEY_NAME + r")+$")
# A provider's prefix: a short word, or a word and an environment ("sk_live_", "whsec_", "xoxb-").
_PREFIX_ALONE = re.compile(r"^[a-z]{2,6}[_-](?:(?:live|test|prod|dev|sandbox)[_-])?$")
_NAME_LEFT_EMPTY = re.compile(r"^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+)=$")
_NAMES_A_THING = (_KEY_COMBINATION, _PREFIX_ALONE, _NAME_LEFT_EMPTY)
_A_WORD_IN_IT = re.compile(r"[A-Za-z]{3}")


def _a_files_name(value: str) -> bool:
    """Whether `value` is a file's name (or path) with a common extension, its name holding a word
    ("Win11_23H2_English_x64v2.iso", "dist/app.tar.gz"; not "Ab9x/Qz7.pem")."""
    folders, _, name = value.rpartition("/")
    return bool(_NAMED_FILE.match(value)) and bool(_A_WORD_IN_IT.search(name.partition(".")[0])) and not any(
        _shape(folder, "") in ("random", "random_mixed", "strong", "strong_symbol") for folder in folders.split("/"))
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+\.[\w.]+$")
_ADDRESS = re.compile(r"@[\w-]+\.|://|^www\.", re.I)
_SENTENCE_END = (".", "!", "?", ";")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


# A number with its unit glued on ("212cm", "2.5kg", "500ml", "16GB", "1080px"): a measurement.
# (Units of two letters or more: "2580w" or "4821m" may as well be a code.)
_MEASURE = re.compile(r"(?i)^\d+(?:[.,]\d+)?(?:mm|cm|km|mg|kg|lbs?|oz|ml|cl|dl|kb|mb|gb|tb|kbps|mbps|gbps|"
                      r"hz|khz|mhz|ghz|kw|kwh|mah|px|pt|ft|yd|mph|kph|rpm|ms|hrs?|mins?|secs?|yo|°c|°f)$")


def _shape(value: str, previous: str) -> str | None:
    if not credential_shaped(value, previous=previous) or _VERSION.match(value) or _DECIMAL.match(value):
        return None
    if (media := _MEDIA_DATA.match(value)) and _inlined_media(value[media.end():]):
        return None  # "data:image/png;base64,iVBOR…": a picture or a sound inlined, not a secret
    if _MEASURE.match(value):
        return None
    named = value.rstrip(":;,")  # ("keys from /.well-known/jwks.json:")
    if _PATH.match(named) or _RESOURCE_NAME.match(value):
        return None  # a file's path says where something is kept, not what it is
    if any(pattern.match(named) for pattern in _NAMES_A_THING) or _a_files_name(named) or _a_digest(named):
        return None
    if _ADDRESS.search(value):
        return None  # an e-mail address or a link is a way to reach someone, not a secret
    if _is_phone(value):
        return None  # "1-800-555-0199": a number to call
    times = _TIME_RANGE.match(value)
    if times and all(int(h) < 24 and int(m) < 60 for h, m in (times.groups()[:2], times.groups()[2:])):
        return None  # opening hours, "0930-1730"
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if len(value) >= 16 and _decoded(value) is not None:
        return None  # base64 of readable text: _hidden reads what it says
    groups = value.split("-")
    if len(groups) == 3 and _GROUPED.match(value) and len({len(g) for g in groups}) == 1 \
            and sum(any(c.isdigit() for c in g) and any(c.isalpha() for c in g) for g in groups) >= 2:
        return "random"  # "8F3K-22QP-91MZ": a router's key, a gift card's code, letters and digits in groups
    if len(groups) >= 4 and _GROUPED.match(value) and len({len(g) for g in groups}) == 1:
        # Four groups or more of one length: how vendors print licence, product and recovery
        # keys ("3HY3X-3GDRR-VJFT8-K48BR-V3VK6", "QUGN-SXVE-SIKR-XWDW"); groups of five with
        # letters and digits, a key whatever surrounds it; others (an IPv6 literal's groups of
        # four, a part number) only when named.
        return "random_mixed" if digits and letters and len(groups[0]) >= 5 else "random"
    if not digits and all(c.isalpha() or c in "-'’." for c in value):
        return None  # "EC-Karte", "McAllister": words, however capitalised (the described forms read those)
    upper, lower = any(c.isupper() for c in value), any(c.islower() for c in value)
    if len(value) >= 20 and upper and lower and digits and _entropy(value) >= 4.0:
        return "random_mixed"
    if len(value) >= 16 and letters and digits and _entropy(value) >= 3.0:
        return "random"
    if len(value) >= 8 and upper and lower and digits:
        return "strong_symbol" if _SYMBOL_INSIDE.search(value) and not _FILE_NAME.search(value) else "strong"
    return "mixed" if letters else "digits"


# An ISO 8601 date and time, as logs and APIs print it ("2024-06-12T08:15:02.114Z").
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?")
# JSON written without spaces is one token: it is parsed, and every member and element read.
# A member naming an identifier: what it holds names a record, a key or a request, not a secret
# (not a session's, an auth's, a reset link's or an invitation's: those open something).
_CAPABILITY = (r"(?:session|sess|sid|cookie|auth|bearer|jwt|csrf|xsrf|sso|token|secret|reset|magic|invite|"
               r"invitation|share|pairing|unlock|access|login|verification|verify|recovery|duress)")
_IDENTIFIER_KEY = re.compile(r"^(?:(?i:id|kid|uuid|guid)|(?!" + _CAPABILITY + r"_)[a-z]+_id"
                             r"|(?!" + _CAPABILITY + r"Id)[a-z]+Id)$")
_JSON_LENGTH = 4096
# An identifier is short: a long random one under "id" may be a session's ('"session":{"id":"s3Kq…"}').
_IDENTIFIER_LENGTH = 16
_CAPABILITY_WORD = re.compile(r"(?i)" + _CAPABILITY)


def _json_of_no_secret(text: str, start: int, end: int) -> bool:
    """Whether the token around text[start:end] (from space to space) is JSON written without
    spaces that gives no secret: no member is named for a credential or holds another's value
    ("Value"), whatever it holds, and no string in it, in a member or in an array, is shaped as
    a key, unless it is an identifier's under a parent named for nothing secret, or a moment:
    '{"data":[{"id":"key_01HZ","prefix":"lr_live_","last_four":"9x2Q"}]}' lists keys without
    giving one. Code that merely holds some JSON ('login("ann","Summer2024x",opts={…})') is none."""
    while start > 0 and not text[start - 1].isspace() and end - start < _JSON_LENGTH:
        start -= 1
    while end < len(text) and not text[end].isspace() and end - start < _JSON_LENGTH:
        end += 1
    token = text[start:end].rstrip(",;.")
    if token[:1] not in "{[" or '":' not in token:
        return False
    try:
        return _gives_no_secret(json.loads(token), parent="")
    except (ValueError, RecursionError):  # (not JSON; or nested past what is read: judged as a token)
        return False


def _gives_no_secret(node, *, parent: str, key: str = "") -> bool:
    if isinstance(node, dict):
        # (a holder's string is what a member beside it names: '"Name":"…","Value":"tiger2024"')
        return all(not credential_words(_spaced(name)) and not (_HOLDER.fullmatch(name) and isinstance(value, str))
                   and _gives_no_secret(value, parent=key, key=name) for name, value in node.items())
    if isinstance(node, list):
        return all(_gives_no_secret(item, parent=parent, key=key) for item in node)
    if not isinstance(node, str) or not node or refers_elsewhere(node):
        return True
    if _ends_with_credential_word(_spaced(node)):
        return False  # ('"Name":"/prod/db/password"': what is beside it is that password)
    if TIMESTAMP.fullmatch(node) or _IDENTIFIER_KEY.match(key) and len(node) <= _IDENTIFIER_LENGTH \
            and not credential_words(_spaced(parent)) and not _CAPABILITY_WORD.search(parent):
        return True
    return _shape(node, "") not in ("random", "random_mixed", "strong", "strong_symbol")


# An element of markup read as one token once its brackets are stripped: "id>nexus-releases</id",
# a tag alone ("/server", "server" of "<server>").
_ELEMENT = re.compile(r"([A-Za-z][\w.:-]*)>([^<>]*)</\1")
_TAG = re.compile(r"/?[A-Za-z][\w.:-]*")
# A lookup with a fallback: the fallback, if it is a value, is _fallbacks' to judge.
_LOOKUP_WITH_FALLBACK = re.compile(r"\$\{([A-Za-z_][\w.-]{0,80}):")
_REFERENCES_IN_TOKEN = re.compile(_TEMPLATE + r"|(?:(?<=[/=:])|^)\$[A-Z_][A-Z0-9_]+")
_PATH_WORDS = re.compile(r"[/._:?=&#-]+")
_API_VERSION = re.compile(r"v\d{1,2}")


_MARKUP_REACH = 8192


def _a_tag_of_a_pair(text: str, start: int, token: str) -> bool:
    """Whether the tag <token> at text[start] is markup: closed later ("<server>" … "</server>"),
    or closing one opened before ("</server>" after "<server>"). A value in angle brackets alone
    ("<Xk9mP2qL7> that's the new wifi password") is no tag."""
    if token.startswith("/"):  # (within _MARKUP_REACH: many tags unclosed must not read the text again each)
        return text.rfind("<" + token[1:], max(0, start - _MARKUP_REACH), start) >= 0
    return text.find("</" + token + ">", start, start + _MARKUP_REACH) >= 0


def _markup_or_lookup(text: str, start: int, end: int) -> bool:
    """Whether the candidate text[start:end] is markup or a lookup rather than a value: a tag
    alone, an element holding a reference, a lookup with a fallback whose name names no
    credential, JSON that gives no secret (_json_of_no_secret), or a link or a path built of
    references and words ("${CI_API_V4_URL}/projects/${CI_PROJECT_ID}/packages"). (An element
    with a value of its own is an entry: _another_entrys_value.)"""
    token = text[start:end]
    if text[start - 1:start] == "<" and _TAG.fullmatch(token) and _a_tag_of_a_pair(text, start, token):
        return True
    if (element := _ELEMENT.fullmatch(token)) is not None and refers_elsewhere(element[2]):
        return True  # "<token>${env.REPO_TOKEN}</token>"
    if (lookup := _LOOKUP_WITH_FALLBACK.match(token)) and not credential_words(_spaced(lookup[1])):
        return True  # "${POSTGRES_USER:-app}"; not "${REDIS_PASSWORD:-redis2024}"
    if '":' in token and _json_of_no_secret(text, start, end):
        return True
    if "/" not in token or "$" not in token and "{" not in token:
        return False
    rest, references = _REFERENCES_IN_TOKEN.subn(" ", token)
    return references > 0 and all(piece.isalpha() or _API_VERSION.fullmatch(piece)
                                  for piece in _PATH_WORDS.split(rest.replace(" ", "/")) if piece)


# A line that is one entry of a configuration with its value: "size: 20Gi", "- image: postgres:16",
# "duration_seconds = 3600", '"kid": "0bb2…",', "<id>nexus-releases</id>".
_VALUED_ENTRY = re.compile(
    r"(?P<indent>[ \t]*)(?:-[ \t]+)?[\"']?(?P<key>[A-Za-z_][\w.-]*)[\"']?[ \t]*(?:=|:(?=[ \t]))"
    r"[ \t]*(?P<value>\S(?:.*\S)?)[ \t]*"
    r"|(?P<indent2>[ \t]*)<(?P<element>[A-Za-z][\w.:-]*)>(?P<content>[^<>\n]+)</(?P=element)>[ \t]*")
# Keys that hold what an entry beside or above them names ("- name: DB_PASSWORD\n  value: …",
# '"ParameterKey": "DBPassword", "ParameterValue": …', "<defaultValue>", "<arg>"): their value
# is that credential's.
_HOLDER = re.compile(r"(?i)(?:values?|val|data|contents?|text|string|raw|literal|secrets?|\w*[_.-]?value|default\w*"
                     r"|initial\w*|plain\w*|fallback|sample|example|arg\w*)")
# Keys whose number is a measure, never a PIN ("port: 6379", "duration_seconds = 3600")...
_MEASURE_KEYS = frozenset("size port ports timeout ttl duration seconds secs ms minutes retries retry replicas "
                          "workers threads count limit interval delay capacity quota memory mem storage disk".split())
# ... and with them, the keys that name what a setting is or where it points, never a secret
# ("image", "tag", "id"). Any other key beside a password may hold another one ("masterauth",
# "duress", "old", "backup").
_ATTRIBUTE_KEYS = _MEASURE_KEYS | frozenset("id name cpu cpus image tag version host hostname region zone level mode "
                                            "format output encoding charset locale timezone driver engine protocol "
                                            "scheme stage tier runtime".split())
_PIN_LENGTH = re.compile(r"\d{4,8}")
# A value that opens what follows rather than giving one: "{", "[", "&anchor", "!tag", "|", '""'.
_OPENS_A_BLOCK = re.compile(r"[{\[(|>]|[&!*]\S*|dict\(|\"\"|''")
_ENTRY_LENGTH = 300


@dataclass(frozen=True)
class _Entry:
    key: str
    key_start: int
    key_end: int
    value: str
    indent: int


def _entry_at(text: str, at: int) -> _Entry | None:
    """The entry of the configuration line holding text[at], if the line is one."""
    line_start = text.rfind("\n", max(0, at - _ENTRY_LENGTH), at) + 1
    line_end = text.find("\n", at, at + _ENTRY_LENGTH)
    if line_end < 0 and at + _ENTRY_LENGTH < len(text) or line_start == 0 and at > _ENTRY_LENGTH:
        return None  # (a long line is no entry: reading it whole for every value made long texts quadratic)
    entry = _VALUED_ENTRY.fullmatch(text, line_start, line_end if line_end >= 0 else len(text))
    if entry is None:
        return None
    key, value, indent = ("key", "value", "indent") if entry["key"] else ("element", "content", "indent2")
    return _Entry(entry[key], entry.start(key), entry.end(key), entry[value], len(entry[indent].expandtabs(4)))


_LINES_BETWEEN = 40


def _holds(text: str, outer: _Entry, inner: _Entry) -> bool:
    """Whether the entry `outer` is above `inner` in its block: less indented, before it, with no
    line between at its indentation or less. (Past _LINES_BETWEEN lines it is taken to hold it.)"""
    if outer.indent >= inner.indent or outer.key_start > inner.key_start:
        return False
    if inner.key_start - outer.key_start > _LINES_BETWEEN * _ENTRY_LENGTH:
        return True  # (not read: a long text's every value would read back over it)
    between = text[text.find("\n", outer.key_start) + 1:text.rfind("\n", 0, inner.key_start)].split("\n")
    if len(between) > _LINES_BETWEEN:
        return True
    return all(len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) > outer.indent
               for line in between if line.strip())


def _another_entrys_value(text: str, start: int, end: int, named: list[int]) -> bool:
    """Whether the value text[start:end] is the whole value of a configuration's entry of its own
    (a key that names no credential and holds nothing named beside it), while every credential's
    name near it (at `named`) is on the line of a sibling entry named for a credential, with a
    value of its own ("size: 20Gi" beside "userPasswordKey: password"): that name does not
    reach it. Only keys of _ATTRIBUTE_KEYS own their value so. A name above the entries
    ("password:" or "passwords = {" over "  prod: …", "[passwords]", "the admin password:"), a
    name given as a sibling's value ("- name: ADMIN_PASSWORD" over "  default: …"), or a key
    that only says something of a credential ("pin_length: 4", "token_type: bearer") still
    reaches them."""
    entry = _entry_at(text, start)
    token = text[start:end].strip("\"'`,;")
    if entry is None or token not in (entry.value.strip("\"'`,;"), f"{entry.key}>{entry.value}</{entry.key}"):
        return False
    last = _spaced(entry.key).split()[-1].lower()
    if last not in _ATTRIBUTE_KEYS or credential_words(_spaced(entry.key)):
        return False
    if _PIN_LENGTH.fullmatch(token) and last not in _MEASURE_KEYS:
        return False  # ("pin: 4417" beside "mode: 9921": four to eight digits may be another PIN)
    for at in named:
        sibling = _entry_at(text, at)
        if sibling is None or sibling.key_start == entry.key_start:
            return False
        value = sibling.value.strip()
        if _holds(text, sibling, entry) or not credential_words(_spaced(sibling.key)) \
                or _spaced(sibling.key).split()[-1].lower() in _ABOUT_ONE \
                or _OPENS_A_BLOCK.fullmatch(value) or " " in value and not refers_elsewhere(value):
            return False
    return bool(named)


_IS = frozenset("is are was were 's ’s sits lives stays steht liegt klebt est está esta è staat".split())
_PLACED = frozenset("on in under underneath beneath behind inside at written printed stuck taped "
                    "auf unter hinten im sur sous derrière dans au debajo detrás atrás escrita escrito pegada "
                    "sul sotto dietro scritta op onder achter embaixo".split())
_DETERMINERS = frozenset("the a an my our your his her their this that its der die das dem den des einem einer "
                         "le la les l' un une el los las un una il lo gli de het een o os um uma".split())
# What a network's name follows: "network's TP-Link_5G_A41C", "SSID: Casa_Verde", "das WLAN heißt
# FRITZ!Box"; and the small words that may stand between ("network name at the Airbnb: X").
_NAMES_A_NETWORK = frozenset("network network's networks ssid wlan netz netzwerk réseau red rete netwerk "
                             "heißt heisst called named nom nombre nome".split())
_BEFORE_A_NAME = frozenset("is the a at of for name ist est es è".split())


def _placed_elsewhere(words: list, named: int, value: int) -> bool:
    """Whether the credential named at words[named] is said to be somewhere ("password is on the
    sticker", "das Kennwort steht hinten auf dem Gerät"), after a value that a network's name
    claims (words[value], within five words after "network", "SSID:", "heißt"…, with only small
    words or a label's colon between): that value is the network's name. "… is in lowercase", "… is at least what IT
    wants", "bluebird77 (password is on the card)" after "Luna_5G /" say nothing of the kind."""
    following = [w.lower() for _, w, _ in words[named + 1:named + 5]]
    if len(following) < 3 or following[0] not in _IS or following[1] not in _PLACED \
            or not _DETERMINERS.intersection(following[1:]):
        return False
    for back in range(value - 1, max(-1, value - 6), -1):
        raw, word = words[back][0], words[back][1].lower()
        if word in _NAMES_A_NETWORK or raw.lower().rstrip(":").removesuffix("'s") in _NAMES_A_NETWORK:
            return True
        if word not in _BEFORE_A_NAME and not raw.endswith(":"):
            return False  # (a value after another word is not the name: "network HomeNet Tiger2024")
    return False


def _counted(words: list, count: int, end_count: int, named_just_before: bool) -> bool:
    """Whether the value of words[count:end_count] counts, orders or locates something."""
    back = count - 1
    while back > 0 and words[back][1].lower() in ("is", "was", "'s", "are", "be", "will", "would", "should"):
        back -= 1  # "the PR number is 4821" counts as "PR number 4821" does
    if back < count - 1 and back >= 0 and words[back][1].lower() in ("number", "no", "nr", "#"):
        named_just_before = back > 0 and (credential_word_kind(words[back - 1][1]) is not None
                                          or is_access_word(words[back - 1][1]))  # "the lock number is"
    before = words[back][1].lower() if back >= 0 else ""
    after = words[end_count][1].lower() if end_count < len(words) else ""
    if back < count - 1 and back >= 3 and words[back - 3][1].lower() in ("what", "which", "that") \
            and words[back - 2][1].lower() in ("unlocks", "opens", "unlock", "open") \
            and words[back - 1][1].lower() in _POSSESSIVES:
        before = ""  # "what unlocks my phone is 041188": the phone is what opens, not what is numbered
    if before in COUNTED_BEFORE and not (named_just_before and before in ("number", "no", "nr", "#")):
        return True  # "PIN number 4821" is named; "order number 4821" counts
    return after in UNITS or (after == "%")


# A rule or an example, not the value: "a PIN should never be 1234", "a code like 0000".
_HYPOTHETICAL = frozenset("should shouldn't must mustn't never like such example e.g.".split())


def _near(words: list, sentence: list[int], count: int, end_count: int, *, reach: int) -> list[int]:
    """The words of the value's clause within `reach` words of it, not counting the small
    words between ("el PIN de la tarjeta de débito lo cambié a 6671": four words away)."""
    near = []
    for step, indices in ((-1, range(count - 1, -1, -1)), (1, range(end_count, len(words)))):
        distance = 0
        for i in indices:
            if sentence[i] != sentence[count] or distance > reach:
                break
            near.append(i)
            if words[i][1].lower() not in _FILLERS and words[i][1].lower() not in _ASSIGNMENT:
                distance += 1
    return near


def _sentences(words: list) -> list[int]:
    """The sentence (or the clause, after a word of rule or example) each word belongs to."""
    ids, current = [], 0
    for raw, word, _ in words:
        if word.lower() in _HYPOTHETICAL:
            current += 1
        ids.append(current)
        # A question does not end the context: "wifi password? It's Seashell_44" answers it.
        if raw.endswith(_SENTENCE_END) and not raw.endswith("?") and not word[-1:].isdigit():
            current += 1
    return ids


_ALONE_IN_A_PARAGRAPH = 5  # words: "here you go:\nWolke7Blau" is a value handed over, not a header


def _paragraphs(words: list, text: str) -> list[int]:
    """The paragraph (text between blank lines) each word belongs to."""
    ids, current, last_end = [], 0, 0
    for raw, word, at in words:
        start = at - raw.find(word) if word else at
        if _BLANK_LINE.search(text, last_end, start):
            current += 1
        last_end = start + len(raw)
        ids.append(current)
    return ids


def _candidates(words: list, text: str) -> list[tuple[int, int, int, int, str]]:
    """Every value-shaped token or digit run: (first word, word after it, start, end, shape)."""
    found = []
    count = 0
    footnoted = None  # (whether the text marks footnotes with "*", looked up once)
    while count < len(words):
        raw, word, at = words[count]
        value = word.strip("*#")
        end_count, end = count + 1, at + len(word)
        shape = None
        if _KEYPAD.match(word) and not (count and words[count - 1][1].lower() in _MENU) \
                and not (count + 1 < len(words) and words[count + 1][1].lower() in UNITS | _GRADES) \
                and not (word.endswith("*") and (footnoted := footnoted if footnoted is not None
                                                 else _FOOTNOTE.search(text) is not None)):
            found.append((count, count + 1, at, at + len(word), "keypad"))
            count += 1
            continue
        if word[:1].isdigit() or _number_word(word.lower(), spoken=False):
            # Digits in groups are one value: "22 14 36", "two eight eight one", or a phone
            # number ("0800 123 4567"), which is none.
            assigned = count > 0 and (words[count - 1][0].endswith(":") or words[count - 1][1].lower() in _ASSIGNMENT)
            run = _digit_run(words, count, listed=assigned)
            numbers = words[count:count + (run[2] if run else 0)]
            if run is not None and (run[2] > 1 or "-" in word and not word[:1].isdigit()) \
                    and all(_number_word(w.lower(), spoken=False) for _, w, _ in numbers):
                if _is_phone(text[at:run[0]]):
                    count += run[2]
                    continue
                if run[1] >= 4:
                    shape, end, end_count = "digits", run[0], count + run[2]
        if shape is None and (len(value) >= 8 or len(value) >= 4 and not value.isalpha()) \
                and not (raw.startswith(("#", "@")) and not value.isdigit()):  # a hashtag or a handle names
            previous = words[count - 1][1].lower() if count else ""
            if previous in ("with", "using") and count > 1 and words[count - 2][1].lower() in _OPENED \
                    and any(is_access_word(w.rstrip(":")) for _, w, _ in words):
                previous = ":"  # "the box by the door opens with 1947": a code, whatever year it looks like
            shape = _shape(value, previous) if len(_WRITTEN_WITHOUT_SPACES.findall(value)) < 4 else None
            if shape is not None and _HTTP_VERSION.match(value) and (
                    count + 1 < len(words) and re.fullmatch(r"[1-5]\d\d", words[count + 1][1])
                    or previous.upper() in _HTTP_METHODS):
                shape = None  # "HTTP/1.1 401 Unauthorized", "GET /x HTTP/2": a request's or a response's line
            if shape is not None and count and _HEX.match(value) and _labels_a_digest(words[count - 1], text):
                shape = None  # "commit 4b825dc6…", "sha256: 9f86d08…": a digest names content, it opens nothing
        if shape is not None:
            found.append((count, end_count, at + (word.find(value) if value else 0), end, shape))
        count = end_count
    return found


# Where one signs in (the value's sentence), and words that make a value a name, not a secret.
_ACCOUNT_WORDS = frozenset("site website app account portal login email e-mail inbox vault icloud bank banking "
                           "online router admin".split())
_NAME_WORDS = frozenset("username usernames user-name gamertag tag ign psn xbox discord steam handle nickname nick "
                        "alias screenname userid name display profile channel instagram insta ig twitter tiktok "
                        "snapchat follow ssid network called named".split())
_HALVES = re.compile(r"^\d{3,}-\d{3,}$")
_SYMBOL_INSIDE = re.compile(r"(?<=.)[!$?~&](?=.)")
_FILE_NAME = re.compile(r"\.[A-Za-z]{2,4}$")
_OPENED = frozenset("opens open opened unlocks unlock unlocked".split())
# Chinese, Japanese and Korean letters: a run of them without spaces is a phrase or a sentence,
# not a value (values are given in digits and Latin letters between them).
_WRITTEN_WITHOUT_SPACES = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# After such a word, its particle, copula or verb ("は", "是", "改成了", "设为", "、", "：「"), then
# the value in digits and Latin letters; digits before a counter count ("8文字", "6位", "4桁").
_UNSPACED_VALUE = re.compile(r"[^\sA-Za-z0-9。．！？!?\n]{0,6}?\s*(?P<value>[A-Za-z0-9][A-Za-z0-9_!@#$%^&*+=.\-]*)")
_COUNTER = re.compile(r"(?:文字|字符|字|桁|位|个|個|개|자리|자|ケタ|けた|つ|年|月|日|時|时|分|秒|円|元|块|号|號|回|次|人|件|歳|岁|"
                      r"台|번|년|월|일|시|원|명|회|대)")
# A device or a system by its name and version ("iOS17", "iPad2"), and what comes after a time.
_COPULA_ONLY = re.compile(r"\s*(?:[:：=]|是|为|為|は|が|는|은|이|가|就是|还是|改成了?|设为|換成了?|换成了?)?\s*[「『“\"']?")
_PRODUCT = re.compile(r"(?i)^(?:ios|ipados|macos|android|windows|win|iphone|ipad|galaxy|pixel|ps|xbox|wi-?fi)\d*$")
_AFTER_A_TIME = re.compile(r"(?:之后|以后|以前|之前|前|后|後|以降|まで|から)")


def _unspaced_value(text: str, name_end: int, *, wordy: bool = False) -> int | None:
    """Where the value after a word of a script written without spaces ends ("我的密码是abc12345",
    "パスワードは「sakura2024」です", "密码是8位数字：20190415"), or None: "密码必须至少8位",
    "パスワードはLastPassに保存済み", "密码是iOS17之后才能改的" give none. A count before the value
    ("8位", "4桁で") is read past."""
    at = name_end
    for _ in range(3):
        read = _UNSPACED_VALUE.match(text, at)
        if read is None:
            return None
        value = read["value"].rstrip(".-")
        value_end = read.start("value") + len(value)
        if _COUNTER.match(text, value_end):
            at = value_end
            continue  # a length or a count, then perhaps the value
        if _PASSWORD_MANAGER.match(value) or _PRODUCT.match(value) or _AFTER_A_TIME.match(text, value_end):
            return None
        if wordy and value.isalpha() and value.islower() and len(value) >= 6 \
                and _COPULA_ONLY.fullmatch(text, at, read.start("value")):
            return value_end  # "wifi密码：ilovemycat", "비밀번호는 sunflower입니다": a word right after "is"
        if not credential_shaped(value, previous=":") or _shape(value, ":") is None and not value.isdigit():
            return None
        return value_end
    return None
_HTTP_VERSION = re.compile(r"(?i)^https?/[123](?:\.[01])?$")
_HTTP_METHODS = frozenset("GET POST PUT PATCH DELETE HEAD OPTIONS".split())


def _labels_a_digest(label: tuple, text: str) -> bool:
    """Whether a word labels the hex after it as a digest: a log's "commit 4b825dc…" at the start
    of its line, or "sha256: …" (not "(don't put it in any commit) 4f9a1c…", "the digest a94a…")."""
    raw, word, at = label
    lowered = raw.lower()
    if lowered.rstrip(":=") not in _HASH_WORDS or lowered.rstrip(":=") != word.lower():
        return False
    return lowered.endswith((":", "=")) or not text[text.rfind("\n", 0, at) + 1:at].strip()


_KEYPAD = re.compile(r"^(?=(?:\D*\d){3,8}\D*$)\d+(?:#\d+)*[#*]$|^\d(?:#\d{1,2}){2,}#?$")
_FOOTNOTE = re.compile(r"\(\*|\*[^\W\d]")  # "1450* per month (*utilities not included)"
_MENU = frozenset("press dial call ring top text sms".split())
# "220# grit": "#" as a number's sign before a grade or a weight
_GRADES = frozenset("grit gauge gsm thread count lb lbs ply".split())  # "press 101# for maintenance", "dial *123#"
# What a keypad's code opens, in the common languages (a word: "phone" is no part of "headphones").
_KEYPAD_LOCK = re.compile(r"(?i)\b(?:door|doors|gate|gates|garage|safe|lock|locks|padlock|locker|keypad|alarm|"
                          r"intercom|buzzer|porte|portail|puerta|portón|porta|portão|"
                          r"cancello|tür|tor|kapı\w*|drzwi|brama|deur|poort)\b|도어|현관|ドア|オートロック|门|門|"
                          r"باب|דלת|שער")
_HASH_WORDS = frozenset("commit sha sha1 sha-1 sha256 sha-256 sha512 md5 hash checksum digest revision rev "
                        "etag".split())
_HEX = re.compile(r"^[0-9a-f]{7,128}$")
_BARE_NETWORK = re.compile(r"(?i)^wi-?fi$")
_BARE_KEY = frozenset("key keys clé cle clave chave schlüssel schlussel chiave sleutel klucz".split())
# A database's, a sort's or a model's key, a song's or a map's, names a row or a thing.
_NOT_A_SECRET_KEY = frozenset("primary foreign sort model composite unique partition row cache lookup map music "
                              "answer product item part index hash dictionary".split())
# What a code printed in groups unlocks or redeems, said in its message: a gift card's, a router's,
# a licence's; "item code K9P2-L4M7-Q8R3", "session code D2S1-AI42-ML07" name things.
_REDEEMED = re.compile(r"(?i)\b(?:gift|redeem\w*|redemption|voucher\s+card|wi-?fi|router|licen[cs]e|activat\w*|"
                       r"recovery|backup|unlock\w*|serial\s+key|product\s+key)\b")
_JOINS_A_NETWORK = frozenset("on onto to off from into with".split())


def _scored(text: str, names: list[tuple[str, int, int]], *, carried: bool = False) -> list[Finding]:
    words = list(_words(text, 0))
    candidates = _candidates(words, text)
    if not candidates:
        return []  # most messages hold no value at all: no context to read
    starts = [at for _, _, at in words]
    sentence = _sentences(words)
    # A blank line starts a new paragraph: a credential's word below one does not reach back to a
    # value in a paragraph of its own words (a commit's message under its header); a value alone
    # above ("Kx9mPq2vL7\n\nthat's the new wifi password") and a value below one ("Gate code (new
    # one)\n\n2580") still take it.
    paragraph = _paragraphs(words, text) if "\n" in text and _BLANK_LINE.search(text) else None
    if paragraph is not None:
        sizes = collections.Counter(paragraph)
    # Which words are credential words (by kind), access cues, or asks to keep something.
    named: dict[int, str] = {}
    # "back on the wifi", "connect it to the wifi": a network something joins, and what comes
    # before it is the device ("BlueKite-7731 for the wifi" is its password)
    network: set[int] = set()
    for kind, start, end in names:
        if kind == "card_number":  # "the card ending in 4242" names a card, not a secret
            continue
        following = bisect.bisect_left(starts, end)
        if following < len(words) and (words[following][1].lower() in _DESCRIBED or following + 1 < len(words)
                                        and _names_a_process(words[following][1], words[following + 1][1])):
            continue  # "password manager", "PIN pad", "kod pocztowy", "password reset link" name other things
        if _passed_through(text, start, end):
            continue  # "-e POSTGRES_PASSWORD -p 5432:5432": read from the environment, given nothing here
        index = max(0, bisect.bisect_right(starts, start) - 1)
        named[index] = kind
        if _BARE_NETWORK.match(text[start:end]):
            before = index - 1
            while before >= 0 and words[before][1].lower() in ("the", "my", "our", "your", "their", "his", "her"):
                before -= 1
            if before >= 0 and words[before][1].lower() in _JOINS_A_NETWORK:
                network.add(index)
    access = {i for i, (_, word, _) in enumerate(words) if is_access_word(word.rstrip(":"))}  # ("side door: 6142*")
    for match in ACCESS_PHRASES.finditer(text):
        first = max(0, bisect.bisect_right(starts, match.start()) - 1)
        access.update(range(first, bisect.bisect_left(starts, match.end())))
    access = {i for i in access if i + 1 >= len(words) or words[i + 1][1].lower() not in NOT_ACCESS_AFTER}
    keep = {max(0, bisect.bisect_right(starts, m.start()) - 1) for m in _KEEP.finditer(text)}
    identity = {i for i, (_, word, _) in enumerate(words) if _EMAIL.search(word)}
    accounts = {i for i, (_, word, _) in enumerate(words) if word.lower() in _ACCOUNT_WORDS}
    names_a_name = {i for i, (_, word, _) in enumerate(words) if word.lower() in _NAME_WORDS}
    findings = []
    references = [m.span() for m in _REFERENCE_IN_TEXT.finditer(text)] if _MAY_REFER.search(text) else []
    redeemed = any(shape == "random" for *_, shape in candidates) and _REDEEMED.search(text) is not None
    for count, end_count, start, end, shape in candidates:
        token = text[start:end]
        setting = _SETTING.match(token)
        if setting and _another_setting(setting, text, start) or _names_rather_than_gives(text, start, end, references):
            continue
        if _markup_or_lookup(text, start, end):
            continue
        if _CLOCK.match(token) and not (count and (count - 1 in named or words[count - 1][0].endswith(":")
                                                   or words[count - 1][1].lower() in _ASSIGNMENT)):
            continue  # a log's "09:12:03"; but "PIN: 12:30:45", "locker combo 21:35:09"
        near = _near(words, sentence, count, end_count,
                     reach=_SENTENCE_REACH if shape in ("strong", "strong_symbol", "random", "random_mixed")
                     else _CONTEXT_REACH)
        # ("get the printer HL-L2350DW back on the wifi": a device before the network's name)
        # ("network's TP-Link_5G_A41C, password is on the sticker": a credential said to be
        # elsewhere takes no value from before it)
        kinds = {named[i] for i in near if i in named and not (i in network and i > count)
                 and not (i > count and _placed_elsewhere(words, i, count))
                 and not (paragraph is not None and paragraph[i] > paragraph[count]
                          and sizes[paragraph[count]] > _ALONE_IN_A_PARAGRAPH)}
        # A bare "code" takes digits ("the discount code SUMMER20"), a bare "pass" anything but
        # digits ("bus pass 4471").
        # (and a bare "code" a key printed in groups: "the gift card code is X7KQ-M3PT-9VRW-22LN")
        kinds -= {"pass"} if shape in ("digits", "keypad") else set() if shape == "random" and "-" in token \
            and redeemed else {"code"}
        if shape == "random" and token.count("-") == 2 and not (redeemed or count and (
                words[count - 1][1].lower() in _BARE_KEY or count - 1 in named)):
            shape = "mixed"  # ("part A1B2-C3D4-E5F6": three groups are a key only where one is redeemed or named)
        if shape in ("random", "random_mixed") and count and words[count - 1][1].lower() in _BARE_KEY \
                and not (count > 1 and words[count - 2][1].lower() in _NOT_A_SECRET_KEY):
            kinds.add("api_key")  # "network Pinecone_24, key 7QH2-K9WX-4RTM": a random value named a key
        if shape not in ("random", "random_mixed"):
            kinds.discard("private_key")  # a key's size or name ("2048 bits", "id_rsa"), not the key
            if kinds and "\n" in text and shape in ("mixed", "digits") and _another_entrys_value(
                    text, start, end, [words[i][2] for i in near if i in named]):
                continue  # "  size: 20Gi" under "userPasswordKey: password": the size's value
        score = SHAPE_SCORE[shape]
        score += CONTEXT_SCORE["credential_word"] if kinds else 0
        # (digits keyed with # or *: a door, a gate or a lock named near them)
        keyed = shape == "keypad" and any(_KEYPAD_LOCK.search(words[i][1]) and not (
            i + 1 < len(words) and words[i + 1][1].lower() in NOT_ACCESS_AFTER) for i in near)
        score += CONTEXT_SCORE["access"] if access.intersection(near) or keyed else 0
        score += CONTEXT_SCORE["keep"] if shape in ("random", "strong") and keep.intersection(near) else 0
        score += CONTEXT_SCORE["identity"] if shape != "digits" and identity.intersection(near) else 0
        if shape == "strong_symbol" and accounts.intersection(near):
            score += CONTEXT_SCORE["account"]
        # (only where no credential is named: "the api key for my discord bot is ..." is a key)
        if shape in ("strong", "strong_symbol") and not kinds and names_a_name.intersection(near):
            score += CONTEXT_SCORE["a_name"]
        leading = all(w.lower() in _FILLERS for _, w, _ in words[:count])
        score += CONTEXT_SCORE["carried"] if carried and count <= 1 and leading else 0
        named_before = any(i in named for i in range(max(0, count - 2), count))
        if count - 1 not in access and _counted(words, count, end_count, named_before):
            score += CONTEXT_SCORE["counted"]
        if score >= THRESHOLD - 1e-9:
            kind = sorted(kinds)[0] if kinds else "access_code" if shape in ("digits", "keypad") else "token"
            kind = _reported(kind)
            findings.append(Finding(kind, start, end))
    return findings


# --- what is hidden or bare: base64, key material -----------------------------------------------

_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}|(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{6,15}={1,2}")
# Encoded on purpose and short: a readable text this short that hides a value ("pin 7240",
# "alarm 3195") is a credential kept out of sight, whatever word names it.
_SHORT_ENCODED = 40
# A run this long with this much entropy is key material whatever surrounds it (a private key's
# body without its header line, a long token): detect-secrets' base64 limit is 4.5 bits.
_KEY_MATERIAL_LENGTH = 40
# A data URL of a picture, a sound, a film or a font: its base64 is the file's bytes.
_MEDIA_DATA = re.compile(r"(?i)data:(?:image|audio|video|font)/[\w.+-]+;base64,")
_MEDIA_DATA_BEFORE = re.compile(_MEDIA_DATA.pattern + "$")
# How the files begin: PNG, GIF, JPEG, WebP / WAV / AVI (RIFF), BMP, MP3, Ogg, MP4 / HEIC / AVIF,
# WebM, FLAC, ICO, WOFF. (An SVG is text, and a "picture" of base64 text is no picture.)
_MEDIA_MAGIC = (b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"RIFF", b"BM", b"ID3", b"\xff\xfb", b"OggS", b"\x1aE\xdf\xa3",
                b"fLaC", b"\x00\x00\x01\x00", b"wOF")


def _inlined_media(encoded: str) -> bool:
    """Whether base64 `encoded` begins as a picture's, a sound's or a film's file does."""
    head = encoded[:24]
    try:
        decoded = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.startswith(_MEDIA_MAGIC) or decoded[4:8] == b"ftyp"
_KEY_MATERIAL_ENTROPY = 4.5


def _entropy(value: str) -> float:
    counts = {c: value.count(c) for c in set(value)}
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _decoded(run: str) -> str | None:
    try:
        raw = base64.b64decode(run + "=" * (-len(run) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return text if text and sum(c.isprintable() or c.isspace() for c in text) / len(text) > 0.95 else None


# Lines of nothing but base64: a key's body is one block of them, its last line often short.
_BASE64_BLOCK = re.compile(r"(?m)^[ \t]*[A-Za-z0-9+/]{8,}={0,2}[ \t]*(?:\n[ \t]*[A-Za-z0-9+/]{8,}={0,2}[ \t]*)*$")


_HEX_RUN = re.compile(r"\b(?:[0-9a-fA-F]{2}){8,}\b|\b[0-9a-fA-F]{2}(?: [0-9a-fA-F]{2}){7,}\b")


def _hidden(text: str, inner) -> list[Finding]:
    findings = _bare_key_material(text, inner)
    dumped = None  # (whether the text shows a capture's bytes: looked up once, for bytes apart only)
    for match in _HEX_RUN.finditer(text):  # a credential written out in hex bytes
        try:
            decoded = bytes.fromhex(match.group()).decode("utf-8")
        except ValueError:
            continue
        if not decoded.isprintable():
            continue
        if " " not in match.group():
            if inner(decoded):
                findings.append(Finding("encoded_secret", match.start(), match.end()))
        # Bytes written apart ("db pass as hex: 50 67 21 57 …") only right after a credential's
        # name, and not where the text shows a capture's bytes ("wireshark: 55 73 65 72 …"):
        # a short readable value then, hidden as base64 ones are.
        elif credential_words(text[max(0, match.start() - 80):match.start()]) \
                and (dumped := dumped if dumped is not None else _BYTES_ON_THE_WIRE.search(text) is not None) is False \
                and (inner(decoded) or len(decoded) <= _SHORT_ENCODED and any(
                    credential_shaped(word.strip(_EDGE_PUNCTUATION)) for word in decoded.split())):
            findings.append(Finding("encoded_secret", match.start(), match.end()))
    for block in _BASE64_BLOCK.finditer(text):
        # A block of base64 lines with key material in it is key material through its last line.
        if "\n" in block.group().strip() and any(block.start() <= f.start < block.end() for f in findings):
            findings.append(Finding("key_material", block.start(), block.end()))
    return findings


_DIGEST_LABEL = re.compile(r"(?i)\b(" + _DIGEST_ALGORITHM + r")[:-]$")


# Bytes shown as a capture shows them, not a value hidden: "packet", "wire", "dump", "frame".
_BYTES_ON_THE_WIRE = re.compile(r"(?i)\b(?:dump|hexdump|xxd|packet|packets|wire|wireshark|tcpdump|pcap|frame|capture|"
                                r"magic|handshake|payload|protocol)\b")


def _bare_key_material(text: str, inner) -> list[Finding]:
    findings = []
    for match in _BASE64_RUN.finditer(text):
        if _MEDIA_DATA_BEFORE.search(text, max(0, match.start() - 80), match.start()) and _inlined_media(match.group()):
            continue  # a picture's or a sound's bytes, inlined
        if (label := _DIGEST_LABEL.search(text, max(0, match.start() - 12), match.start())) \
                and digest_sized(label[1], match.group()):
            continue  # a digest ("SHA256:5PYV…", a key's fingerprint; "sha512-…"): what a hash printed
        run = match.group().rstrip("=")
        decoded = _decoded(match.group())
        if decoded and (inner(decoded) or len(decoded) <= _SHORT_ENCODED and any(
                credential_shaped(word.strip(_EDGE_PUNCTUATION)) for word in decoded.split())):
            findings.append(Finding("encoded_secret", match.start(), match.end()))
        elif (decoded is None  # key material decodes to bytes, not to a readable sentence
              and len(run) >= _KEY_MATERIAL_LENGTH and _entropy(run) >= _KEY_MATERIAL_ENTROPY
              and any(c.isdigit() for c in run) and any(c.isupper() for c in run) and any(c.islower() for c in run)):
            findings.append(Finding("key_material", match.start(), match.end()))
    return findings


# --- a password given to a program: a command's flag, an environment variable ------------------

# Programs that take a password on their command line, each with its own flag: MySQL's clients
# glued to "-p" ("mysql -u root -pS3cret": case matters, "-P" is the port), sshpass's "-p", zip's
# "-P", 7-Zip's and RAR's glued "-p", openssl's "-k", redis-cli's "-a", the MongoDB shells' "-p",
# SQL Server's "-P", ssh-keygen's "-N"/"-P" (new and old passphrase), "docker login -p", curl's
# and wget's "-u user:password", lftp's "-u user,password", smbclient's "-U user%password",
# FreeRDP's "/p:", sqlplus's "user/password@". A flag counts only for the nearest command before
# it in the same command ("ssh -p 2222" is a port, and so is "sshpass …; ssh -p 2222"), and a
# command's name right after a flag is that flag's argument. A value glued to its flag must look
# like a credential ("-pretty boring" in prose is none: _GLUED); one that starts with "$" or "-"
# names a variable or another flag, and a port mapping ("27017:27017") or an address is none.
_PROGRAM_FLAGS = [
    (r"mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb|mariadb-dump", r"-p{quote}(?P<value>{glued})"),
    (r"sshpass", r"-p\s*{quote}(?P<value>{value})"),
    (r"zip|unzip|zipcloak", r"-P\s+{quote}(?P<value>{value})"),
    (r"7z|7za|7zr|rar|unrar", r"-p{quote}(?P<value>{glued})"),
    (r"openssl", r"-k\s+{quote}(?P<value>{value})"),
    (r"redis-cli", r"-a\s+{quote}(?P<value>{value})"),
    (r"mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport", r"-p\s+{quote}(?P<value>{value})"),
    (r"sqlcmd|bcp|osql", r"-P\s*{quote}(?P<value>{value})"),
    (r"ssh-keygen", r"-[NP]\s+{quote}(?P<value>{value})"),
    (r"(?:docker|podman|nerdctl)\s+login", r"-p\s+{quote}(?P<value>{value})"),
    (r"curl|wget", r"(?:-u|--user)\s+{quote}[^\s:'\"$]+:(?P<value>{value})"),
    (r"lftp", r"-u\s+{quote}[^\s,'\"$]+,(?P<value>{value})"),
    (r"smbclient|rpcclient|smbmap", r"-U\s+{quote}[^\s%'\"$]+%(?P<value>{value})"),
    (r"xfreerdp|wlfreerdp|sdl-freerdp", r"/p:{quote}(?P<value>{value})"),
    (r"sqlplus", r"[\w$#]+/(?P<value>[^\s'\"`;|&$@/-][^\s'\"`;|&@/]{{2,}})@"),
]
# The rows of _PROGRAM_FLAGS (MySQL's and 7-Zip's) whose glued value may be a word of prose
# ("mysql at work -pretty boring"): it must look like a credential. The others take nothing but
# a password.
_GLUED = frozenset({0, 3})
_VALUE = r"[^\s'\"`;|&$-][^\s'\"`;|&]{2,}"
_QUOTE = r"['\"]?"
# Each program's name in a group of its own (p0, p1, …, its row in _PROGRAM_FLAGS), then the
# commands whose own flags look the same and take no password (no group: lastgroup is None).
_PROGRAM_NAMES = re.compile(
    r"(?i)(?<![\w.-])(?:" + "|".join(f"(?P<p{n}>{command})" for n, (command, _) in enumerate(_PROGRAM_FLAGS))
    + r"|ssh|scp|sftp|rsync|psql|pg_dump|nc|ncat|telnet|git|ffmpeg|python3?|node|npm|pip|"
      r"docker|podman|kubectl|helm|java|gcc|make|tar|gzip|ls|grep|find|sed|awk"
    + r")(?![\w-])")
_FLAGS = [re.compile(r"(?<![\w-])" + flag.format(glued=_VALUE, value=_VALUE, quote=_QUOTE))
          for _, flag in _PROGRAM_FLAGS]
_COMMAND_END = re.compile(r"[\n;|&]")  # a new line or command: "mysql …; ssh -p2222" is two
_AFTER_A_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*[ \t]+$")
# a port mapping, a URL, an e-mail address (a domain after the "@": "Summ3r@2024" is a password)
_NOT_A_PASSWORD = re.compile(r"^\d+(?::\d+)+$|://|^[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}$", re.I)
# Any program's long flag for a password or passphrase ("--password=…", "--passphrase …",
# keytool's "-storepass …"), openssl's "-pass pass:…", and the variables the PostgreSQL, MySQL,
# Redis and sshpass clients read.
_NAMED_PASSWORD = re.compile(
    r"(?<![\w-])--?(?:[a-z]+-)?(?:password|passwd|passphrase|pass)"
    r"(?:=|\s+)(?!pass:)['\"]?(?P<value>[^\s'\"$-][^\s'\"]{2,})"
    # (keytool's take nothing but a password; psql's "--password mydb" names a database)
    r"|(?<![\w-])-(?:storepass|keypass|srcstorepass|deststorepass|srckeypass|destkeypass)\s+['\"]?"
    r"(?P<store>[^\s'\"$-][^\s'\"]{2,})"
    r"|(?<![\w-])-(?:pass|passin|passout)\s+['\"]?pass:(?P<literal>[^\s'\"]+)"
    r"|\b(?:PGPASSWORD|MYSQL_PWD|REDISCLI_AUTH|SSHPASS)=['\"]?(?P<env>[^\s'\"$][^\s'\"]*)")


def _given_to_a_program(text: str) -> list[Finding]:
    """Each pattern runs once over the text and each flag is matched to the command before it
    by bisection, so a long message of them costs linear time."""
    if "-" not in text and "=" not in text and "/" not in text:
        return []  # every flag, variable and sqlplus login has one of them
    findings = [Finding("password", m.start(m.lastgroup), m.end(m.lastgroup)) for m in _NAMED_PASSWORD.finditer(text)
                if m.lastgroup != "value" or credential_shaped(m.group("value"))]
    # (a command's name right after a flag is that flag's argument: "mysql -u git -p…", "--name mongo")
    commands = [(m.start(), m.lastgroup) for m in _PROGRAM_NAMES.finditer(text)
                if not _AFTER_A_FLAG.search(text, max(0, m.start() - 64), m.start())]
    if not any(program for _, program in commands):
        return findings
    starts = [at for at, _ in commands]
    ends = [m.start() for m in _COMMAND_END.finditer(text)]
    for n, flag in enumerate(_FLAGS):
        if not any(program == f"p{n}" for _, program in commands):
            continue
        for match in flag.finditer(text):
            at = match.start()
            ended = bisect.bisect_left(ends, at)  # how many commands ended before this flag
            command_start = ends[ended - 1] + 1 if ended else 0
            before = bisect.bisect_left(starts, at)
            value = match.group("value")
            if before and starts[before - 1] >= command_start and commands[before - 1][1] == f"p{n}" \
                    and (credential_shaped(value) or n not in _GLUED) and not _NOT_A_PASSWORD.search(value):
                findings.append(Finding("password", match.start("value"), match.end("value")))
    return findings


# In India a "PIN code" is the six-digit postal code: "my pin code is 560034, koramangala — does
# flipkart deliver there?" names where a parcel goes.
_PIN_CODE = re.compile(r"(?i)pin[\s-]?codes?$")
_SIX_DIGITS_NEXT = re.compile(r"\D{0,12}?\b[1-9]\d{5}\b(?![\s-]?\d)")
_DELIVERY = re.compile(r"(?i)\b(?:deliver\w*|courier|shipping|ship|address|area|locality|post\s*office|parcel|"
                       r"order|dispatch\w*|city|town|district|village|state|serviceable)\b")


_BANKING = re.compile(r"(?i)\b(?:bank\w*|card|atm|debit|credit|account|upi|netbanking)\b")


def _postal_pin(text: str, kind: str, start: int, end: int) -> bool:
    """(the delivery and banking words are the caller's to read, once per text)"""
    return kind == "pin" and bool(_PIN_CODE.search(text[start:end])) and bool(_SIX_DIGITS_NEXT.match(text, end))


_COMPOUND_WORD = re.compile(r"[A-Za-z0-9]-$")
_FOLLOWING_WORD = re.compile(r"[A-Za-z0-9]+")


_COUNTED_ON_THE_BACK = re.compile(r"(?i)^(?:three|four|3|4)\s")
_PAYMENT = re.compile(r"(?i)\b(?:card|checkout|payment|pay|paying|booking|site|form|order|purchase|cvv|cvc)\b")


def _counted_on_the_back_of_nothing(text: str, kind: str, start: int, end: int) -> bool:
    """"the 4 digits on the back will be 1987" of a hoodie: a card's code counted ("the 3
    numbers on the back") only where the message pays for something."""
    return kind == "card_security_code" and _COUNTED_ON_THE_BACK.match(text[start:end]) is not None \
        and _PAYMENT.search(text, max(0, start - 250), end + 250) is None


# What a confirmation code confirms when it is a reservation's reference, not a sign-in's code.
_BOOKED = re.compile(r"(?i)\b(?:hotels?|flights?|bookings?|booked|reservations?|reserved|airlines?|airbnb|hostel|"
                     r"rental|car\s+hire|train|ferry|cruise|tickets?|restaurant|table|check[- ]?in|stay|"
                     r"hôtel|vol|réservation|reserva|vuelo|prenotazione|volo|buchung|reservierung|flug)\b")
_CONFIRMATION = re.compile(r"(?i)^confirmation\s+codes?$")


def _confirms_a_booking(text: str, kind: str, start: int, end: int) -> bool:
    """"the confirmation code for the hotel is HX7732K": a reservation's reference, said to
    whoever checks one in; a confirmation code with no booking in its sentence is a sign-in's."""
    if kind != "one_time_code" or not _CONFIRMATION.match(text[start:end]):
        return False
    reach = max(0, start - 120)
    cut = max(text.rfind(mark, reach, start) for mark in ".!?\n")
    sentence_end = _SENTENCE_BREAK.search(text, end, end + 120)
    sentence = text[cut + 1 if cut >= 0 else reach:sentence_end.start() if sentence_end else end + 120]
    return _BOOKED.search(sentence) is not None


# A word quoted as a setting's value: `error="invalid_token"`, `"grant_type": "refresh_token"`.
_OPENS_A_QUOTED_VALUE = re.compile(r"[=:][ \t]*([\"'])[\w.-]*$")
_NAMES_NEXT = re.compile(r"[ \t]*[:=]")
_A_STATE = frozenset("invalid expired missing bad wrong revoked unknown refresh bearer reset required mismatch denied "
                     "error insufficient unsupported malformed".split())


def _a_quoted_value(text: str, start: int, end: int) -> bool:
    """Whether a credential's word is a setting's quoted value (an error's or a grant's name),
    not the name of a value ("token": "…" names one)."""
    closing = text[end:end + 1]
    if not closing or closing not in "\"'":
        return False
    opened = _OPENS_A_QUOTED_VALUE.search(text, max(0, start - 60), start)
    if opened is None or opened.group(1) != closing or _NAMES_NEXT.match(text, end + 1):
        return False
    # (a state or a grant, not a field's label: `{"type": "password", "value": …}` labels one)
    return any(part in _A_STATE for part in re.split(r"[_.-]", text[opened.end(1):end].lower()))


def _inside_compound(text: str, start: int, end: int) -> bool:
    """Whether a credential's word is joined by hyphens to words on both sides, a command's name
    ("aws secretsmanager get-secret-value"; "db-password:" and "x-api-key" end with theirs), or is
    part of a package's or a resource's name ("aws-actions/configure-aws-credentials@v4")."""
    if _COMPOUND_WORD.search(text, max(0, start - 2), start) and text[end:end + 1] == "-" \
            and (following := _FOLLOWING_WORD.match(text, end + 1)) and following[0].lower() not in _ASSIGNMENT:
        return True
    # (read back at most 200 characters: a long token of credential words made this quadratic)
    reach = max(0, start - 200)
    token_start = max(text.rfind(" ", reach, start), text.rfind("\n", reach, start), reach - 1) + 1
    token_end = next((at for at in range(end, min(len(text), end + 200)) if text[at].isspace()), min(len(text), end + 200))
    return _RESOURCE_NAME.match(text[token_start:token_end].strip("\"'`,;()")) is not None


@one_scan
def described_credentials(text: str, inner, *, carried: bool = False) -> list[Finding]:
    """Credentials described in words, or hidden or bare, in `text` (normalised by the caller).
    `inner(text)` says whether a decoded base64 string holds a secret (safety.find_secrets).
    `carried`: the sender's previous message named a credential, so a value opening this one
    is likely its value."""
    names = credential_words(text)
    postal = [(start, end) for kind, start, end in names if _postal_pin(text, kind, start, end)] \
        if any(kind == "pin" for kind, _, _ in names) and _DELIVERY.search(text) and not _BANKING.search(text) else []
    names = [name for name in names if not any(start <= name[1] < end for start, end in postal)
             and not _inside_reference(text, name[1]) and not _inside_compound(text, name[1], name[2])
             and not _a_quoted_value(text, name[1], name[2]) and not _confirms_a_booking(text, *name)
             and not _counted_on_the_back_of_nothing(text, *name)]
    lines, headers = _tables(text) if "\n" in text else ([], [])
    if names and headers:  # a table's header names columns (_tabled reads a credential column's values)
        starts = [lines[row][0] for row, _, _, _ in headers]
        names = [name for name in names if (row := bisect.bisect_right(starts, name[1]) - 1) < 0
                 or name[1] >= headers[row][1]]
    findings = [*_worded(text, names), *_value_first(text, names), *_scored(text, names, carried=carried),
                *_given_to_a_program(text), *_hidden(text, inner), *_fallbacks(text), *_answers_by_topic(text),
                *_described_by_use(text), *_dial_combination(text), *_protected_with(text), *_tried_on(text),
                *_concluded(text, names), *_answers_after_a_question_name(text), *_tabled(text, lines, headers),
                *_key_drawn(text),
                *filter(None, [cut_short(text)])]
    return findings + _corrected(text, findings) if findings else findings


# --- a table whose header names a credential column: "emp_id,name,badge_pin\n1042,R. Osei,5068" ---
_TABLE_SEPARATORS = (",", ";", "\t", "|")
_COLUMN_PARTS = re.compile(r"[_\s.-]+")
_EMPTY_CELL = re.compile(r"(?i)^(?:|-+|n/?a|none|null|tbd|todo|pending|yes|no|y|n|true|false|0|1|✓|✗|✔|✘|"
                         r"\(.*\)|\[.*\]|<.*>|\*+|x+|\?+)$")
# A bare "code", "token" or "key" column is a country's, a language's, a word's: only what it opens
# makes it a credential's ("door_code", "wifi key", "access_token").
_OPENS = frozenset("door gate alarm access entry wifi wi-fi api auth refresh session lock locker safe garage keypad "
                   "bank card sim phone login admin root master app router vault bearer secret private".split())
# ... and "has_pin", "pin_required", "password_hint" say something of one.
_ABOUT_ONE = frozenset("id name hint hints length policy count type status enabled required set expiry expires "
                       "changed updated reset attempts tries".split())
_HEADER_WORDS = re.compile(r"(?i)\b(?:is|are|was|were|the|my|your|our|a|an|to|and|please|thanks|hi|hello|dear)\b")
_PIN_CELL = re.compile(r"^\d[\d #*-]{1,10}\d[#*]?$")


def _credential_column(name: str) -> str | None:
    """A column named for a credential: its last part names one ("badge_pin", "wifi password",
    "API-Key"); "password_changed_at", "pin_attempts", "has_pin" or a bare "code" do not."""
    parts = [part for part in _COLUMN_PARTS.split(name.strip().strip("\"'").lower()) if part]
    if not parts or len(parts) > 4 or parts[0] in ("has", "is", "needs", "uses") or parts[-1] in _ABOUT_ONE:
        return None
    spaced = " ".join(parts)
    kind = next((kind for kind, _, end in credential_words(spaced) if end == len(spaced)), None)
    # (a "pincode" column is India's postal code)
    if not kind or kind == "pass" or parts[-2:] == ["pin", "code"] or parts[-1] == "pincode":
        return None
    if kind in ("code", "api_key") and not (len(parts) >= 2 and parts[-2] in _OPENS):
        return None
    return _reported(kind)


_COLUMN_NAME = re.compile(r"\s*[\"']?[A-Za-z][\w .-]{0,40}[\"']?\s*")


def _tables(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, int, str, list[str]]]]:
    """The lines of `text` (where each starts, its text) and the header rows of its tables (a
    row of names, of three words at most each, then rows with as many cells: at least two of
    them, or one under three columns or more): (the header's line, where it ends, its
    separator, its names). "Hi Ana, the wifi password is …\nSee you, Ben" is a letter."""
    if "\n" not in text:
        return [], []
    lines, at = [], 0
    for line in text.split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    headers = []
    for row, ((start, header), (_, following)) in enumerate(zip(lines, lines[1:])):
        separator = next((sep for sep in _TABLE_SEPARATORS if sep in header), None)
        if separator is None:
            continue
        names = header.split(separator)
        if len(names) < 2 or following.count(separator) != len(names) - 1 or not all(
                _COLUMN_NAME.fullmatch(name) and len(name.split()) <= 3 and not _HEADER_WORDS.search(name)
                for name in names):
            continue
        rows = 1 + (row + 2 < len(lines) and lines[row + 2][1].count(separator) == len(names) - 1)
        if rows >= 2 or len(names) >= 3:
            headers.append((row, start + len(header), separator, names))
    return lines, headers


_TABLE_ROWS = 1000


def _credential_columns(names: list[str]) -> dict[int, str]:
    return {i: kind for i, name in enumerate(names) if (kind := _credential_column(name))}


def _tabled(text: str, lines: list, headers: list) -> list[Finding]:
    findings = []
    read_to = -1
    for row, _, separator, names in headers:
        if row <= read_to:
            continue  # a row of the table already read ("pin,pin\npin,pin\n…" is one table, not many)
        columns = _credential_columns(names)
        if not columns:
            continue
        for row_index, (line_start, line) in enumerate(lines[row + 1:row + 1 + _TABLE_ROWS], start=row + 1):
            cells = line.split(separator)
            if len(cells) != len(names):
                break  # the table ended
            read_to = row_index
            offset = 0
            for i, cell in enumerate(cells):
                value = cell.strip().strip("\"'")
                if i in columns and not _EMPTY_CELL.match(value) and not refers_elsewhere(value) \
                        and (columns[i] not in ("pin", "access_code") or _PIN_CELL.match(value)):
                    begin = line_start + offset + cell.find(value)
                    findings.append(Finding(columns[i], begin, begin + len(value)))
                offset += len(cell) + len(separator)
    return findings


# --- a value corrected: "the gate code is 2580 no wait, it's 2851" -----------------------------
_CORRECTION = re.compile(
    r"(?i)(?:\s+(?:hash|pound|star|enter|then\s+(?:hash|enter)))?[\s,.;:!?…—–-]*"
    r"(?:no\s+wait|wait\s+no|wait|sorry|i\s+mean|actually|correction|scratch\s+that|oops|"
    r"my\s+bad|non\s+attends|perdón|perdon|scusa|nein\s+warte|quer\s+dizer)"
    r"(?:[\s,.;:!?…—–-]+(?:no|sorry|wait|i\s+mean|actually))*[\s,.;:!?…—–-]+(?:(?:it['’]?s|it\s+is|is|c['’]est)\s+)?")



def _corrected(text: str, findings: list[Finding]) -> list[Finding]:
    """After a credential's value, a correction and the value as it really is: the same kind."""
    corrected = []
    for finding in findings:
        cue = _CORRECTION.match(text, finding.end)
        if cue is None or cue.end() - finding.end > 60:
            continue
        kind = finding.kind
        first = _WORD.match(text, cue.end())
        if first is None or not (first[0][:1].isdigit() or _number_word(first[0].lower(), spoken=True)
                                 or credential_shaped(first[0].rstrip(_EDGE_PUNCTUATION), previous=":")):
            continue  # "Seashell_44 wait, the guest network is …": what follows is not the value
        end = value_end(text, cue.end() - 1 if text[cue.end() - 1:cue.end()].isspace() else cue.end(),
                        wordy=False, digits_only=kind in DIGIT_KINDS | {"access_code", "pin"})
        # ... and it ends its clause ("2580 oops, 1530 is when the party starts" corrects nothing)
        if end is not None and end - cue.end() <= 80 and _CLAUSE_ENDS.match(text, end):
            corrected.append(Finding(kind, cue.end(), end))
    return corrected


# --- a value cut short at the end of a message -------------------------------------------------

# What says "the value follows" in the common languages: an assignment ("is", ":", "c'est"), or
# the start of a value given in parts ("starts with", "first part").
_STARTS = (r"starts?\s+with|begins?\s+with|first\s+part(?:\s+is)?|commence\s+par|premi[eè]re\s+partie|"
           r"(?:empieza|comienza)\s+(?:con|por)|primera\s+parte|(?:comincia|inizia)\s+(?:con|per)|prima\s+parte|"
           r"(?:beginnt|fängt)\s+mit|erster?\s+teil|begint\s+met|eerste\s+deel|(?:começa|comeca)\s+(?:com|por)|"
           r"primeira\s+parte|begynner\s+med|börjar\s+med|begynder\s+med|zaczyna\s+się\s+od|pierwsza\s+część")
_CUT_SHORT = re.compile(r"(?i)(?:(?<=\s)|^)(?:(?P<start>" + _STARTS + r")|(?P<assigned>[^\s:=]+|[:=]))"
                        r"\s*[:=]?\s*(?P<value>[^\s\[\]]{1,8})[\s.,;:!?…—–-]*$")
_CUT_SHORT_REACH = 60
# What opens a phrase that says which credential is meant, not what else is: a preposition, a
# pronoun opening a relative clause, in the common languages.
_QUALIFIER_OPENS = frozenset(
    "for to of on at from in into with by that which who the you they i we he she it my our your his her their "
    "i've you've they've we've i'd de du des d' del della dello di da do dos das na no pour par para per que qui "
    "je tu il elle nous vous ils on für von vom zum zur fürs zu ich er sie wir ihr man van voor bij til på av "
    "för till dla od now changed updated reset new".split())
_QUALIFIER_WORDS = 6


# What makes "pin 18" or "code 137" a board's pin, a program's exit code or a pass a ticket
# rather than a credential given tersely.
_TECHNICAL = frozenset("gpio analog analogue digital input output data power ground reset exit return status error "
                       "http https response ascii unicode color colour icd hs tax product item promo discount coupon "
                       "voucher referral invite tracking booking order area zip postal country dial".split())
_TERSE_REACH = 3  # words before the name: "alarm disarm code 0", "the storage unit code 4"


def _named_tersely(text: str, *, colon: bool) -> str | None:
    """The kind of credential the last word of `text` names, read in its sentence (so "postal
    code" is not one), where it can stand right before its value with nothing between: after a
    colon ("mfa: 20"), or near the start of a message, with no preposition or technical word
    before it ("voicemail pin 8", "PIN 2"; not "connect the LED to pin", "exit code", "day pass")."""
    window = text[-80:]
    kind = next((kind for kind, start, end in credential_words(window)
                 if end == len(window) and not _inside_reference(window, start)), None)
    if kind is None or kind == "pass" and not colon:
        return None
    words = [word.strip(_EDGE_PUNCTUATION).lower() for word in text.split()[:-1]]
    if colon:
        return kind if not words or words[-1] not in _TECHNICAL else None
    if len(words) > _TERSE_REACH or any(word in _LOCATING or word in _TECHNICAL for word in words):
        return None
    return kind


_LOCATING = frozenset("to on at from into onto via in of with".split())


def cut_short(text: str) -> Finding | None:
    """A value too short to be a credential by itself, left at the very end of a message right
    after a credential's name and "is" or "starts with" ("the code they sent is 482", "gym app
    pw starts with Squat", "le digicode c'est 27"): a credential given in parts, whose rest
    follows in the sender's next message (safety.ends_with_credential_word reads the marker).
    Digits count after any assignment; a capitalised or mixed word only after "starts with",
    ":" or "=", or last after "is" ("my password is Long and I hate it" says what it is like).
    The name right before the value is a cue for a few digits only, and only where it names a
    credential plainly (_named_tersely: "voicemail pin 8", "mfa: 20"; not "GPIO pin 18")."""
    match = _CUT_SHORT.search(text[-(_CUT_SHORT_REACH + 20):])
    if match is None:
        return None
    offset = max(0, len(text) - (_CUT_SHORT_REACH + 20))
    cue = (match["start"] or match["assigned"]).lower()
    # the name itself may be the cue: "voicemail pin 8", "mfa: 20", "password: Zq"
    separator = match.string[match.end("assigned"):match.start("value")] if match["assigned"] else ""
    # (most messages end in a word: the name is looked for only before digits or after a colon)
    named_right_before = not match["start"] and cue not in _ASSIGNMENT and (
        separator.strip() or any(c.isdigit() for c in match["value"])) and _named_tersely(
        text[:offset + match.start("assigned") + len(match["assigned"].rstrip(":="))], colon=bool(separator.strip()))
    if not match["start"] and cue not in _ASSIGNMENT and not named_right_before:
        return None
    if named_right_before and separator.strip():
        cue = ":"  # "password: Zq" reads as "password is" does
    # (a hyphen last is where the value was cut: "vpn pw is Marmor-", the rest in the next message)
    value = match["value"].strip(_EDGE_PUNCTUATION)
    if value.endswith("-") and len(value) > 5:  # ("Marmor-"; "Long-", "Self-" may open a word)
        value = value[:-1]
    if not value or refers_elsewhere(value):
        return None
    digits = any(c.isdigit() for c in value)
    # a word only where it begins a value: after "starts with", "=" or ":", or as the very last
    # word after "is", unfinished (no full stop), of a password ("my netflix password is Ban";
    # "my password is Long and I hate it" goes on, "most of my code is Python." is finished)
    worded = not digits and (not named_right_before or cue == ":") and value[:1].isupper() and value.isalnum() and (
        match["start"] or cue in ("=", ":") or cue == "is" and match.end("value") == len(match.string))
    if not (digits or worded) or _is_date(value) or _TIME.match(value) or _YEAR.match(value):
        return None
    if named_right_before:
        if cue != ":" and (not value.isdigit() or len(value) > 4):
            return None  # "pin 12-13" is a range; a longer value needs no rest to be found
        kind = named_right_before
        return Finding(_reported(kind), offset + match.start("value"), offset + match.end("value"))
    before = text[max(0, offset + match.start() - _CUT_SHORT_REACH):offset + match.start()]
    names = [n for n in credential_words(before) if not _inside_reference(before, n[1])]
    if not names:
        return None
    # (credential_words lists by kind: the name nearest the cue, the longest of those that end there)
    kind, _, name_end = max(names, key=lambda name: (name[2], name[2] - name[1]))
    if worded and cue == "is" and kind not in ("password", "pass"):
        return None
    between = [word.strip(_EDGE_PUNCTUATION).lower() for word in before[name_end:].split()]
    if between and (between[0] in _DESCRIBED or between[0] not in _QUALIFIER_OPENS
                    or len(between) > _QUALIFIER_WORDS):
        # "my password manager is …", "the code coverage is 87%", "the secret santa budget is 25":
        # the value belongs to another noun; only a qualifier may stand between the name and the
        # cue ("the pin for the locker is 57", "the code they sent is 482")
        return None
    return Finding(_reported(kind), offset + match.start("value"), offset + match.end("value"))


@one_scan
def continued_credential(text: str) -> Finding | None:
    """The value at the start of a message that finishes a credential the previous message of
    the same person began ("my password for the tax site is Harbor" / "Lights!2024 — sorry, hit
    enter too soon"): the first value-shaped words, or plain words after a colon."""
    end = value_end(text, 0, wordy=True, phrase_words=_MAX_RECOVERY_WORDS)  # "part two: frost ladder ..."
    if end is None and (connective := _CONNECTIVE.match(text)).end():
        # "and the rest is 98431", "then 4471": only words that say which part comes before it
        # ("and the meeting moved to 1530" goes on with something else)
        start = connective.end()
        # past the words that say which part follows ("it ends with", "the rest is")
        for _, word, at in _words(text, start):
            if word.strip(":,").lower() not in _PART_WORDS:
                break
            start = at + len(word)
        end = value_end(text, start, wordy=False)
        words = text[start:end].split()[:-1] if end is not None else []
        if end is not None and all(w.strip(":,").lower() in _PART_WORDS for w in words):
            return Finding("password", start, end)
        return _rest_of_value(text)
    if end is not None:
        return Finding("password", 0, end)
    return _rest_of_value(text)


_REST_REACH = 4  # words: "and then", "e finisce con", "og slutter med", "reszta"
_COMPOUND = re.compile(r"\d+-[^\W\d_]+$")
# What follows a value typed in, not a number counting something ("21 then enter", "77 voilà",
# "34 ok"; "10 times" counts).
_AFTER_A_VALUE = frozenset("then ok okay sorry oops thanks thx please pls lol enter done btw voilà voila merci "
                           "danke gracias grazie obrigado dann luego poi depois puis".split())


def _rest_of_value(text: str) -> Finding | None:
    """The rest of a value the previous message left off, however short, after a few plain words
    in any language ("915. it's for my paypal", "e finisce con _Rosso88", "reszta 415"): the
    first word with a digit or a symbol. Only read where the previous
    message stopped at a credential's value (safety.follows_credential)."""
    words = list(itertools.islice(_words(text, 0), _REST_REACH + 1))
    for count, (raw, word, at) in enumerate(words[:_REST_REACH]):
        if not word:
            return None
        # (a digit or a symbol: an inner capital alone is a name, "CI runs on macOS too")
        if any(c.isdigit() for c in word) or any(c in _SYMBOLS for c in word):
            named = count > 1 and words[count - 1][1][:1].isupper() and words[count - 1][1].isalpha()
            if _COMPOUND.match(word) or named:
                return None  # "a 3-hour video", "rewatched Paddington 2": a measure, a title's number
            following = words[count + 1][0] if count + 1 < len(words) else ""
            if _is_date(word) or _TIME.match(word) or (
                    word.isdigit() and len(word) <= 2 and word[0] != "0" and raw == word
                    and following.strip(_EDGE_PUNCTUATION).isalpha()
                    and following.strip(_EDGE_PUNCTUATION).lower() not in _AFTER_A_VALUE):
                # "we need 4 chairs", "10 times, one is flaky": a small number counts something
                # ("842 sorry" and "07 sorry" are codes)
                return None
            end = at + len(word)
            for raw_next, next_word, next_at in _words(text, end):
                # digits read out one group at a time: "3 0 2 sorry", "0 9 9 *" (not past a comma)
                if raw[-1:] != word[-1:] or len(next_word) > 4 or not all(
                        c.isdigit() or c in _SYMBOLS for c in next_word):
                    break
                end, raw, word = next_at + len(next_word), raw_next, next_word
            return Finding("password", at, end)
        if raw.endswith((".", "!", "?")):
            return None  # the sentence ended without the rest
    return None


_CONNECTIVE = re.compile(r"(?i)\s*(?:(?:and|then|plus|oh\s+and|also|after\s+that)\b[\s,]*)?")
_PART_WORDS = frozenset("the rest remainder end ends ending last second final other part half bit digits is are it's of it "
                        "with starts finishes goes on comes after "
                        "that's = :".split())
