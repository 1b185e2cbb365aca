"""Credentials written the way people write them, not the way a token looks: disguised letters,
spaced or spelt digits, other languages, the value first, split over two messages. And the
everyday sentences that merely mention a credential, which must come through untouched."""
import base64

import pytest

from memoryapp.credentials import credential_shaped, normalise
from memoryapp.models import Event, Memory
from memoryapp.safety import ends_with_credential_word, find_secrets, follows_credential, redact_secrets
from tests.conftest import as_tenant
from tests.workers.helpers import at, ingest


def _hides(text: str, secret: str) -> bool:
    """The secret is gone from the redacted text, compared the way a reader would see it."""
    redacted = normalise(redact_secrets(text)[0])[0].replace(" ", "").lower()
    return normalise(secret)[0].replace(" ", "").lower() not in redacted


# (sentence, the secret in it). Written for these tests; none is a benchmark phrasing.
DISGUISED = [
    ("the locker pаsscоde is Vx7!mQ2p", "Vx7!mQ2p"),                      # Cyrillic а and о
    ("my pass\u200bword is Kettle#Drum55", "Kettle#Drum55"),               # zero-width space
    ("ｍｙ　ＰＩＮ　ｉｓ　８２７３", "８２７３"),                               # fullwidth forms
    ("bank pin: 5 0 9 3", "5 0 9 3"),                                      # spaced digits
    ("the garage code is seven one one four", "seven one one four"),       # digits as words
    ("mi contraseña del banco es Luna.Roja.88", "Luna.Roja.88"),            # Spanish
    ("mein Passwort für die Arbeit ist Tannenbaum!19", "Tannenbaum!19"),   # German
    ("le code d'accès de l'immeuble est 4B719", "4B719"),                 # French
    ("3391 unlocks the shed padlock", "3391"),                             # the value first
    ("the recovery phrase is lantern orchid basalt tunnel meadow copper", "lantern orchid basalt tunnel"),
    ("the combination on the gym locker is 12-31-07", "12-31-07"),          # shaped like a date
    ("my social is 412 55 9087", "412 55 9087"),
    ("card number 5500 0000 0000 0004", "5500 0000 0000 0004"),
    ("Quokka77 is my password for the gym app", "Quokka77"),               # the value first, with "is"
    ("Marmalade is what I typed for the memorable word", "Marmalade"),     # a plain word, chosen for it
    ("my security question answer is Rex", "Rex"),                          # a short answer
    ("the wifi password is the word falcon then the digits nine one", "falcon then the digits nine one"),
]

HARMLESS = [
    "the password manager keeps nagging me about reusing passwords",
    "I forgot my PIN again and had to go to the branch on 2024-03-01",
    "the API key got revoked after 3000 requests last week",
    "our zip code is 94110 and the dress code is casual",
    "I paid 1200 for the flights, 50k is the budget for the year",
    "the security question was 'name of your first school', which is silly",
    "the card ending in 4242 expired in March",
    "the meeting moved to 14:30 on 12/05/2025",
    "my password is too short according to the bank",
    "Bitwarden is my password manager and it syncs fine",                  # the name names a thing
    "1998 was the year my PIN was first issued",                           # a year, and "the year"
    "Friday is the password reset deadline at work",
    "That is my PIN, not yours",
]


@pytest.mark.parametrize("text,secret", DISGUISED)
def test_a_disguised_credential_is_redacted(text, secret):
    assert find_secrets(text), text
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", HARMLESS)
def test_a_sentence_that_only_mentions_a_credential_is_left_alone(text):
    assert redact_secrets(text) == (text, [])


def test_a_base64_encoded_credential_is_redacted_and_harmless_base64_is_not():
    hidden = base64.b64encode(b"password=Marigold!2031").decode()
    assert find_secrets(f"here it is encoded so nobody reads it: {hidden}")
    plain = base64.b64encode(b"see you at the cafe on friday, bring the book").decode()
    assert not find_secrets(f"forwarded blob {plain}")


def test_shapes_that_are_words_of_a_sentence_are_not_credentials():
    assert not credential_shaped("14:30") and not credential_shaped("2024-03-01")
    assert not credential_shaped("50k") and not credential_shaped("$1200")
    assert credential_shaped("48392017K") and credential_shaped("2024-03-01", previous="is")


def test_a_message_stopping_at_the_credential_word_is_recognised():
    assert ends_with_credential_word("the alarm code is")
    assert ends_with_credential_word("my password for the tax site is Harbor")  # a value cut short
    assert not ends_with_credential_word("I changed my password yesterday")


@pytest.mark.django_db
def test_a_credential_split_over_two_messages_is_redacted_in_both(tenant_a, actor):
    ingest(tenant_a, "alice", actor,
           ("m1", "user", "ok the wifi password at the cabin is", None, at(0)),
           ("m2", "user", "Pinecone_Ridge42 — typed it too fast", None, at(1)),
           ("m3", "user", "my door code is", None, at(2)),
           ("m4", "assistant", "Go ahead.", None, at(3)),
           ("m5", "user", "6 6 1 9", None, at(4)))
    with as_tenant(tenant_a):
        texts = [*Event.objects.filter(tenant=tenant_a).values_list("content", flat=True),
                 *Memory.objects.filter(tenant=tenant_a).values_list("statement", flat=True)]
        second = Event.objects.get(tenant=tenant_a, event_id="m2")
    joined = " ".join(texts)
    assert "Pinecone_Ridge42" not in joined and "6 6 1 9" not in joined
    assert second.redacted and "typed it too fast" in second.content


@pytest.mark.django_db
def test_a_credential_cut_short_loses_both_parts_through_the_worker(tenant_a, actor):
    ingest(tenant_a, "alice", actor,
           ("m1", "user", "the shed padlock code 5", None, at(0)),
           ("m2", "user", "2 9 1 then give it a tug", None, at(1)),
           ("m3", "user", "the code coverage is 87%", None, at(2)),
           ("m4", "user", "CI runs on macOS 14 too", None, at(3)))
    with as_tenant(tenant_a):
        contents = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "content"))
        statements = " ".join(Memory.objects.filter(tenant=tenant_a).values_list("statement", flat=True))
    assert "5" not in contents["m1"] and "2 9 1" not in contents["m2"] and "give it a tug" in contents["m2"]
    assert "2 9 1" not in statements
    assert (contents["m3"], contents["m4"]) == ("the code coverage is 87%", "CI runs on macOS 14 too")


@pytest.mark.django_db
def test_a_value_after_an_unrelated_message_is_not_taken_for_a_credential(tenant_a, actor):
    """Only the sender's own previous message in the same session counts."""
    ingest(tenant_a, "bob", actor,
           ("m1", "assistant", "What is your booking password?", None, at(0)),
           ("m2", "user", "Flight LH2231 lands at 9", None, at(1)),
           ("m3", "user", "I changed my password yesterday", None, at(2)),
           ("m4", "user", "Room 4412 at the Hilton", None, at(3)))
    with as_tenant(tenant_a):
        contents = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "content"))
    assert contents["m2"] == "Flight LH2231 lands at 9"
    assert contents["m4"] == "Room 4412 at the Hilton"


def test_a_long_message_of_credential_words_is_scanned_in_linear_time():
    import time

    # (and the commands a password is given to: "mysql " again and again was quadratic once)
    # (... a word written without spaces many times in one token, "口令口令…", took 133 s for 50
    # KB; an unclosed certificate frame and "a-a-a-…" before a URL's "://" were quadratic too)
    for text in ("pin " * 8000, "code " * 6400, "password is " * 2700, "mysql " * 16000, "mysql -p " * 10000,
                 "mysql -pAb3defg! " * 1900, "口令" * 25000, "पिन" * 16000, "인증번호" * 12000, "รหัส" * 12000,
                 "-----BEGIN CERTIFICATE-----\n" * 1800, "--a-" * 12000, "number on the back of my " + "a-" * 25000,
                 "sshpass -p x " * 4000, "curl -u a:b " * 4000, "pin-" * 8000,
                 # (spaces after a key's name, the postal-PIN check per word, "$$$..." as a word)
                 '"api_key"' + " " * 30000, "pin code 560034 delivery " * 1200, "$" * 30000):
        started = time.monotonic()
        redact_secrets(text)
        assert time.monotonic() - started < 3, text[:20]


