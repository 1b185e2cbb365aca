"""The words around a credential, in the common languages, recognised as a class.

A credential word is found by its stem, not by a list of sentences: "Passwort", "Passwörter",
"Firmenpasswort", "WLAN-Kennwort", "Bankkennworts", "wachtwoord", "hasłem", "contraseñas" all
carry a stem of "password". Each word is looked at lower-cased with its accents taken off
(ö -> o, ł -> l, ß -> ss), so one stem covers every inflection and compound:

- a long stem (six letters or more, or one no other word contains) counts anywhere in a word;
- a short stem ("pin", "code", "kod", "pwd") counts as a whole word, as a part of a hyphenated
  compound ("SIM-PIN"), with a few inflections ("codes", "kodu"), or as the tail of a compound
  ("Tresorcode", "pincode", "Handypin") unless the compound names something else ("barcode",
  "postcode", "Rabattcode", "hairpin").

Access cues are the other half of Presidio's context idea: "unlocks", "gets me into", "to log
in", "entsperrt", "ouvre", and the things a code opens (keypad, padlock, alarm). Counting cues
("after 1000 requests", "room 4417", "3000 steps") mark a number as a word of the sentence.
"""
import functools
import re
import unicodedata

# --- credential words -------------------------------------------------------------------------

# Letters of other scripts drawn like Latin ones (the common confusables), mapped to them.
LOOKALIKES = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O",
    "Р": "P", "С": "C", "Т": "T", "Х": "X", "І": "I", "Ѕ": "S", "Ј": "J",
    "α": "a", "ο": "o", "ν": "v", "ρ": "p", "τ": "t", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H",
    "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "У": "Y",
})

# stem (accent-free, lower case) -> kind. Long stems match inside any word.
LONG_STEMS = {
    # password in English, German, Dutch, Spanish, Portuguese, Polish, Scandinavian, Finnish, Czech,
    # Hungarian, Turkish, Romanian, Italian ("parola d'ordine" is matched as a phrase in
    # credentials.py: "parola" alone is "word").
    "password": "password", "passwort": "password", "kennwort": "password", "wachtwoord": "password",
    "contrasena": "password", "senha": "password", "haslo": "password", "hasla": "password",
    "haslem": "password", "hasle": "password", "losenord": "password", "passord": "password",
    "adgangskode": "password", "salasana": "password", "heslo": "password", "jelszo": "password",
    "sifre": "password", "parolei": "password", "passphrase": "password", "passphrasen": "password",
    "passcode": "password", "passwd": "password", "losungswort": "password", "motdepasse": "password",
    "geheimwort": "password", "codewort": "password", "kodeord": "password",
    # PIN
    "geheimzahl": "pin", "geheimnummer": "pin", "pincode": "pin", "pinkode": "pin", "pinnummer": "pin",
    "pinnumber": "pin",
    # a device's pairing or parental-lock number ("the bluetooth passkey is 4417"), never a
    # plain word ("passkeys are replacing passwords": the sign-in method)
    "passkey": "pin",
    # codes and combinations that open something
    "zugangscode": "access_code", "zugangsdaten": "password", "zugangsnummer": "access_code",
    "kombination": "access_code", "combinacion": "access_code", "combinaison": "access_code",
    "combinazione": "access_code", "combinacao": "access_code", "combinatie": "access_code",
    "szyfr": "access_code", "toegangscode": "access_code", "keycode": "access_code",
    "sicherheitscode": "one_time_code", "bestatigungscode": "one_time_code", "verifizierungscode": "one_time_code",
    "einmalcode": "one_time_code", "einmalpasswort": "one_time_code", "verificatiecode": "one_time_code",
    "beveiligingscode": "one_time_code", "inlogcode": "one_time_code", "anmeldecode": "one_time_code",
    "weryfikacyjny": "one_time_code", "jednorazowy": "one_time_code",
    # the answer to a security question
    "sicherheitsfrage": "security_answer", "sicherheitsantwort": "security_answer",
    "geheimfrage": "security_answer", "beveiligingsvraag": "security_answer",
    # keys (as in "the key of my account", "Schlüssel", "llave", "klucz")
    "schlussel": "api_key", "sleutel": "api_key", "klucz": "api_key", "chiave": "api_key", "llave": "api_key",
    "nyckel": "api_key", "nogle": "api_key", "clave": "password",
    "credential": "password", "zugangskennung": "password", "digicode": "access_code",
    # verification in English, German, French, Spanish, Italian, Portuguese, Polish, Dutch
    "verification": "one_time_code", "verifizierung": "one_time_code", "verificacion": "one_time_code",
    "verifica": "one_time_code", "verificacao": "one_time_code", "weryfikac": "one_time_code",
    "verificatie": "one_time_code",
    # password in more languages written in Latin letters: Hungarian's possessive stem ("jelszavam"),
    # Lithuanian, Icelandic, Estonian, Croatian / Serbian / Bosnian, Catalan, Galician, Basque,
    # Welsh, Irish, Albanian, Afrikaans, Esperanto, Swahili, Malay
    "jelszav": "password", "slaptazod": "password", "lykilord": "password", "parool": "password",
    "salasona": "password", "lozink": "password", "contrasenya": "password", "contrasinal": "password",
    "pasahitz": "password", "yfrinair": "password", "pasfhocal": "password", "fjalekalim": "password",
    "wagwoord": "password", "pasvort": "password", "nenosiri": "password", "nywila": "password",
    "katalaluan": "password",
    # PIN in Finnish; verification in Indonesian / Malay, Croatian / Serbian, Hungarian
    "tunnusluku": "pin", "tunnusluvu": "pin", "verifikasi": "one_time_code", "verifikacij": "one_time_code",
}
# Short stems: a whole word, a part of a hyphenated compound, or an inflection listed here.
SHORT_STEMS = {
    "pin": "pin", "pins": "pin", "nip": "pin", "pwd": "password", "pw": "password", "mdp": "password", "otp": "one_time_code",
    "chave": "api_key", "cle": "api_key", "token": "api_key", "tokens": "api_key", "2fa": "one_time_code",
    "mfa": "one_time_code", "totp": "one_time_code",
    # "pass" is a password only before a value that is no plain number ("pass Sunrise#91"; a
    # "bus pass 4471" is a ticket): credentials.py reads the kind that way.
    "pass": "pass",
    # "code", "codes", "código" and "codice" as whole words are credentials.CREDENTIAL_WORDS' own
    # (which knows "zip code" and "dress code" are none).
    "codigos": "code", "codici": "code", "kod": "code", "kodu": "code", "kodem": "code", "kode": "code", "koden": "code", "koodi": "code",
    "koda": "code", "kodo": "code", "kodom": "code",  # Slovenian
    # password in Slovenian (Indonesian's "kata sandi" is a phrase in credentials.py: "Sandi" is a
    # name; Croatian "šifra" is as often an article's code)
    "geslo": "password", "gesla": "password", "geslom": "password",
}
# The tail of a compound: "Tresorcode", "Handy-PIN" (hyphenated parts are words already), "Bankpin".
COMPOUND_TAILS = {"code": "code", "codes": "code", "kode": "code", "koden": "code", "pin": "pin",
                  "pins": "pin", "nummer": None}