@pytest.mark.parametrize("text", [
    "I wrote code for 3 years at a company with 5000 employees",
    "the code in my thesis ran for 10000 iterations",
])
def test_a_number_far_from_a_code_word_is_no_code(text):
    assert redact_secrets(text)[0] == text


@pytest.mark.parametrize("text,secret", [
    ("and the rest is 71190", "71190"),
    ("then Gravel_Moth8, sorry", "Gravel_Moth8"),
])
def test_a_continuation_opening_with_a_connective_is_redacted(text, secret):
    """The second half of a credential cut over two messages may start with "and" or "then"."""
    assert secret not in redact_secrets(text, continues=True)[0]


@pytest.mark.parametrize("text", [
    "and then we went home at 5",
    "and the meeting moved to 1530 on Friday",
    "oh and Harbor Street is where we live now",
])
def test_a_continuation_with_no_value_is_kept(text):
    assert redact_secrets(text, continues=True)[0] == text


# A value's place holding a reference to one kept elsewhere (written for these tests).
@pytest.mark.parametrize("text", [
    "the compose file says MYSQL_ROOT_PASSWORD: ${MYSQL_ROOT_PASSWORD} and reads it from the host",
    "api_token = {{ lookup('env', 'API_TOKEN') }} in the ansible role",
    "set STRIPE_SECRET=$STRIPE_SECRET before you run it",
    "our helm values have password: null since the chart generates one",
    "the docs show secret_key: <paste-your-secret-key> as an example",
    "keep the key in /etc/app/secrets/signing_key and mount it read-only",
    "APP_PORT=8080\nAPP_HOST=0.0.0.0\nAPP_SECRET=${APP_SECRET}",
])
def test_a_reference_to_a_secret_kept_elsewhere_is_not_one(text):
    assert redact_secrets(text)[0] == text


@pytest.mark.parametrize("text,secret", [
    ("CACHE_PASSWORD=Velvet!Crane31", "Velvet!Crane31"),                  # a value, not a reference
    ("WEATHER_KEY=9f2c41d07be8a3351c6e90d4a7f1b2c8", "9f2c41d07be8a3351c6e90d4a7f1b2c8"),  # random, whatever its name
    ("my password is $ailboat77", "$ailboat77"),                          # a "$" that starts no variable
])
def test_a_value_beside_the_reference_rules_is_still_refused(text, secret):
    assert _hides(text, secret)


# A credential given in two messages, the first part too short to be one by itself.
@pytest.mark.parametrize("first,second,parts", [
    ("the pin they gave me for the locker is 57", "83, can you remember that", ["57", "83"]),
    ("my laptop password begins with Otter", "and then 99!z at the end", ["Otter", "99!z"]),
    ("the one-time code is 3H", "Q72 sorry", ["3H", "Q72"]),
])
def test_a_credential_cut_over_two_messages_loses_both_parts(first, second, parts):
    redacted_first = redact_secrets(first)[0]
    assert parts[0] not in redacted_first
    assert ends_with_credential_word(redacted_first)
    assert parts[1] not in redact_secrets(second, continues=True)[0]


@pytest.mark.parametrize("text", [
    "my password is Long and I hate it",         # what it is like, in the middle of a sentence
    "the bus to the office is the 42",           # no credential named
    "my pin code changed in 2019",               # no value after an assignment
    "the password rules say at least 12",        # a count
])
def test_a_short_number_or_word_at_a_message_end_is_kept_without_a_credential_value(text):
    assert redact_secrets(text)[0] == text


def test_a_count_after_a_redacted_credential_is_kept():
    assert redact_secrets("we booked 3 rooms for the weekend", continues=True)[0] == \
        "we booked 3 rooms for the weekend"


def test_a_password_written_like_a_setting_name_is_still_refused():
    assert _hides("my gmail password is my_password1", "my_password1")


# Where the first forms of the two rules above went wrong (a review's own probes, written for
# it): a reference is the whole value, a name of a setting ends with what it holds, a dotted
# setting given a value is a setting.
@pytest.mark.parametrize("text,secret", [
    ("my password is secret_garden", "secret_garden"),                 # snake case, not a setting's name
    ("DB_PASSWORD=${HOME}Summer2024!", "Summer2024"),                  # a variable, then the password
    ("api key: env.Kx9mQ2vL7pR4wT8", "Kx9mQ2vL7pR4wT8"),                # random, not a name
    ("secrets.password: Xk8#pq2Lz", "Xk8#pq2Lz"),                       # a dotted setting, given a value
    ("the redis password is $Harbour12", "$Harbour12"),                 # a "$" before no variable's name
])
def test_a_value_that_starts_like_a_reference_is_still_refused(text, secret):
    assert _hides(text, secret)


@pytest.mark.parametrize("text", [
    "password = os.environ['DB_PASSWORD']",
    "token = os.environ.get('API_TOKEN')  # set by the deploy job",
    "NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
    "the key is read from process.env.SIGNING_KEY at start-up",
])
def test_a_reference_in_code_is_not_a_secret(text):
    assert redact_secrets(text)[0] == text


@pytest.mark.parametrize("first,second", [
    ("the code coverage is 87%", "CI runs on macOS too"),               # another noun owns the value
    ("the secret santa budget is 25", "20 if you're tight"),
    ("my pin badge collection is at 40", "iPhone photos of them soon"),
])
def test_a_number_owned_by_another_noun_takes_nothing_from_the_next_message(first, second):
    assert redact_secrets(first)[0] == first
    assert not ends_with_credential_word(first)


def test_a_rest_needs_a_digit_or_a_symbol():
    # (read only after a message that stopped at a credential's value)
    assert redact_secrets("CI runs on macOS too", continues=True)[0] == "CI runs on macOS too"
    assert "7!x" not in redact_secrets("7!x sorry, fat fingers", continues=True)[0]


# A first part with no "is": the credential's name right before a few digits at the message's
# end, then the rest read as digits one group at a time (written for these tests).
@pytest.mark.parametrize("first,second,parts", [
    ("the bike lock code 3", "9 1 6 then pull", ["3", "916"]),
    ("gate pin: 41", "07 sorry, butter fingers", ["41", "07"]),
    ("the code from the bank is 730", "118 sorry phone died", ["730", "118"]),
    ("my email password is Otter", "!Bay_2291 forgot the end", ["Otter", "!Bay_2291"]),
])
def test_a_short_first_part_named_right_before_loses_both_parts(first, second, parts):
    redacted_first = redact_secrets(first)[0]
    assert parts[0] not in redacted_first.replace(" ", "")
    assert ends_with_credential_word(redacted_first)
    assert parts[1] not in redact_secrets(second, continues=True)[0].replace(" ", "")


@pytest.mark.parametrize("text", [
    "solder the wire to pin 7",              # a pin on a board, located by "to"
    "most of my code is Kotlin.",            # a finished sentence about source code
    "the error code 3",                       # not a credential
    "my password is Long and I hate it",
])
def test_a_short_value_at_the_end_that_is_no_first_part_is_kept(text):
    assert redact_secrets(text)[0] == text


@pytest.mark.parametrize("text,kept_elsewhere", [
    ("la contraseña la saca de ${MYSQL_ROOT_PASSWORD}, no la pongas en el compose", True),
    ('String pw = System.getenv("KEYSTORE_PASSWORD");', True),
    ("DB_USER=admin can be committed, DB_PASSWORD stays in the vault", True),
    ("SECRET_KEY=xxxxxxxxxxxxxxxx", True),
    ('resource "random_password" "api" {\n  length = 32\n}\napi_password = random_password.api.result', True),
    ("secrets.password: Xk8#pq2Lz", False),
    ("the deploy job reads it from DB_PASSWORD", True),                  # a name that ends the message
    ("my password is Walrus-Cabin-19", False),
    ("the pin for the side door is 4417", False),
])
def test_a_message_pointing_at_secrets_kept_elsewhere_is_told_apart(text, kept_elsewhere):
    # (such messages are not given to the classifier, which reads what a message is about)
    from memoryapp.credentials import names_secrets_kept_elsewhere

    assert names_secrets_kept_elsewhere(text) is kept_elsewhere


def test_a_configurations_keys_are_not_a_credentials_value():
    text = "        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              key: password"
    assert redact_secrets(text)[0] == text


@pytest.mark.parametrize("text,secret", [
    ("MAIL_PASSWORD = os.getenv('MAIL_PASSWORD', 'Gannet#Reef_770')", "Gannet#Reef_770"),
    ("cache: ${REDIS_AUTH:-Xq81vLmz0TpR2wN5}", "Xq81vLmz0TpR2wN5"),
])
def test_a_lookups_fallback_is_a_value_given_in_the_open(text, secret):
    assert _hides(text, secret)


@pytest.mark.parametrize("text", [
    "workers = os.getenv('WORKERS', '4')",
    "url: ${API_URL:-http://localhost:8000}",
    "region = os.environ.get('AWS_REGION', 'eu-west-1')",
])
def test_a_lookups_ordinary_fallback_is_kept(text):
    assert redact_secrets(text)[0] == text


@pytest.mark.parametrize("text", [
    "finally finished that 1000-piece puzzle",    # a measure, not a value's rest
    "rewatched Paddington 2 and cried",           # a title's number
    "we need 4 chairs for the kitchen",
])
def test_an_ordinary_message_after_a_credential_keeps_its_numbers(text):
    # (read as a possible continuation: the sender's previous message ended in a credential)
    assert redact_secrets(text, continues=True)[0] == text


def test_a_capitalised_word_before_the_rest_does_not_hide_it():
    # (only right before the digits does a capitalised word make them a title's number)
    assert "4109" not in redact_secrets("og Slutter med 4109", continues=True)[0]


# Configuration and code that name credentials without giving one: a setting's value ends with
# its line, a time in a log line is a time, a package or a cloud resource is named by its
# reference, a variable's whole name names, a command's name holds the word it works on.
@pytest.mark.parametrize("text", [
    "permissions:\n  packages: write\n  pull-requests: read\njobs:\n  build:\n    runs-on: ubuntu-22.04",
    "auth-token: none\nretries: 3\nendpoint: https://api.example.org/v2\nregion: eu-west-2",
    "14:02:57 WARN retrying login for user=ops password=[hidden] after 3 attempts",
    "- uses: docker/login-action@v3\n  with:\n    registry: ghcr.io",
    "role: arn:aws:iam::210987654321:role/ci-publisher  # assumed by the token exchange",
    "the runner exports GITLAB_TOKEN, NPM_KEY and STRIPE_SECRET_KEY before the tests",
    "run `vault kv get-secret-meta` then `gcloud secrets describe db-secret-name`",
    "password = aws_db_instance.main.password  # terraform output",
    "token: module.auth_token.value",
    "docker run --rm -e REDIS_PASSWORD -e APP_ENV=staging myimage",
    "Server=db02;Database=Billing;User Id=svc;Password=${BILLING_DB_PASSWORD};Encrypt=true",
    "apiVersion: secrets-store.csi.x-k8s.io/v1\nkind: SecretProviderClass",
    "the token path in vault is kv/payments/stripe-webhook",
    # a public number named by what it is, a process named by the credential it changes, a header
    "which sort code does the branch on the high street have? the letter says 30 94 57",
    "exit code 143 again, the container was stopped mid-build",
    "she asked IT for a password reset email and got it in 2 minutes",
    "send the token in the Proxy-Authorization header instead",
])
def test_configuration_that_names_credentials_is_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


@pytest.mark.parametrize("text,secret", [
    ("password:\n  Quill#Harbor58", "Quill#Harbor58"),                      # a value on the next line
    ("my router pin is\n40417", "40417"),
    ("db_password: Vx7#tq2Lm9\nport: 5432", "Vx7#tq2Lm9"),                   # on its own line still
    ("-e POSTGRES_PASSWORD=Marble!Fox62 -e APP_ENV=prod", "Marble!Fox62"),   # a value given to the setting
    ("Server=db02;Database=Billing;User Id=svc;Password=Lantern!Moss4;", "Lantern!Moss4"),
    ("login at 09:12:03 with password Xq9#Lm2vR", "Xq9#Lm2vR"),
    ("the password reset code they texted is 771903", "771903"),
    ("X-Api-Key: 5c1e9a7f3b2d8e6a4c0f9b1d7e3a5c8f", "5c1e9a7f3b2d8e6a4c0f9b1d7e3a5c8f"),
])
def test_a_value_given_in_configuration_is_still_refused(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


# What a review of the rules above found they let through at first: each is a credential given
# beside a form those rules read as a name.
@pytest.mark.parametrize("text,secret", [
    ("mein Passwort ist\nHimbeereis", "Himbeereis"),                      # any cue may end the line
    ("the wifi password is set to\nmarigold", "marigold"),
    ("my PIN reset to 4471 yesterday", "4471"),                          # reset to a value
    ("IT did a password reset, use Tango!Fox88 for now", "Tango!Fox88"),
    ("wifi pw SUMMER_2024", "SUMMER_2024"),                              # a value written like a variable
    ("ENV DB_PASSWORD PROD_DB_2024", "PROD_DB_2024"),
    ("password is x=Tiger88", "x=Tiger88"),                              # a password with "=" in it
    ("master password: Zebra=Crossing7", "Zebra=Crossing7"),
    ("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=q8ZtW2mR7xKp4LvN9sYb1AbcD", "q8ZtW2mR7xKp4LvN9sYb1AbcD"),
    ("my passphrase is horse/battery/staple", "horse/battery/staple"),   # a password with slashes
    ("login for the portal: jsmith/Welcome@123", "Welcome@123"),         # no package at a version
    ("arn:aws:rds:us-east-1:123456789012:db:prod;user=admin;password=Winter24", "Winter24"),
    ("the safe combination is 12:34:56", "12:34:56"),                    # a time given as the value
    ("locker combo 21:35:09", "21:35:09"),
    ("PINsentry response code 77341209 for the new payee", "77341209"),  # a card reader's answer
    ("the password is my_secret.Hunter24", "Hunter24"),                  # no code's name
])
def test_a_credential_beside_the_configuration_rules_is_still_refused(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


def test_reading_a_resource_name_back_takes_linear_time():
    import time

    for unit in ("pin.", "code.", "a.b_password.", "random_password.db."):
        text = unit * (20000 // len(unit))
        started = time.perf_counter()
        redact_secrets(text)
        assert time.perf_counter() - started < 2.0


# Numbers said the way people say them, right after a credential's name.
@pytest.mark.parametrize("text,secret", [
    ("my bank pin is double three six one", "double three six one"),
    ("the alarm code is triple seven two", "triple seven two"),
    ("the bike lock code is twelve thirty four", "twelve thirty four"),
    ("garage pin: nineteen oh four", "nineteen oh four"),
])
def test_a_credential_said_in_number_words_is_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    "i've had the same pin for twenty years",
    "the code review took twelve minutes",
    "we double checked the pin pad, twenty of them were broken",
])
def test_number_words_near_a_credential_that_give_no_value_are_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


# A security question's answer named by the question's topic, in a message that says it speaks of
# such answers (a quoted question, "security / recovery question", "what I put", "answer is").
@pytest.mark.parametrize("text,secret", [
    ("for the recovery questions i set first school = Oakfield Primary", "Oakfield Primary"),
    ("the bank's memorable answer: mother's middle name is Rosalind", "Rosalind"),
    ("for 'first concert' i put Blur95, no idea if that counts", "Blur95"),
    ("street i grew up on was Mill Road, that's my security answer for the pension site", "Mill Road"),
])
def test_a_security_answer_named_by_its_question_is_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    "my first pet was a hamster called Nibbles",                  # a fact to remember
    "my favourite film is Jaws and i put it on every list",
    "should i use fake answers for security questions like my first pet's name?",
    "what's a good security question? mine is my first car, is that bad",
    # a frame in another sentence, or no frame at all (a review's classes, in new words)
    "We talked about security questions at the bank today. My first car was a Fiat Panda.",
    "the answer is yes, and my favourite film is still Heat",
    "what I put in the curry is coconut milk; my favourite food is dal",
    "my daughter's story is called 'First Pet' because her first pet was Mango the cat",
])
def test_a_question_topic_without_an_answer_given_is_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