# Compounds ending in a short stem that name no credential.
NOT_CREDENTIALS = frozenset(
    # English
    "barcode barcodes postcode postcodes zipcode zipcodes unicode encode decode opcode opcodes bytecode shortcode "
    "shortcodes geocode timecode transcode qrcode promocode pseudocode microcode sourcecode hairpin linchpin "
    "lynchpin clothespin kingpin tailspin spin backspin topspin chopin tiepin lapin "
    # German, Dutch, Scandinavian: discount, voucher, error, post, bar, source, country, area codes
    "rabattcode gutscheincode aktionscode fehlercode postcode strichcode quellcode landercode vorwahlcode "
    "farbcode dresscode kortingscode foutcode broncode streepjescode landcode rabatkode fejlkode "
    "postnummer".split()
)

# --- access cues --------------------------------------------------------------------------------

# Stems of words that operate a lock or an account, or name a thing a code opens.
ACCESS_STEMS = (
    "unlock", "disarm", "keypad", "padlock", "lockbox", "keysafe", "login", "logon", "signin",
    "authenticat", "authentifi", "autentic", "autentyk",
    "entsperr", "freischalt", "aufschlie", "offnet", "einlogg", "anmeld",
    "debloqu", "deverrouill", "desbloque", "destrav", "sblocc", "ontgrendel", "odblok", "inlogg", "zaloguj",
    "alarm",
    # the intercom at a building's door (English, French, Italian, Polish)
    "intercom", "interphon", "citofon", "domofon",
)
# Doors and lids a code opens, as whole words (a stem would find "tur" in "nature").
ACCESS_WORDS = frozenset(
    "door doors porte portail puerta porta portao portone cancello tur ture haustur deur drzwi furtka "
    "padlocks lock locks safe tresor cadenas candado lucchetto locker lockers casier taquilla armadietto "
    "kluis sejf coffre spind portao cancelo".split()
)
# After an access word, a noun that makes it another thing: "alarm clock", "lock screen", "safe room".
NOT_ACCESS_AFTER = frozenset("clock clocks screen room rooms bell bells deposit frame handle mat knob sign step "
                             "steps".split())