# A value described by what one does with it, no credential named.
@pytest.mark.parametrize("text,secret", [
    ("what i type each time the work vpn asks is harbour7lights and it's a pain", "harbour7lights"),
    ("the word i use to lock my journal app is persimmon, my brother keeps guessing", "persimmon"),
    ("the thing the gas company texted me is 448213, do they really need it over the phone?", "448213"),
    ("what i punch into the lift at the office is 2290 and it only works before 8", "2290"),
    ("what unlocks my phone is 120697 and my kids know it", "120697"),
    ("what i need to type at the library kiosk is bluefinch, all lowercase", "bluefinch"),
])
def test_a_value_described_by_its_use_is_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    "what i use for running is Brooks Ghost 15",
    "what i type fastest is my name",
    "the thing i need to buy is 2 kg of flour",
    "the number i type most is 0 because of spreadsheets",
    "the parcel the shop sent me last week was 2 days late",
    "what I type most is emails",
    "the thing I use to open jars is a rubber grip",
    "the thing my mum sent me was 1950s wedding photos",
    "the number the dentist texted me is 0161 496 0000 for bookings",
    "what the bank sent me is 2024 statements, all of them",
    "We changed the locks, the house number is 4821 now",
])
def test_a_clause_about_typing_or_sending_that_gives_no_value_is_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


# Numbers read out in groups, hyphened, or in the tens of the other languages whose digits are
# known; a dial's turns; a file protected by a value; a value one is told to try on what it opens;
# a security answer asked for by who checks one's identity, or looked back at by the next sentence.
@pytest.mark.parametrize("text,secret", [
    ("the shed padlock code is nine-one-seven-four", "nine-one-seven-four"),
    ("locker pin: forty, sixteen, then oh two", "forty, sixteen, then oh two"),
    ("mi pin es catorce, noventa, dos", "catorce, noventa, dos"),
    ("le code de la porte est vingt, trente, puis un deux", "vingt, trente, puis un deux"),
    ("the gun safe opens right to eighteen, left to forty, right to six", "eighteen"),
    ("gym locker: L 14 R 31 L 7, don't tell anyone", "R 31"),
    ("the combo for my locker is left 8, right 25", "right 25"),
    ("the payroll export is password protected with Marlin#2210", "Marlin#2210"),
    ("the archive's encrypted with tulipField88, pass it on to Sam", "tulipField88"),
    ("the backup drive is encrypted with: 'sparrow_41'", "sparrow_41"),
    ("the game console passkey is 771203 now", "771203"),
    ("passkey for the car's bluetooth: 5529", "5529"),
    ("enter 6619 at the bike store door", "6619"),
    ("try Osprey$41 on the vpn when you're in", "Osprey$41"),
    ("the building society asked for my first school and i said Hollins Grove", "Hollins"),
    ("the building  society asked where i was born and i said Penarth", "Penarth"),
    ("the helpdesk asked my favourite teacher to verify me and i said Mrs Okafor", "Okafor"),
    ("first car = Micra, pet's name = Pudding. those are my security answers everywhere", "Pudding"),
])
def test_a_credential_read_out_turned_or_tried_is_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    "turn left on 5th, right on 9th, then left at the lights",
    "the safe route home is right at 3 and then left at 5",
    "set the oven dial to 180, then turn it left to 200 for the last ten minutes",
    "we were twenty-two, thirty-one and forty when we moved",
    "the lock took forty, then fifty minutes to fix",
    "the zip is encrypted with AES256 so it's fine",
    "our wifi is protected with WPA3 now",
    "the workbook is password protected, ask Priya for it",
    "i set up a passkey on my google account yesterday",
    "passkeys are replacing passwords at work",
    "the dance combination is right 8, left 8, then right 4",
    "turn the washing machine dial left to 40, then right to 30",
    "is it safe? tyre pressures front L 32 R 32, rear L 30 R 30",
    "the pc is protected by Norton360",
    "the backups are encrypted using 7zip",
    "the shelf is secured with M10x50 bolts",
    "set the combination oven to 180, then 160",
    "use WD-40 on the hinges, not the lock",
    "try Python3 on the laptop before the tablet",
    "use 2024 for the file name",
    "my son asked where i was born and i said Leeds, he didn't believe me",
    "the doctor asked my mother's maiden name and i said Okafor",
    "the app asked my favourite colour for the theme and i said green",
    "the bank asked my favourite colour for the new card and i said purple",
    "the dating site asked my favourite film and i said Alien. my account is live now",
])
def test_turns_groups_and_values_that_open_nothing_are_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


def test_asked_topics_take_linear_time():
    import time

    for text in ("they asked where i was born, " * 3000, "support asked where i was born and i said x, " * 2000,
                 "safe " + "left to twenty two " * 10000, "protected with " * 5000,
                 "-e " + "DB_PASSWORD" * 8000, "-e DB_PASSWORD " * 6000):
        started = time.perf_counter()
        redact_secrets(text)
        assert time.perf_counter() - started < 3.0


# Secrets only named, kept or sealed elsewhere: a variable handed on by name to a program, a
# password manager's name, a ciphertext only its key opens, credentials in the plural described.
@pytest.mark.parametrize("text", [
    "podman run --rm -e REDIS_PASSWORD -p 6379:6379 redis:7",
    "it's all in 1Password, vault 'Ops', ask Dana if you can't open the safe",
    "we moved from LastPass to Bitwarden last spring",
    "smtp_password: !vault |\n      $ANSIBLE_VAULT;1.1;AES256\n      6438336136393762613461303938\n      3133373237356465623262660a",
    "kind: SealedSecret\nspec:\n  encryptedData:\n    token: AgBf8sK2pQ9wL4xZ7mN1vC3bT6yH0rJ5uE8iO2aS4dF7gH9jK1lZ3xC5vB7nM9==",
    "api_key: ENC[AES256_GCM,data:Zm9vYmFyYmF6cXV4,iv:q1w2e3r4t5y6=,tag:a1s2d3f4==,type:str]",
    "half of my passwords are reused, the audit says",
    "mein Passwort ist seit gestern gesperrt",                    # when, not what
    "la contraseña es desde 2019 la misma, lo sé",
])
def test_a_secret_named_kept_or_sealed_elsewhere_is_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


@pytest.mark.parametrize("text,secret", [
    ("podman run -e REDIS_PASSWORD=Sparrow!2291 -p 6379:6379 redis:7", "Sparrow!2291"),
    ("sshpass -p Quartz7Lake ssh admin@nas", "Quartz7Lake"),
    ("the passwords are Kettle99 and Fox12, one for each laptop", "Kettle99"),
    ("recovery words 1-4: velvet orbit candle raisin", "velvet orbit candle raisin"),
    ("encryptedData is empty in the template; the real password is Larch!884", "Larch!884"),
    ("mein Passwort ist jetzt Eisvogel!42", "Eisvogel!42"),
    # a review's probes against the first forms of these exemptions, in new words
    ("podman run -e SMTP_PASSWORD Lantern77 mailer", "Lantern77"),
    ("the NAS admin password: LastPass", "LastPass"),
    ("mysql:\n  root_password: !vault |\n    $ANSIBLE_VAULT;1.1;AES256\n    36613862386139663130343466643566\n"
     "  app_password: Quill!Harbor7", "Quill!Harbor7"),
    ("encryptedData:\n    password: WinterHarbour2024Plain", "WinterHarbour2024Plain"),
    ("password: ENC[AES256_GCM,data:Marble!42]", "Marble!42"),
    ("-----BEGIN PGP MESSAGE-----\nComment: the passphrase is Quokka!81\n\nhQEMA8x7yL2kP9qWAQf/aB3cD4eF5gH6iJ7k\n"
     "-----END PGP MESSAGE-----", "Quokka!81"),
    ("our guest passcodes are marigold and thistle this week", "marigold"),
])
def test_a_value_beside_those_forms_is_still_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    '"SmtpPassword": "@Microsoft.KeyVault(SecretUri=https://kv-mail.vault.azure.net/secrets/SmtpPassword/0f1e2d3c4b5a69788796a5b4c3d2e1f0)"',
    "db_password: ref+awssecrets://prod/orders#/password",
    "API_TOKEN=op://Engineering/ci-bot/credential",
])
def test_a_reference_into_a_vault_is_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


# Classes from blind_v11's dev half (2026-12-07, fourth session), each in new words.
@pytest.mark.parametrize("text,secret", [
    # a key drawn for the word
    ("🔑 ebay → Lighthouse&42 pls remember", "Lighthouse&42"),
    ("printer wifi 🔐 Marmalade_Sky9", "Marmalade_Sky9"),
    # a value worked out from a recipe, then given after "so"
    ("my phone PIN is our anniversary month twice, we married in june so it's 0606", "0606"),
    ("the garage keypad code is the house number doubled, so 1717.", "1717"),
    ("streaming login is the dog's name and my birth year plus a dollar sign, so Pepper1984$ if you need it",
     "Pepper1984$"),
    # a key printed in groups after "key" or a bare "code"
    ("cottage router: network Pinecone_24, key 7QH2-K9WX-4RTM, reboot it if it drops", "7QH2-K9WX-4RTM"),
    ("the voucher card's redemption code is P4QM-8XKT-L2ZV-93HN", "P4QM-8XKT-L2ZV-93HN"),
    # a card's security code told by how many digits it is
    ("the site wants the 3 digits on the back, they're 418", "418"),
    # digits keyed in with the keypad's own keys, where a door or a gate is named
    ("the courier should key 8842# on the panel by the side gate", "8842#"),
    ("building door: 3#9#1 then push hard", "3#9#1"),
    # a security question's answer after its name and a separator, in the common languages
    ("security question for the pension portal (childhood best friend): Tomasz", "Tomasz"),
    ("secret question — favourite uncle — I put Desmond", "Desmond"),
    ("Sicherheitsfrage Lieblingslehrer: Herr Brandl", "Brandl"),
    ("güvenlik sorusu (ilk evcil hayvan) — Pamuk", "Pamuk"),
    ("контрольный вопрос «кличка первой собаки» — Барон", "Барон"),
    ("question secrète : nom de la première école — j'ai mis Jules-Ferry", "Jules-Ferry"),
    ("the portal asked 'name of your first teacher' and I put Okonkwo", "Okonkwo"),
    # a word of the scripts written without spaces, with its value in the same token
    ("我的邮箱密码是Lotus8899", "Lotus8899"),
    ("会社のパスワードはMomiji2023です", "Momiji2023"),
    # a card's number grouped as cards print it, mistyped (no Luhn), where a card is named
    ("got the new debit card today. the number's 4716 2290 8813 5520, expiry 08/28", "4716 2290 8813 5520"),
    ("numéro de carte : 5412 7534 9821 0077", "5412 7534 9821 0077"),
    # an abbreviation's dots before its value; a value corrected
    ("P.I.N: 7.3.9.1", "7.3.9.1"),
    ("alarm code is 5561 no wait, it's 5516", "5516"),
    ("the bike lock combo is 2-9-4-1 sorry I mean 2-9-7-1", "2-9-7-1"),
    # a passphrase that is a sentence, article and all
    ("vault passphrase: the kettle sings before dawn", "the kettle sings before dawn"),
    # a one-time code as its message says it; a code that opens, in more languages
    ("the council texted 6 0 3 - 1 9 4, it's valid for 5 minutes", "6 0 3 - 1 9 4"),
    ("klatrehallen åpner døren med 5521 etter stengetid", "5521"),
    ("Bahçe kapısı 7702 ile açılıyor", "7702"),
    # a table whose header names a credential column
    ("host;login;wifi_key\nattic;ap-2;Quince_Harbor7\nbarn;ap-3;meadowlark", "meadowlark"),
    ("locker,owner,combo\n12,Ines,2931\n13,Kofi,4410", "4410"),
])
def test_credentials_of_blind_v11s_classes_are_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    # a paragraph break ends the context: a commit's header, then its message
    "commit 9c1e77b2a0f4d3e6b8a5c2d1e0f9a8b7c6d5e4f3\nAuthor: Sam Reyes <sam@example.net>\n"
    "Date:   Wed Mar 6 10:15:42 2024 -0500\n\n    rotate token cache on expiry",
    "sha256: 5f2b1c9e8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c is the image digest",
    # protocol versions, zone offsets, host lists
    "HTTP/2 403 Forbidden\nWWW-Authenticate: Basic realm=\"admin\", error=\"expired_token\"",
    "DJANGO_ALLOWED_HOSTS=api.example.org,10.1.2.3,localhost",
    # a credential's word quoted as a setting's value
    '{"grant_type": "refresh_token", "scope": "read"}',
    # a picture inlined as data
    "the avatar is data:image/jpeg;base64,/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAAMCAgMCAgMDAwMEAwMEBQgFBQQEBQoHBwYHDAoMCwsKCwsNDhIQDQ4RDg0LCxAWEBETFBUVFQwPFxgWFBgSFBUU — too big?",
    # a password manager named before its vault; a booking's confirmation code
    "the staging keys live in the shared Bitwarden vault, ask Priya",
    "confirmation code for the Lisbon flight is QK7T2M, seat 14C",
    # the scripts written without spaces: a sentence is no value, a comma ends the word's clause
    "Wi-Fiのパスワードは玄関の棚に置いてあるカードに書いてあります。",
    "银行让我改密码，我还没决定用什么，下周三之前要改好。",
    # a recipe's result that is an example, a keypad's hash first, a menu's star
    "the rule is 12 characters and a symbol, so Tulip2024! would fail the check",
    "dial *121# for your balance, the gate man said",
    "room #412 is next to the lift",
    # the security question named, with no answer after it
    "security question: favourite film",
    "my security question: which street did you grow up on?",
    "Security questions are pointless: people post their first pets online",
    "güvenlik sorusu nedir, unuttum",
    # a grouped number that is a parcel's, a mistyped number with no card named, an opening time
    "tracking for the card reader I ordered: 4716 2290 8813 5520",
    "the serial on the box is 4716 2290 8813 5520",
    "I work at I.B.M. 2 days a week",
    "the passphrase is the same one as the laptop",
    "the parking voucher is valid for 30 minutes",
    "butikken åpner kl 0900 på lørdag",
    "district,pincode\nKochi,682001\nPune,411001",
    "user,password_last_changed,pin_attempts\nines,2024-03-02,2",
])
def test_look_alikes_of_blind_v11s_classes_are_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


def test_a_word_of_apology_after_a_value_corrects_nothing():
    assert redact_secrets("my pin is 4471, sorry about the long message")[0] == \
        "my [redacted pin], sorry about the long message"


# A review of the forms above (its probes, in new words): look-alikes they first refused ...
@pytest.mark.parametrize("text", [
    "🔑 lessons from the retro: smaller PRs, earlier demos",
    "🔑 Plumber visit: Thursday 1015, job 77340",
    "Account reset finished. Standup got moved, so 1045 tomorrow.",
    "The shed code is on the fridge; lunch is at 1 so 1300 on the dot.",
    "Primary key 8C2D-41FA-9B7E shows up twice in the export",
    "Part code R7T2-M4K9-Z3Q8 is back in stock",
    "press 200# on the landline for the front desk",
    "The cabinet is 4*2*3 feet, fits by the garage door",
    "Deposit 950* for the locker unit (*refundable)",
    "Security questions: frankly, pointless",
    "Security question (optional) — skipped it",
    "秘密の質問：まだ決めていません",
    "Settings » Security question » Change",
    "The passphrase is a hassle to type on my phone",
    "A strong passphrase is a few random words strung together",
    "Notat kort: journalnummer 4410 2233 5566 7788 gjelder klagen",
    "Credit card statement, transaction ID 5123 0098 7765 4432, the refund",
    "Butiken öppnar 1000 på söndag",
    "Dükkan 0930'da açılıyor",
    "הסניף נפתח ב-0900",
    "暗証番号は6桁に変わりました",
    "パスワードは1Passwordに入れてあります",
    "会議は3時、パスワード変更は来週2025年1月に",
])
def test_look_alikes_a_review_of_those_forms_found_are_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