# Cues of more than one word, or a word that is a cue only as a verb of access.
ACCESS_PHRASES = re.compile(
    # (not before a bare number: "signed in 1648", "logged on 2019" say when, not with what)
    r"(?i)\b(?:(?:log(?:s|ged|ging)?|sign(?:s|ed|ing)?)\s*(?:in|into|on|onto)\b(?![ \t]+\d)|"
    # someone let in ("gets me in", "let the cleaner in"; not "get around in", "getting scratched in")
    r"(?:gets?|got|getting|lets?|letting)\s+(?:me|us|you|him|her|them|myself|ourselves|yourself|himself|herself|"
    r"themselves|people|guests|visitors|everyone|anyone|someone|(?:the|a|an|my|our|your|his|her|their)\s+[^\W\d]+)"
    r"\s+in(?:to|side)?\b|"
    # a code that opens ("4821 opens the gate", "opened with 4821"); "opened Dymatize ISO100
    # today" unpacked a thing, and "opened the box" is no lock
    r"get(?:s|ting)?\s+(?:in|into)\b|opens?(?!\s+(?:at|from|until|till|on|in|daily|every|late|early|again|up))|"
    r"opened\s+(?:with|using|by\s+typing)|open\s+(?:the|my|our|it)|"
    r"(?:to|can)\s+(?:access|enter|open|unlock)|access(?:es|ed)?\s+(?:my|the|our|your)|"
    r"(?:punch|key|tap|type)\s+in|ouvre|ouvrir|abre|abrir|apre|aprire|[oö]ffnen|openen|opent|otwiera|"
    r"se\s+connecter|iniciar\s+sesi[oó]n|acceder|accedere|entrar|acessar|"
    # opens with (a number), in more languages, after the door, gate, lock or shed it opens:
    # Scandinavian ("Garasjeporten åpnes med 2468", "Cykelskuret låser du op med 0407"), Turkish
    # ("Bahçe kapısı 7702 ile açılıyor"), Korean ("현관 도어락은 1357* 누르면 열려"), Arabic, Hebrew;
    # not a shop's or a season's opening ("butikken åpner med salg", "הקניון נפתח עם 1500 מקומות")
    r"(?:\w*(?:port|dør|dor|dörr|lås|las|skur|boks|grind|låda|kapı|kapi|kilit)\w*)\s+(?:[\w]+\s+){0,4}?"
    r"(?:[åa]pne[rs]?\s+(?:\w+\s+)?med(?=\s+\d)|l[åa]ser\s+(?:\w+\s+){0,2}op{1,2}\s+med(?=\s+\d)|"
    r"öppnas\s+med(?=\s+\d)|(?:\d+\S*\s+)?ile\s+açıl\w*)|누르면\s+열(?:려|어|립니다)|"
    r"(?:[åa]pne[rs]?|öppnar)\s+\w*(?:port|dør|dörr|grind|lås)\w*\s+med(?=\s+\d)|"
    r"(?:باب|الباب|البوابة|بوابة)\s+(?:\w+\s+){0,3}?(?:يفتح|تفتح)\s+(?:بالرقم|بالكود|بالرمز|بكود)|"
    r"(?:דלת|הדלת|שער|השער|הלוקר|המנעול)\s+(?:\w+\s+){0,3}?(?:נפתח|נפתחת|פותח|פותחים)\s+(?:עם|בקוד)|"
    # a one-time code as its message says it ("the 6 digits we sent", "the bank texted 604 218",
    # not "he texted me 0800 as the meet time")
    r"(?:digits|code)\s+(?:we|they)\s+(?:just\s+)?(?:sent|texted)|"
    r"texted(?:\s+me)?(?=\s+\d[\d \-]{2,20}?\d(?:[,.;:!?]|\s+(?:and|but|please|pls)\b|\s*$)))\b|"
    r"で開[くけき]"  # (Japanese runs on without a space: "0623 で開くよ")
)

# --- counting cues: a number that is a word of the sentence -----------------------------------------