# ... and credentials beside their exemptions that must still be caught.
@pytest.mark.parametrize("text,secret", [
    ("the router password is under here\n\nFalcon!Ridge82", "Falcon!Ridge82"),
    ("Door code (updated)\n\n   6604", "6604"),
    ("the vault root token, please keep it out of any commit, 5e1f0a9c3b7d2e8f4a6c1b0d9e3f7a2c", "5e1f0a9c3b7d2e8f4a6c1b0d9e3f7a2c"),
    ('{"field": "password", "value": "Cobalt!Wave31"}', "Cobalt!Wave31"),
    ("API_PASSWORD=localhost,10.0.0.4,Zq8!vRt2", "Zq8!vRt2"),
    ("My PIN is +7731 on this keypad", "+7731"),
    ("the shop login password is HTTP/2x!", "HTTP/2x!"),
    ("key hidden as a picture: data:image/png;base64,c2stbGl2ZV8xMjM0NTY3ODlhYmNkZWZnaGlqa2w=",
     "c2stbGl2ZV8xMjM0NTY3ODlhYmNkZWZnaGlqa2w="),
    ("パスワードは「Tsubaki2024」です", "Tsubaki2024"),
    ("密码改成了Lantern8899", "Lantern8899"),
    ("WiFi密码还是harbor2046", "harbor2046"),
])
def test_credentials_beside_those_exemptions_are_still_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


# A second review's probes, in new words: look-alikes ...
@pytest.mark.parametrize("text", [
    "Hi Jo, the new printer is on the second floor\nSee you Monday, Sam",
    "region,code\nNorway,NO\nSweden,SE\nFinland,FI",
    "member,has_pin,active\nana,yes,no\nbo,no,yes",
    "I moved our team to the password manager in March, so 2021.",
    "Security question (first school) — Lloyds asked it again on the call",
    "Museet åpner med 2000 besøkende i helgen",
    "She texted me 0930 as the new start time",
    "The jersey has four numbers on the back: 1999, the year we won",
    "Tarjeta de transporte 2201 4477 9910 3356, recargada ayer",
    "🔑 Invoice: INV-48213 paid",
    "The passphrase is the weakest part of the whole backup plan",
    "密码是iOS18之后才能改的",
    "sand the gate with 180# grit first",
])
def test_look_alikes_a_second_review_found_are_kept(text):
    assert redact_secrets(text)[0] == text, redact_secrets(text)[0]


# ... and credentials its narrowing must keep catching.
@pytest.mark.parametrize("text,secret", [
    ("Qz7mWp2kT9\n\nthat's the wifi password for the flat", "Qz7mWp2kT9"),
    ("密码是8位数字：31415926", "31415926"),
    ("パスワードは10文字にした：Koi_Pond_2025", "Koi_Pond_2025"),
    ("Aunt May's code 7739#", "7739#"),
    ("家里wifi密码：bluewhale", "bluewhale"),
])
def test_credentials_a_second_review_asked_to_keep_are_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


def test_a_long_list_of_hosts_takes_linear_time():
    import time

    text = "export NO_PROXY=" + ",".join(f"10.{i}.0.1" for i in range(60)) + ",.svc,.cluster.local,X_Y"
    started = time.perf_counter()
    redact_secrets(text * 20)
    assert time.perf_counter() - started < 3


@pytest.mark.parametrize("text", [
    "code 4471", "the gate code is 2580", "pass: Sunrise#91", "my pass is Harbor7!x so use it",
    "door code 1957# no wait 1975#", "locker,owner,combo\n12,Ines,2931\n13,Kofi,4410",
    "the keybox code is the house number doubled, so 1717.",
])
def test_findings_report_what_a_bare_code_or_pass_is(text):
    kinds = {finding.kind for finding in find_secrets(text)}
    assert kinds and not kinds & {"code", "pass"}, kinds


# blind_v12's dev half (developers' configurations and logs): what a setting left empty, a
# public key, or a log line's time gives away is nothing. Tested in other words than the set's.
@pytest.mark.parametrize("text", [
    "SMTP_PASSWORD=\nSMTP_HOST=mail.internal\nSMTP_PORT=2525",
    "redis:\n  password:\n    existingSecretName: cache-auth\n  replicas: 3",
    "MAIL_PASSWORD=\n\nwhich of these do I have to fill in before the first deploy?",
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBGXk2c8BEADk7x2Lw9RzqPn4TfVh3sJ0bYcA1eGm6oKdQ8uWzNy5rHtX\n"
    "=Qm2z\n-----END PGP PUBLIC KEY BLOCK-----\nthat's the package signing key, safe to publish?",
    "[Peer]\nPublicKey = Hq3Vn8Lw2Ry7Tk1Mz5Pb9Xc4Jd6Fs0Ga8Eu2Wi7Yo1K=\nEndpoint = vpn.example.net:51820",
    "define( 'MAIL_PASSWORD', 'mail_password_here' ); // from the sample config",
    "SLACK_BOT_TOKEN=<SLACK_BOT_TOKEN_V2>",
    "SMTP_PASSWORD=\n[smtp]\nhost=mail.internal",
    "2025-02-03T17:42:19.551Z INFO session token refreshed\n"
    "2025-02-03T17:42:20.009+01:00 WARN refresh token near expiry",
])
def test_look_alikes_of_blind_v12s_configurations_are_kept(text):
    assert find_secrets(text) == [], redact_secrets(text)[0]


@pytest.mark.parametrize("text,secret", [
    ("SMTP_PASSWORD=\n  Quill7!harbour", "Quill7!harbour"),
    ("mail:\n  password:\n    Lantern$Fig42", "Lantern$Fig42"),
    ("[Interface]\nPrivateKey = Hq3Vn8Lw2Ry7Tk1Mz5Pb9Xc4Jd6Fs0Ga8Eu2Wi7Yo1K=",
     "Hq3Vn8Lw2Ry7Tk1Mz5Pb9Xc4Jd6Fs0Ga8Eu2Wi7Yo1K="),
    ("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2lq\n-----END CERTIFICATE-----\n"
     "-----BEGIN EC PRIVATE KEY-----\n"
     "MHcCAQEEIBkP3xT9mQ2vL8nR4wY7zA1cE6fH0jK5sU2oI9pG3bN7\n-----END EC PRIVATE KEY-----",
     "MHcCAQEEIBkP3xT9mQ2vL8nR4wY7zA1cE6fH0jK5sU2oI9pG3bN7"),
    ("token: 2025-02-03T17:42:19Zq8Lm", "2025-02-03T17:42:19Zq8Lm"),
    ("define( 'MAIL_PASSWORD', 'Fennel_here7' );", "Fennel_here7"),
    # (a review of those exemptions: each of these was let through by a first form)
    ('{"public_key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "env": "prod"}', "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("Your temporary password is:\n\nmarmalade\n\nPlease change it after you sign in.", "marmalade"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\n"
     "Comment: cold wallet private key KzT8mQ2vL9nR4wY7zA1cE6fH0jK5sU2oI9pG3bN7xQ4\n\n"
     "mQINBGXk2c8BEADk7x2Lw9RzqPn4TfVh3sJ0bYcA1eGm6oKdQ8uWzNy5rHtX\n-----END PGP PUBLIC KEY BLOCK-----",
     "KzT8mQ2vL9nR4wY7zA1cE6fH0jK5sU2oI9pG3bN7xQ4"),
    ("my password:\n  otter=Maple31", "otter=Maple31"),
    ("2023-11-30T09:12:44Z is the password I set for the router", "2023-11-30T09:12:44Z"),
])
def test_credentials_beside_those_configurations_are_still_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