# Right before a number: what it counts, orders or locates.
COUNTED_BEFORE = frozenset(
    "after about over under around some than every per at on by for in within from until till since between of "
    "last next first top "
    "nearly almost approximately roughly only just page room rooms flight flights train bus platform gate "
    "order invoice ref reference ticket booking seat row table floor version ver v model serial tracking "
    "postcode zip tel phone call dial ring fax ext extension number no nr nº # route line track exit "
    "year years km kg mile miles chapter step steps level score error status badge case issue bug build "
    "release episode season section item lot batch unit apt apartment suite house building block terminal "
    "lane road exit member membership customer client patient student employee id "
    # a name given to something, not a secret: "the wifi network is called VM8841223"
    "called named".split()
)
# Right after a number: a unit or a counted noun ("1000 requests", "250 grams", "3000 steps").
UNITS = frozenset(
    "times people persons users requests calls steps miles km kilometres kilometers metres meters m cm mm "
    "kg g grams gram lbs pounds euros euro dollars dollars usd eur gbp yen percent % degrees years months "
    "weeks days hours minutes seconds mins secs hrs words pages items points votes followers views likes "
    "employees staff members guests calories kcal ml litres liters l rpm mph kph bytes kb mb gb tb "
    # and singular, as in "a 1500 word essay", "a 2000 piece puzzle"
    "time person user request call step mile metre meter gram pound euro dollar percent degree year month "
    "week day hour minute second word page item point piece seat bed room".split()
)

_FOLD = str.maketrans({"ł": "l", "ø": "o", "ß": "ss", "æ": "ae", "œ": "oe", "đ": "d", "ı": "i", "ð": "d", "þ": "th"})
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "@": "a", "$": "s", "5": "s", "7": "t"})
_PARTS = re.compile(r"[-_/]")


def fold(word: str) -> str:
    """Lower case without accents: "Passwörter" -> "passworter", "hasłem" -> "haslem"."""
    decomposed = unicodedata.normalize("NFKD", word.lower().translate(_FOLD))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


# Password and PIN in Japanese, Chinese and Korean, written without spaces around them
# ("会社のパスワードは …"): found inside any token, folded as every word is (fold() drops the
# kana's voicing marks, so the stems are kept in that form).
_UNSPACED_WORDS = (("パスワード", "password"), ("暗証番号", "pin"), ("密码", "password"), ("密碼", "password"),
                   ("비밀번호", "password"))
LONG_STEMS.update({fold(word): kind for word, kind in _UNSPACED_WORDS})
# Where such a word stands in its token, as written: the value follows it in the same token.
UNSPACED_WORD = re.compile("|".join(word for word, _ in _UNSPACED_WORDS))
_LONG = re.compile("|".join(sorted(LONG_STEMS, key=len, reverse=True)))