# blind_v12's dev half, second pass (this session): a value that belongs to another entry of
# the configuration, markup, lookups, digests, file names, a public JSON Web Key, a credential
# said to be somewhere else. Tested in other words than the set's.
@pytest.mark.parametrize("text", [
    "redis:\n  auth:\n    passwordKey: redis-password\n  master:\n    resources:\n      memory: 512Mi",
    "[profile build]\nmfa_serial = arn:aws:iam::210987654321:mfa/ci-bot\nduration_seconds = 7200",
    "app:\n  image: nginx:1.27.1\n  env:\n    SMTP_PASSWORD: ${SMTP_PASSWORD:?set it in .env}",
    "db:\n  env:\n    MYSQL_DATABASE: ${MYSQL_DATABASE:-shop}\n    MYSQL_PASSWORD: ${MYSQL_PASSWORD}",
    "<repository>\n  <host>repo.internal</host>\n  <login>${env.REPO_USER}</login>\n"
    "  <token>${env.REPO_TOKEN}</token>\n</repository>",
    'wget --header "Authorization: Bearer $API_TOKEN" "${BASE_URL}/v1/exports/${EXPORT_ID}/download"',
    "pulled ghcr.io/acme/api@sha256:9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d — "
    "should I pin the token service image the same way?",
    "ED25519 key fingerprint is SHA256:q7Zc1Lm9Xw2Rt5Yk8Nb3Vd6Hf0Gj4Sa1Pe7Uo2Ki9Mn.",
    "sha1 (ubuntu-24.04-server-amd64.iso) = 2b7c1a4f9e0d3c6b8a5f2e1d0c9b8a7f6e5d4c3b, password prompt never shows up",
    "the API key field takes a 40-hex-char string from the vendor portal",
    "SSID Meridian_Guest_2G, the password is printed on the whiteboard",
    'keys from /.well-known/jwks.json: {"keys":[{"kty":"EC","crv":"P-256","kid":"7f3a9c2e1b4d",'
    '"x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]} '
    "— do clients cache the token signing keys?",
    "hit Ctrl+Shift+Esc, then the password manager tab",
    "Stripe keys start with sk_live_ or sk_test_, never paste either into chat",
])
def test_look_alikes_of_blind_v12s_second_pass_are_kept(text):
    assert find_secrets(text) == [], redact_secrets(text)[0]


@pytest.mark.parametrize("text,secret", [
    # a credential's own entry, or entries under a credential's name, still give values
    ("redis:\n  password:\n    primary: Quartz9!lane\n    replica: Fjord4#mill", "Quartz9!lane"),
    ("[passwords]\nalice = Tundra8$kite", "Tundra8$kite"),
    ("the admin passwords:\nstaging: Marble7!cove", "Marble7!cove"),
    ("env:\n  - name: SMTP_PASSWORD\n    value: Cobalt3#reed", "Cobalt3#reed"),
    ('variable "db_password" {\n  default = "Saffron6!gate"\n}', "Saffron6!gate"),
    ("wifi_password: see below\nguest: Pebble5!moor", "Pebble5!moor"),
    # markup and lookups with a value in them
    ("<password>Lumen4!rock</password>", "Lumen4!rock"),
    ("<token>\n  <value>Xq7Lm2Vt9Kp4Rz8Wn3Hs</value>\n</token>", "Xq7Lm2Vt9Kp4Rz8Wn3Hs"),
    ("DB_PASSWORD: ${DB_PASSWORD:-Harbor_Lights_42}", "Harbor_Lights_42"),
    ("the wifi password is ${HOME}Cedar77!", "Cedar77!"),
    # a JSON Web Key with its private part is a private key
    ('my signing jwk: {"kty":"RSA","kid":"a1","n":"UuNHyDMDihf6qQniBvbr5X6QJiwqou0GsfXPPNkFNBeb7SWt9GvXyvD",'
     '"e":"AQAB","d":"Xk9mP2qL7vR4wT8yZ3nB6cD1fG5hJ0kMaB3dE5fG7hJ9kL2"}',
     "Xk9mP2qL7vR4wT8yZ3nB6cD1fG5hJ0kMaB3dE5fG7hJ9kL2"),
    # said to be somewhere, then given, or given before "in case"
    ("the password is on the sticker: Walnut8!brook", "Walnut8!brook"),
    ("Pixel4#harbor is the password in case the laptop asks", "Pixel4#harbor"),
])
def test_credentials_beside_the_second_pass_are_still_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    "kind: SealedSecret\nspec:\n  encryptedData:\n    api_token: "
    "AgC4q9Lm2Vt7Kp1Rz8Wn3Hs6Yd0Fj5Gb2Ne9Mc4Xa7Tu1Io8Pk3Lq6Zr0Sw5Vy2Ex9Db4Hf7Jg1Kh6Nm3Qp8Rt2Uv5Wx0Yz==",
    "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAq7Zc1Lm9Xw2Rt5Yk8Nb3Vd6Hf0Gj4Sa1Pe7Uo2Ki9MnQ4=\n"
    "-----END PUBLIC KEY-----\n"
    "that's the verification key for the signed webhook codes, paste it in the wiki",
    "[servers]\nremote_user=deploy\nprivate_key_file=~/.ssh/deploy_ed25519\nwhy does it still ask for a password?",
    "Dein Passwort läuft am 3. März 2025 ab? Nein: your password will expire on 3 March 2025, change it before then",
    "das Netz heißt Speedport_W724V_1A2B, das Kennwort liegt unter der Tastatur",
    "SMTP_PASSWORD=changeme-before-deploy  # the real one comes from the vault",
    "retro notes\n- PIN change screen: nobody finds it\n- password recovery emails land in spam",
])
def test_look_alikes_of_the_second_pass_in_other_forms_are_kept(text):
    assert find_secrets(text) == [], redact_secrets(text)[0]


@pytest.mark.parametrize("text,secret", [
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\nComment: the vault PIN is 4471\n\nmQINBGXk2c8BEADk7x2Lw9\n"
     "-----END PGP PUBLIC KEY BLOCK-----", "4471"),
    ("private_key=Xk9mP2qL7vR4wT8yZ3nB6cD1fG5hJ0kMaB3dE5fG7h", "Xk9mP2qL7vR4wT8yZ3nB6cD1fG5hJ0kMaB3dE5fG7h"),
    ("password_file=Xq7/mP2q!Lv", "Xq7/mP2q!Lv"),
    ("the PIN reset to 0000 after the update, I set it to 7316 again", "7316"),
    ("SMTP_PASSWORD=changeme42", "changeme42"),
    ("das Kennwort ist Tulpe!Regen47, es steht auch hinten auf dem Router", "Tulpe!Regen47"),
])
def test_credentials_beside_the_second_pass_in_other_forms_are_still_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    'GET /v1/api-keys returned [{"id":"key_7Q2M","name":"ci","prefix":"ak_live_","last_four":"9x2Q",'
    '"created_at":"2025-01-02T03:04:05Z"}]',
    'the JWT header decodes to {"typ":"JWT","alg":"ES256","kid":"5c1e9a7f3b2d8e40"}, so which key signed it?',
])
def test_json_without_spaces_that_gives_no_secret_is_kept(text):
    assert find_secrets(text) == [], redact_secrets(text)[0]


@pytest.mark.parametrize("text,secret", [
    ('the oauth app: {"client_id":"app-7","client_secret":"Xk9mP2qL7vR4wT8yZ3nB6c"}', "Xk9mP2qL7vR4wT8yZ3nB6c"),
    ('wifi password for the shed router {"ssid":"ShedNet","value":"Gorse4!lane"}', "Gorse4!lane"),
    ('the api token, as the portal shows it: {"name":"ci","token":"Lq8Vt2Xm9Kp4Rz7Wn3Hs6Yd1"}',
     "Lq8Vt2Xm9Kp4Rz7Wn3Hs6Yd1"),
    # (a session's id as a member was found by nothing before; now by the session cookie's pattern)
    ('session cookie for the test account {"session_id":"f3a9c2e1b4d87a6f5e3c2b1a9d8e7f6a"}',
     "f3a9c2e1b4d87a6f5e3c2b1a9d8e7f6a"),
    ("sessionid: 9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e", "9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e"),
])
def test_json_without_spaces_that_gives_a_secret_is_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text,secret", [
    # bytes written apart under a credential's name ("Qu!ll_7734" in hex)
    ("sending the wifi password as hex so the chat app leaves it alone: 51 75 21 6c 6c 5f 37 37 33 34",
     "51 75 21 6c 6c 5f 37 37 33 34"),
])
def test_a_credential_in_hex_bytes_written_apart_is_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    "the scores this season were 12 34 56 78 21 43 65 87, what's the average?",
    "packet capture shows 47 45 54 20 2f 20 48 54 54 50 at the start, is that a plain GET?",
    "my PIN is safe, but the router's MAC starts 50 c7 bf 4f 2a 10 7e 01",
])
def test_numbers_or_bytes_written_apart_that_hide_nothing_are_kept(text):
    assert find_secrets(text) == [], redact_secrets(text)[0]


def test_a_value_cut_at_a_hyphen_is_finished_by_the_next_message():
    first, findings = redact_secrets("the vpn password is Lantern-")
    assert findings and "Lantern" not in first
    assert follows_credential(first)[0]
    second, findings = redact_secrets("Quay#204 (sorry, sent too soon)", continues=True)
    assert findings and "Quay#204" not in second


# A review of the second pass (a helper that read the diff, not the data) let these through its
# first forms; each exemption was narrowed until none is.
@pytest.mark.parametrize("text,secret", [
    ('resource "github_actions_secret" "x" {\n  secret_name     = "DB_PASSWORD"\n  plaintext_value = "Summer2024"\n}',
     "Summer2024"),
    ('[\n  {\n    "ParameterKey": "DBPassword",\n    "ParameterValue": "Tulip-2024"\n  }\n]', "Tulip-2024"),
    ("- name: ADMIN_PASSWORD\n  defaultValue: Summer2024", "Summer2024"),
    ('PASSWORDS = {\n    "prod": "Summer2024",\n    "staging": "Winter2023",\n}', "Summer2024"),
    ("passwords: &pw\n  prod: Summer2024\n  staging: Winter2023", "Summer2024"),
    ("bank_pin_length: 4\nbank: 4471", "4471"),
    ("<init-param>\n    <param-name>password</param-name>\n    <param-value>Summer2024</param-value>\n</init-param>",
     "Summer2024"),
    ("<wifi>\n  <ssid>HomeNet</ssid>\n  <psk>sunflower88</psk>\n</wifi>", "sunflower88"),
    ("sunflower88 - password is in lowercase", "sunflower88"),
    ("guest network: Luna_5G / bluebird77 (password is on the card)", "bluebird77"),
    ("router: Bluebird77 pw is in the app as well", "Bluebird77"),
    ("Tiger$King - that's the wifi password", "Tiger$King"),
    ('{"kty":"oct","kid":"k1","value":"Kx9mPq2vL7Tz4wQ8aB3cD5eF7gH9iJ1kL3mN5oP7qR9sT"}',
     "Kx9mPq2vL7Tz4wQ8aB3cD5eF7gH9iJ1kL3mN5oP7qR9sT"),
    ('{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",'
     '"y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","priv":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}',
     "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"),
    ("password: ChangeMe-Admin", "ChangeMe-Admin"),
    ("DB_PASSWORD=changeme_prod", "changeme_prod"),
    ("password: AgBx7Kq9Lm2Np4Rs6Tu8Vw0Yz1Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab9Cd1Ef3Gh5Ij7Kl9Mn1Op3Qr5==",
     "AgBx7Kq9Lm2Np4Rs6Tu8Vw0Yz1Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5Yz7Ab9Cd1Ef3Gh5Ij7Kl9Mn1Op3Qr5=="),
    ("jane@x.com sha256:Sunflower2024abc", "Sunflower2024abc"),
    ("aws_secret sha1:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("jane@x.com Shift+Q7x!", "Q7x!"),
    ("use kitty_cat_ as the password", "kitty_cat_"),
    ("password: Ab9x/Qz7.pem", "Ab9x/Qz7.pem"),
    # (the author's last read: a value in angle brackets alone is no tag)
    ("<Xk9mP2qL7> that's the new wifi password", "Xk9mP2qL7"),
    ("new router pw below\n<Kx9mPq2vL7>", "Kx9mPq2vL7"),
    ("keep this safe: <Zq8Lm2Vt9K>", "Zq8Lm2Vt9K"),
])
def test_credentials_a_review_of_the_second_pass_found_are_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


# A second review (another helper, reading the narrowed code) found these; each is closed.
@pytest.mark.parametrize("text,secret", [
    ("mongodb:\n  auth:\n    rootPassword: root2024\n    replicaSetKey: rskey2024", "rskey2024"),
    ("redis:\n  password: hq72plx\n  masterauth: sunflower2024", "sunflower2024"),
    ("password: hunter2024\nold: hunter2023", "hunter2023"),
    ("alarm:\n  pin: 4471\n  duress: 4472", "4472"),
    ("passwords: (updated)\nnetflix: flix2024\nspotify: spot2024", "flix2024"),
    ('{"kty":"oct","kid":"hmac1","k":"GawgguFyGrWKav7AX4VKUg"}', "GawgguFyGrWKav7AX4VKUg"),
    ('{"Parameter":{"Name":"/prod/db/password","Type":"SecureString","Value":"tiger2024"}}', "tiger2024"),
    ('{"sid":"xK8mQ2zL9pR4vT7wY3nB","ok":1}', "xK8mQ2zL9pR4vT7wY3nB"),
    ("my password is 7-purple-monkey-dishwasher", "7-purple-monkey-dishwasher"),
    ('test: ["CMD", "redis-cli", "-a", "${REDIS_PASSWORD:-redis2024}", "ping"]', "redis2024"),
    ("network HomeNet Tiger2024, password is on the sticker", "Tiger2024"),
])
def test_credentials_a_second_review_of_the_second_pass_found_are_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    "session_id: YOUR_SESSION_ID_HERE",
    "sessionid: django.contrib.sessions.backends.db",
    "session_id: chat-2024-06-12-morning (the conversation I had with support)",
    "wireshark: 55 73 65 72 2d 41 67 65 6e 74 3a 20 63 75 72 6c 2f 38 2e 30 (User-Agent: curl/8.0), auth header after",
    "the password is Self-",
    "redis:\n  password: ${REDIS_PASSWORD}\n  port: 6379\n  db: 2",
])
def test_look_alikes_a_second_review_of_the_second_pass_found_are_kept(text):
    assert find_secrets(text) == [], redact_secrets(text)[0]


# A third review: JSON is parsed and every element read; code that holds JSON is not JSON.
@pytest.mark.parametrize("text,secret", [
    ('{"jsonrpc":"2.0","method":"user.login","params":["Admin","Summer2024x"],"id":1}', "Summer2024x"),
    ('"command":["redis-server","--requirepass","Summer2024x"]', "Summer2024x"),
    ('{"recovery_codes":["Kq9w-Lm2x-Tr7P"]}', "Kq9w-Lm2x-Tr7P"),
    ('login("admin","Summer2024x",opts={"retry":3})', "Summer2024x"),
    ('login ok: {"user":{"name":"ann"},"session":{"id":"s3Kq9Lm2Xp7Rt4Vw8Yz1","ttl":3600}}', "s3Kq9Lm2Xp7Rt4Vw8Yz1"),
    ('{"reset_id":"Kq9wLm2xTr7PzXq81Lm"}', "Kq9wLm2xTr7PzXq81Lm"),
    ("alarm:\n  pin: 4417\n  mode: 9921", "9921"),
    ("password: arn:aws:iam::123456789012:user/Summer2024x", "Summer2024x"),
    ("token: see /etc/app/Kq9wLm2xTr7P/token.json", "Kq9wLm2xTr7P"),
])
def test_credentials_a_third_review_found_are_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", [
    '{"session_id":"3f2a9c1e-7b4d-4e8a-9f0c-1d2b3a4f5e6d","user_id":"u1","message":"hi"}',
    "Bug report: session_id: 20240612T081502Z-7f3a, the agent lost the thread",
])
def test_a_chats_or_a_traces_session_id_is_kept(text):
    assert find_secrets(text) == [], redact_secrets(text)[0]


@pytest.mark.parametrize("token", ["proxy=localhost,127.0.0.1", "hosts=db1.internal,10.0.0.7",
                                   "NO_PROXY=localhost,127.0.0.1"])
def test_a_list_of_hosts_under_a_plain_name_is_no_credentials_shape(token):
    # (a second, stricter _SETTING_NAME defined later in the module had replaced the one the host
    # list reads, so a plain name such as "proxy" made its hosts credential-shaped)
    assert not credential_shaped(token)