# Credential words of scripts whose words a Latin tokeniser cuts apart (Indic vowel signs are no
# word characters) or whose letters normalising maps to Latin look-alikes (Cyrillic "пароль" is
# read as "пapoль"): looked for in the whole normalised text, each a phrase or a stem.
_SCRIPT_WORDS = [
    ("password", (
        # Russian, Ukrainian, Belarusian, Bulgarian ("парола"), Serbian and Macedonian ("лозинка")
        r"(?<!\w)парол[ьяюеіиа]\w*|(?<!\w)лозинк\w*|"
        # Greek ("κωδικός" is as often the password as a code, but not a postal code, an order's,
        # an error's, a product's or a discount's), Hebrew, Arabic, Persian, Urdu
        r"συνθηματικ\w*|(?<!ταχυδρομικός )(?<!ταχυδρομικό )(?<!\w)κωδικ\w*(?!\w)"
        r"(?!\s+(?:παραγγελ|σφάλματ|προϊόντ|έκπτωσ|κουπονι|ταχυδρομ|περιοχ|χώρας|προσφορ)\w*)|"
        r"סיסמ\w*|كلم[ةه]\s+(?:ال)?(?:مرور|سر)|گذرواژه|(?:رمز|کلمه)\s+عبور|پاس\s?ورڈ|"
        # Hindi / Marathi / Nepali, Bengali, Tamil, Telugu, Gujarati, Punjabi, Kannada, Malayalam
        r"पासवर्ड|कूटशब्द|পাসওয়ার্ড|கடவுச்சொல்|పాస్వర్డ్|પાસવર્ડ|ਪਾਸਵਰਡ|ಪಾಸ್ವರ್ಡ್|പാസ്വേഡ്|"
        # Thai, Vietnamese, Romanian (written without their accents, in credentials.CREDENTIAL_WORDS)
        r"รหัสผ่าน|(?<!\w)m[ậa]t\s+kh[ẩa]u(?!\w)|(?<!\w)parolă\w*")),
    ("pin", (
        r"(?<!\w)(?:пин|пін|пинкод)(?:-?код\w*)?(?!\w)|(?<!\w)ПИН(?!\w)|(?<!\w)PIN-?код\w*|"
        # (in India a "पिन कोड" is a postal code)
        r"पिन(?!\s*(?:कोड|नंबर\s+\d{6}|\d{6}))|পিন(?!\s*কোড)|ਪਿੰਨ|(?:ال)?رقم\s+(?:ال)?سري|(?<!\w)m[ãa]\s+pin(?!\w)|"
        r"(?<!\w)namba\s+(?:\w+\s+)?ya\s+siri(?!\w)|"
        # Urdu (not "پن کوڈ", a postal code where the Indian usage reaches)
        r"(?<!\w)پن(?!\w)(?!\s*کوڈ)")),
    ("one_time_code", (
        r"(?<!\w)код\w*\s+(?:подтвержд|доступ|верификац|из\s+смс|из\s+sms|з\s+смс)\w*|"
        r"رمز\s+(?:ال)?تحقق|کد\s+تایید|קוד\s+(?:אימות|חד[-\s]פעמי)|ओटीपी|"
        r"验证码|驗證碼|認証コード|確認コード|인증\s?번호|인증\s?코드|"
        r"(?<!\w)m[ãa]\s+x[áa]c\s+(?:nh[ậa]n|minh)(?!\w)|(?<!\w)m[ãa]\s+otp(?!\w)")),
    # a bare "code", which takes digits only (as credentials.CREDENTIAL_WORDS' "code")
    # (not an error's, a country's, a city's, a product's, a discount's or a postal code)
    # ("трек-код", "штрих-код" are a parcel's and a barcode)
    ("code", r"(?<![\w-])код(?:а|ом|у|ът|ове|овете)?(?!\w)"
             r"(?!\s+(?:ошибк|стран|город|товар|регион|скидк|купон|промо|почтов|продукт|заказ|отслеж|подразделен))|"
             r"(?<!\w)קוד(?!\w)(?!\s+ה?(?:שגיאה|מדינה|אזור|הנחה|קופון|מוצר|דואר|הזמנה|מעקב))|"
             r"(?<!\w)رمز(?!\w)(?!\s+(?:ال)?(?:خطأ|بريد|دولة|منطقة|خصم|منتج|طلب|تتبع))|"
             r"รหัส(?!ผ่าน|ไปรษณีย์|สินค้า|ส่วนลด|ประเทศ|ข้อผิดพลาด|นักศึกษา|นักเรียน|วิชา|พนักงาน|พัสดุ)|"
             r"(?<!\w)کد(?!\w)(?!\s+(?:پستی|خطا|تخفیف|کشور|رهگیری|سفارش))"),
    # Chinese, Japanese, Korean words the stems above lack; Korean's as a whole word with its
    # particle ("암호화폐" is a cryptocurrency)
    ("password", r"口令|パスコード|(?<![가-힣])(?:암호|비번)(?:는|가|를|은|이|을)?(?![가-힣])"),
]
# Greek vowels are written with or without their accents ("ταχυδρομικός", "ταχυδρομικος").
_GREEK_VOWELS = {"α": "αά", "ε": "εέ", "η": "ηή", "ι": "ιίϊΐ", "ο": "οό", "υ": "υύϋΰ", "ω": "ωώ"}
_GREEK_VOWELS.update({accented: forms for forms in list(_GREEK_VOWELS.values()) for accented in forms})


def _forms(char: str) -> str:
    """The characters `char` may stand as in normalised text: its Latin look-alike if it has one,
    and its capital's ("к" -> "кK": "КОД" is read "KOД"; "ν" -> "vN")."""
    forms = []
    for variant in _GREEK_VOWELS.get(char, char):
        capital = variant.upper() if len(variant.upper()) == 1 else variant
        for form in (LOOKALIKES.get(ord(variant), variant), LOOKALIKES.get(ord(capital), capital)):
            if form.lower() not in (f.lower() for f in forms):
                forms.append(form)
    return "".join(forms)


def _as_normalised(pattern: str) -> str:
    """`pattern` as it must read normalised text (matched case-insensitively): each letter as
    every form it may take there (_forms)."""
    out, in_class = [], False
    for i, char in enumerate(pattern):
        escaped = i > 0 and pattern[i - 1] == "\\" and not (i > 1 and pattern[i - 2] == "\\")
        if char == "[" and not escaped:
            in_class = True
        elif char == "]" and not escaped:
            in_class = False
        forms = _forms(char) if char.isalpha() and not escaped else char
        out.append(forms if len(forms) == 1 or in_class else f"[{forms}]")
    return "".join(out)


SCRIPT_WORDS = [(kind, re.compile("(?i)" + _as_normalised(pattern))) for kind, pattern in _SCRIPT_WORDS]

# A security question's name in more languages (credentials.SECURITY_QUESTION_NAMES holds the
# Romance ones and Polish): German, Dutch, Danish, Norwegian, Swedish, Finnish, Czech, Turkish,
# Russian, Ukrainian, Hebrew, Arabic, Vietnamese, Indonesian, Japanese, Chinese, Korean, Hindi.
# A pattern for normalised text, as SCRIPT_WORDS.
SECURITY_QUESTION_WORDS = _as_normalised(
    r"(?:sicherheitsfrage\w*|geheimfrage\w*|beveiligingsvra\w*|sikkerhedssp\w*|sikkerhetssp\w*|"
    r"säkerhetsfråg\w*|turvakysymy\w*|bezpečnostní\s+otázk\w*|güvenlik\s+soru\w*|"
    r"(?:контрольн|секретн)\w*\s+(?:вопрос|питанн)\w*|שאלת\s+(?:אבטחה|ביטחון|אימות)|"
    r"(?:ال)?سؤال\s+(?:ال)?(?:أمان|امان|سري|أمني|امني)|câu\s+hỏi\s+bảo\s+mật|pertanyaan\s+keamanan|"
    r"秘密の質問|安全问题|安全問題|密保问题|보안\s?질문|सुरक्षा\s+प्रश्न)")


def _possessive(folded: str) -> str:
    """"door's" -> "door", "passcode's" -> "passcode"."""
    return folded[:-2] if folded.endswith(("'s", "’s")) else folded


def _tail_kind(part: str) -> str | None:
    for tail, kind in COMPOUND_TAILS.items():
        if kind and part.endswith(tail) and len(part) - len(tail) >= 3 and part not in NOT_CREDENTIALS:
            return kind
    return None


def _one_edit_away(word: str) -> frozenset:
    """Every string one letter away from `word`: a letter left out, doubled, swapped with the
    next, or typed in place of another ("pasword", "passowrd", "pssword", "passwrod")."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return frozenset(
        [a + b[1:] for a, b in splits if b] + [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1]
        + [a + c + b[1:] for a, b in splits if b for c in letters] + [a + c + b for a, b in splits for c in letters])


# A credential word mistyped, as a whole word: the long English ones only (one letter off a
# shorter word is often another word: "pin" -> "pig", "code" -> "cope").
TYPO_STEMS = {typo: kind for stem, kind in (("password", "password"), ("passcode", "password"),
                                             ("passphrase", "password"), ("passwords", "password"))
              for typo in _one_edit_away(stem)} | {"pasword": "password"}


# Words repeat from message to message: each is judged once.
@functools.lru_cache(maxsize=65536)
def credential_word_kind(word: str) -> str | None:
    """The kind of credential `word` names (one token, punctuation stripped), or None."""
    folded = _possessive(fold(word))
    if not folded or len(folded) > 40 or not any(c.isalpha() for c in folded):
        return None
    if word[-3:] == "TAN":  # a bank's transaction number ("TAN", "mTAN", "pushTAN"), not the colour
        return "one_time_code"
    match = _LONG.search(folded)
    if match is None and any(c in "0134@$57" for c in folded) and any(c.isalpha() for c in folded):
        match = _LONG.search(folded.translate(_LEET))  # "p@ssw0rd", "Passw0rt"
    if match is not None:
        return LONG_STEMS[match.group()]
    if folded in TYPO_STEMS:
        return TYPO_STEMS[folded]
    for part in [folded, *_PARTS.split(folded)] if _PARTS.search(folded) else [folded]:
        if part in NOT_CREDENTIALS:
            continue
        if part in SHORT_STEMS:
            return SHORT_STEMS[part]
        if (kind := _tail_kind(part)) is not None:
            return kind
    return None


@functools.lru_cache(maxsize=65536)
def is_access_word(word: str) -> bool:
    folded = _possessive(fold(word))
    return folded in ACCESS_WORDS or any(stem in folded for stem in ACCESS_STEMS)
