"""The secret detector judged as a class, on sentences written for this file alone (none is a
benchmark phrasing, and none was used to shape the word lists): credentials a person might
mention in passing must be caught, ordinary sentences full of numbers must come through as
they are. The two lists measure the two ways the detector can fail, so both are long."""
import base64

import pytest

from memoryapp.credentials import normalise
from memoryapp.models import Event, Memory
from memoryapp.safety import find_secrets, redact_secrets
from tests.conftest import as_tenant
from tests.workers.helpers import at, ingest


def _hides(text: str, secret: str) -> bool:
    redacted = normalise(redact_secrets(text)[0])[0].replace(" ", "").lower()
    return normalise(secret)[0].replace(" ", "").lower() not in redacted


_KEY_BODY = base64.b64encode(bytes(range(7, 250, 3)) * 2).decode()

# (sentence, the secret in it)
_PADDED = base64.b64encode(b"code 61902").decode()  # short, padded: "Y29kZSA2MTkwMg=="
CREDENTIALS = [
    # 2026-12-03: software keys, a card's security code, a PUK, keys in letter groups, a URL's
    # password without a user, a short padded base64 blob, digits spaced with dots
    ("the serial key for the synth plugin: 7KQ2M-XW9RT-PLM4B-88HZQ", "7KQ2M-XW9RT-PLM4B-88HZQ"),
    ("registration key for the old scanner software is 1045-7782-3390-1146", "1045-7782-3390-1146"),
    ("the app password for my backup mailbox is wxyz-pqrs-tuvw-abcd", "wxyz-pqrs-tuvw-abcd"),
    ("postgres://:Lantern_Moss4@db.local:5432/app is what the dashboard uses", "Lantern_Moss4"),
    ("the PUK for my daughter's sim is 51907733", "51907733"),
    ("cvv on the new debit card: 913", "913"),
    ("our lock box by the back door opens with 3318", "3318"),
    (f"{_PADDED} is the thing to type at the side door", _PADDED),
    ("das Kennwort ist Moorhuhn_1999$", "Moorhuhn_1999$"),
    ("the sms code was 7 . 1 . 9 . 4 . 0 . 2", "7 . 1 . 9 . 4 . 0 . 2"),

    # credential words in other languages, inflected or compounded
    ("das WLAN-Passwort im Ferienhaus lautet Strandkorb#2211", "Strandkorb#2211"),
    ("mein Bankkennwort ist Zugspitze88!", "Zugspitze88!"),
    ("der Tresorcode im Büro ist 91827", "91827"),
    ("die Handy-PIN von Oma ist 3904", "3904"),
    ("unser Garagentorcode: 7713", "7713"),
    ("het wachtwoord van de NAS is Tulpenveld_42", "Tulpenveld_42"),
    ("mijn pincode is 6082, vergeet het niet", "6082"),
    ("moje hasło do poczty to Kasztan!2019", "Kasztan!2019"),
    ("kod do furtki to 5531", "5531"),
    ("le code de la porte d'entrée est 8C214", "8C214"),
    ("mon code PIN de carte bleue est 7420", "7420"),
    ("la clave del router es Naranja_Azul9", "Naranja_Azul9"),
    ("el código de la alarma es 4467", "4467"),
    ("il PIN del bancomat è 2586", "2586"),
    ("a senha do wifi da casa é Jabuticaba#77", "Jabuticaba#77"),
    ("min kode til cyklen er 4418", "4418"),
    ("Passwörter für das Intranet: Rheinwiese_73", "Rheinwiese_73"),
    # a value with an access verb, no credential word at all
    ("2718 gets me into the bike shed", "2718"),
    ("I use Falcon_Ridge9 to log into the school portal", "Falcon_Ridge9"),
    ("punch in 6140 on the side entrance and it clicks open", "6140"),
    ("the storage unit keypad takes 339812", "339812"),
    ("to sign in at the library type Wm8Lq2Zp", "Wm8Lq2Zp"),
    ("Harbourview77! lets me into the router settings", "Harbourview77!"),
    ("9055 disarms the studio alarm", "9055"),
    ("the padlock on the shed opens with 0-7-3-5", "0-7-3-5"),
    ("das Tablet entsperrt man mit 1379", "1379"),
    # the value first, then what it is, without "is"
    ("Otter!Basket31, that's the login for the pension site", "Otter!Basket31"),
    ("5512 — the PIN for the work phone", "5512"),
    # normalised first: spaced letters, look-alike letters, zero-width, full-width, leetspeak
    ("p a s s w o r d for the NAS: Quill7Gravy", "Quill7Gravy"),
    ("my p@ssw0rd for the forum is Bramble22", "Bramble22"),
    ("the раsscode for the kiosk is 4401", "4401"),                          # Cyrillic р and а
    ("alarm c\u200bode: 8\u200b8\u200b0\u200b2", "8\u200b8\u200b0\u200b2"),
    ("ＰＩＮ ｆｏｒ ｔｈｅ ｓａｆｅ ３３７１", "３３７１"),
    ("bike lock combination 3 9 1 4 5", "3 9 1 4 5"),
    ("P I N : 4 4 2 1", "4 4 2 1"),                                          # the word spelt out too
    ("p_a_s_s_w_o_r_d = Lemon77", "Lemon77"),
    ("stored as hex: " + "password: Sunflower!9".encode().hex(), "password: Sunflower!9".encode().hex()),
    # keys and tokens by their look: entropy without a keyword
    ("hold onto this for me: q8ZtW2mR7xKp4LvN9sYbE3", "q8ZtW2mR7xKp4LvN9sYbE3"),
    ("the webhook secret is 3f9c0a7b21d84e6f9a0c5b7d2e1f4a6c", "3f9c0a7b21d84e6f9a0c5b7d2e1f4a6c"),
    (f"old laptop key, no header:\n{_KEY_BODY[:64]}\n{_KEY_BODY[64:128]}\n{_KEY_BODY[128:150]}",
     _KEY_BODY[128:150]),
    # base64-wrapped
    ("in base64 so it isn't readable: " + base64.b64encode(b"pin 7781 for the garage").decode(),
     base64.b64encode(b"pin 7781 for the garage").decode()),
    ("saved it encoded: " + base64.b64encode(b"Lavender!Moon42").decode(),
     base64.b64encode(b"Lavender!Moon42").decode()),
    # described in words
    ("the answer to my security question about my first car is Corolla", "Corolla"),
    ("the one-time passcode from the bank is 918273", "918273"),
    ("backup codes for my email: 8812-4471, 9930-1125", "8812-4471"),
    ("Sicherheitsfrage Lieblingslehrer: Brennecke", "Brennecke"),
    # A second batch, written after the first had been run (so these were not there to shape it).
    ("Bitwarden master pw = Glacier-Tundra-Owl-88", "Glacier-Tundra-Owl-88"),
    ("my iPhone passcode, in case I'm ever locked out: 190482", "190482"),
    ("2FA backup: 7781 2290 4417 5523", "7781 2290 4417 5523"),
    ("Apple ID: me@icloud.com, pass Sunrise#91", "Sunrise#91"),
    ("das Kennwort für den Router steht nicht mehr auf dem Zettel, es ist jetzt Wolke7Blau", "Wolke7Blau"),
    ("el PIN de la tarjeta de débito lo cambié a 6671", "6671"),
    ("ho cambiato la password in Gelato!2024", "Gelato!2024"),
    ("you'll need 4417# to get through the lobby door", "4417#"),
    ("Mum's bank PIN — 2231 — don't tell her I wrote it here", "2231"),
    ("le digicode c'est 4B12A", "4B12A"),
    ("remember for me that the storage locker is 7-19-33", "7-19-33"),
    ("door's 2201 btw", "2201"),
    ("the Sky box parental lock number is 5590", "5590"),
    ("Tajne hasło do sejfu: 3312", "3312"),
    ("first half of the API key is ak9Xq2 and the second half is Lm7Pz4", "Lm7Pz4"),
    ("What's the wifi password? It's Seashell_44", "Seashell_44"),
    ("Mon NIP est 4471", "4471"),
    ("to get in after hours, 4455 on the keypad", "4455"),
    # A third batch, written after the second had been run; its misses led to the class fixes
    # (verification words, reflexive "let herself in", an e-mail beside a value, a colon after
    # "three words"), and the one still missed is marked.
    ("jot this down: the neighbours' key safe is 6 2 0 9", "6 2 0 9"),
    ("Wachtwoord voor de kluis: Zeemeeuw!81", "Zeemeeuw!81"),
    ("the login to the pharmacy portal is my email plus Orchard_Lane4", "Orchard_Lane4"),
    ("code d'accès au parking : 7331", "7331"),
    ("A senha do portão é 2468", "2468"),
    ("my verification number came through as 44 08 91", "44 08 91"),
    ("the childminder uses 8812 to let herself in", "8812"),
    ("Netflix: marta.l@mail.com / Biscuit_Tin9", "Biscuit_Tin9"),
    ("kod PIN do karty to 1122", "1122"),
    ("the passphrase is three words: copper kettle morning", "copper kettle morning"),
    ("my Xbox passcode is 707070", "707070"),
    ("I always type Marigold2019 when the bank app asks me to sign in", "Marigold2019"),
    ("Das Zugangspasswort zur Cloud: Nordlicht_77", "Nordlicht_77"),
    ("the alarm panel code, if it beeps, is 5-0-5-0", "5-0-5-0"),
    ("mot de passe de la box : Cerise44!", "Cerise44!"),
    pytest.param("the 4 digits for the front gate are 3 7 3 7", "3 7 3 7", marks=pytest.mark.xfail(
        strict=True, reason="known miss: 'gate' is no access word (an airport's gate 12 is no lock)")),
    ("mi clave de la banca online es Tortuga_88", "Tortuga_88"),
    ("PIN-Code fürs Auto-Radio: 4491", "4491"),
    ("dG9rZW46IGdocF9hYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejEyMzQ1Ng==",
     "dG9rZW46IGdocF9hYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejEyMzQ1Ng=="),
    ("keep safe pls: xK29pQmW4vL8nR3tZy7HbC", "xK29pQmW4vL8nR3tZy7HbC"),
    # A fourth batch, run once as written: 16 of 20 caught, 18 once "secret phrase", quoted
    # values and "authenticate" were added; the two still missed are marked.
    ("my council tax online account: username jb1977, password Heather&Moss3", "Heather&Moss3"),
    ("the Tesla app PIN, don't laugh, is 1111 2222", "1111 2222"),
    ("o código que chegou por SMS foi 604 221", "604 221"),
    ("Il codice OTP è 839201", "839201"),
    ("het toegangscodetje voor de poort is 3108", "3108"),
    pytest.param("my old Hotmail one was Sunflower1985!", "Sunflower1985!", marks=pytest.mark.xfail(
        strict=True, reason="known miss: no credential word, only 'my old Hotmail one'")),
    ("the secret phrase for the escape room booking is 'blue heron at midnight'", "blue heron at midnight"),
    ("shed padlock: 0 9 1 2", "0 9 1 2"),
    ("the parking garage gate opens when you key in 7762", "7762"),
    ("Mein Sperrcode fürs Tablet ist 5 5 8 2", "5 5 8 2"),
    ("hasło do WiFi w biurze: Kawa_z_Mlekiem7", "Kawa_z_Mlekiem7"),
    ("pass for the staff area is 2K9Q-77", "2K9Q-77"),
    ("ＭＹ ＰＡＳＳＷＯＲＤ ＩＳ Ｒｏｓｅ８８", "Ｒｏｓｅ８８"),
    ("pin ist 6 6 4 0, bitte merken", "6 6 4 0"),
    ("cl\u200bave: Mariposa#12", "Mariposa#12"),
    ("use 0x5F3759DF-Bz91Qm to authenticate the old NAS", "0x5F3759DF-Bz91Qm"),
    ("my recovery key for the laptop drive is 2231-8890-1174-6652", "2231-8890-1174-6652"),
    ("the answer I set for 'first concert' is Oasis", "Oasis"),  # (a known miss until the topic was read)
    ("Bike lock's combo - 8 3 1 7", "8 3 1 7"),
    ("I get into the work laptop with Pebble.Storm.61", "Pebble.Storm.61"),
    # 2026-12-04: the answer to a security question named in French, Spanish, Italian,
    # Portuguese or Polish, and a code for an intercom (none of these sentences is in a bench set)
    ("pour la question de sécurité de la banque, ma réponse secrète est Capucine88", "Capucine88"),
    ("la respuesta de seguridad que puse es Tortuga_Lenta", "Tortuga_Lenta"),
    ("risposta alla domanda di sicurezza: Pinocchio1970", "Pinocchio1970"),
    ("minha resposta para a pergunta secreta é Jabuticaba7", "Jabuticaba7"),
    ("odpowiedź na pytanie bezpieczeństwa: Burek2005", "Burek2005"),
    ("the intercom downstairs takes 5140 then the bell", "5140"),
    ("kod do domofonu u babci: 1278K", "1278K"),
    # 2026-12-04: a password given to a program (a client's glued flag, --password, the
    # variables clients read), and "password" in Japanese, Chinese and Korean
    ("can you check why mysqladmin -h db.internal -u admin -pW1ndmill_77 status hangs", "W1ndmill_77"),
    ("backup job runs pg_dump with PGPASSWORD=Quokka-Tide-41 in the cron line", "Quokka-Tide-41"),
    ("the deploy script calls ./sync --password Marble#Fox19 every night", "Marble#Fox19"),
    ("家のWi-Fiのパスワードは KumoNeko2024 だよ", "KumoNeko2024"),
    ("我的邮箱密码是 Panda!0815", "Panda!0815"),
    ("회사 비밀번호: Seoul_Rain77", "Seoul_Rain77"),
    ("log in with 5527 on the kiosk by the entrance", "5527"),
    # (a review's sentences) a code typed in with a particle, and a glued -p before a pipe
    ("punch in 4821 at the side gate", "4821"),
    ("just key in 2580 and push", "2580"),
    ("mysql -u app -pW1ndmill_88 && echo ok", "W1ndmill_88"),
    # 2026-12-04 night: a key that signs or spends, a card's security code named by where it is
    # printed, a card named by its network, digits read out one by one with commas, a code in
    # two halves, an abbreviation spelt with dots, the answers banks ask for most
    ("the wallet private key is 0x1c50e54c4ee18f45e45b19a014491e4cbd9d1e268c20f3eef15c0ad4dbb1800f",
     "0x1c50e54c4ee18f45e45b19a014491e4cbd9d1e268c20f3eef15c0ad4dbb1800f"),
    ("the 3 digits on the back of her mastercard: 552", "552"),
    ("the mastercard number, for the booking, is 5105 1051 0510", "5105 1051 0510"),
    ("the code they read out was nine, one, four, four, seven, two", "nine, one, four, four, seven, two"),
    ("the login code is 402-917, it expires soon", "402-917"),
    ("the p.w. for the staff wifi is Heron!Gate7", "Heron!Gate7"),
    ("when the bank asks for mum's maiden name it's Okonkwo", "Okonkwo"),
    # a password given to a program with its own flag, or in openssl's, curl's or keytool's form
    ("sshpass -p Quartz_Lake8 scp backup.tar nas:/vol", "Quartz_Lake8"),
    ("unzip -P Maple*Leaf31 reports.zip, why does it say bad crc", "Maple*Leaf31"),
    ("curl -u deploy:Birch_Wind6 https://ci.example.com/job", "Birch_Wind6"),
    ("openssl rsa -in key.pem -passin pass:Cobalt_Owl4 -out plain.pem", "Cobalt_Owl4"),
    ("redis-cli -a Velvet_Moth3 FLUSHALL deleted everything", "Velvet_Moth3"),
    ("keytool -list -keystore app.jks -storepass Amber-Fjord2", "Amber-Fjord2"),
    # password, PIN and code in more languages and scripts
    ("Мой пароль от роутера Sosna_4421", "Sosna_4421"),
    ("μου είπε ότι ο κωδικός του wifi είναι Thalassa_88", "Thalassa_88"),
    ("סיסמת הוויפי היא Yam_Melach7", "Yam_Melach7"),
    ("كلمة السر للراوتر هي Qamar_2290", "Qamar_2290"),
    ("पिन नंबर 6613 किसी को मत बताना", "6613"),
    ("Mã PIN thẻ ATM của tôi là 5521", "5521"),
    ("kata sandi wifi kantor: Kopi_Susu88", "Kopi_Susu88"),
    ("Lozinka za mail je Jabuka_2024!", "Jabuka_2024!"),
    ("Salasõna on Kuusk_5531", "Kuusk_5531"),
    ("Az e-mail jelszavam Almafa_5512", "Almafa_5512"),
    ("Fjalëkalimi im është Shqipe_4421", "Shqipe_4421"),
    ("nywila yangu ni Tembo_7781", "Tembo_7781"),
    ("Parola mea de la bancă este Stejar_9901", "Stejar_9901"),
    # a security question quoted, and a card's code named by the digit
    ("the answer to \"favourite teacher\" is Mrs Pryce", "Mrs Pryce"),
    ("what we used for 'first street you lived on' was Larch Avenue", "Larch Avenue"),
    ("the 4-digit on the back of my amex is 7731", "7731"),
    ("Maple-Bay-207 for the guest wifi, if anyone asks", "Maple-Bay-207"),
    ("the side door opened with 6620 last time", "6620"),
    # (a review's sentences) capitals of other scripts, a Welsh mutation, quoted and explicit
    # program passwords, a two-letter answer, a card paid for an order
    ("КОД ДОМОФОНА 7731", "7731"),
    ("Κωδικός: Kalimera!88", "Kalimera!88"),
    ("fy nghyfrinair yw Draig_2024", "Draig_2024"),
    ("openssl enc -pass pass:sunflower -in a", "sunflower"),
    ("sshpass -p 'Tr0ub4dor&3' ssh admin@nas", "Tr0ub4dor&3"),
    ("curl -u admin:hunterpass https://api.example.com", "hunterpass"),
    ("sqlplus system/Oracle123@localhost", "Oracle123"),
    ("My mother's maiden name is Li", "Li"),
    ("use 4539148803436467 for the order please", "4539148803436467"),
    # (a second review's sentences) an "@" inside a password, a program's name as a flag's
    # argument, a code in four-digit halves, a master key, a Greek capital with another look-alike
    ("zip -P Summ3r@2024 files.zip", "Summ3r@2024"),
    ("mysql -u git -pGitL4b!2024 gitlab_production", "GitL4b!2024"),
    ("gate code 2580-3690, the bell is broken", "2580-3690"),
    ("the master key is Zx81!mnQpl", "Zx81!mnQpl"),
    ("ΣΥΝΘΗΜΑΤΙΚΟ: Kr4sato99", "Kr4sato99"),
    ("-----BEGIN PGP PUBLIC KEY BLOCK-----\nComment: bank PIN 4417\n-----END PGP PUBLIC KEY BLOCK-----", "4417"),
]

ORDINARY = [
    # dates and years
    "we moved house on 3 March 2021",
    "the conference runs from 12 to 14 October",
    "my daughter was born in 2016, same year as the olympics in Rio",
    "the castle dates from 1350 but the roof is from 1890",
    "deadline for the grant is 2025-11-30",
    "the lease ends 31/08/2026 and we have to give notice by june",
    "Der Termin ist am 14.05.2025 um 10 Uhr",
    "la reunión es el 7 de mayo a las 18:00",
    # prices
    "the new phone costs 1299 euros which is ridiculous",
    "rent went up to £1450 a month",
    "I paid $18.50 for two coffees at the airport",
    "the quote for the roof was 7800 plus VAT",
    "das Ticket kostet 49 Euro im Monat",
    "the car is on sale for 12995 at the dealer",
    "groceries came to 86.40 this week",
    # quantities and measures
    "we walked 14000 steps around the old town",
    "the tank holds 5000 litres of rainwater",
    "I ran 10 km in 52 minutes this morning",
    "the recipe wants 400 grams of flour and 2 teaspoons of salt",
    "the garden is 120 square metres",
    "my laptop has 16 GB of RAM and a 512 GB disk",
    "the village has about 2300 inhabitants",
    "there were 3500 people at the concert",
    "the server handled 12000 requests per second in the test",
    # times
    "the train leaves at 06:47 from platform 3",
    "the shop opens at 0800 and closes at 1800",
    "office hours are 0930-1730 on weekdays",
    "my shift starts at 7pm and ends at 3am",
    # phone numbers of businesses
    "the dentist's number is 0161 496 0732",
    "call the garage on 01632 960555 to book the MOT",
    "the hotel reception is +44 20 7946 0958",
    "the pharmacy can be reached at 555-0186 until 6",
    # order numbers, references, tracking
    "my order number is 402-7719381-5520134",
    "booking reference 7XK2QP for the ferry",
    "the ticket number for my IT request is INC0045821",
    "the parcel's tracking code is JD014600003828472615",
    "invoice 2024-1187 was paid on friday",
    "my membership number at the climbing gym is 558102",
    "case number 24-CV-0917 was adjourned",
    # versions and models
    "upgraded to Python 3.12.4 and everything broke",
    "the firmware is version 2.8.11 now",
    "I'm running Ubuntu 24.04 on the old thinkpad",
    "the camera is a Sony A7 IV with the 24-70 lens",
    "we bought a Miele G7310 dishwasher",
    "she drives a 2019 Golf GTI",
    # scores, ages, rooms, addresses, transport
    "Arsenal won 3-1 and the second goal was offside",
    "I got 1480 on the SAT practice exam",
    "my grandmother turned 101 last week",
    "we're in room 1207 on the twelfth floor",
    "the office is at 221 Baker Street, second floor",
    "take bus 1451 to the airport, it runs every 20 minutes",
    "flight KL1043 is delayed by 40 minutes",
    "the new postcode is 75011 Paris",
    # sentences that name a credential or a lock without a value, or a number near one
    "I changed my password after the breach in 2023",
    "the door code is written on a note in the kitchen drawer",
    "my PIN expired after 90 days so I had to pick a new one",
    "the bank says a PIN should never be 1234 or your birth year",  # a warning, with a textbook example
    "the alarm went off at 0300 for no reason",
    "the gate opens at 0700 every morning",
    "a 6-digit code arrives by text when you log in",
    "the keypad has 12 buttons and one is broken",
    "I forgot the Passwort again and had to reset it twice",
    "the password rules want 12 characters and 2 symbols",
    "the lock on the shed rusted after 15 winters",
    "the tokenizer splits the text into 512 pieces",
    "my student ID card expires in 2027",
    "mein Passwort habe ich seit 2019 nicht geändert",
    "la contraseña tiene que tener 8 caracteres",
    "email me at jane.doe42@example.org about the rota",
    "the wiki page is at https://example.com/docs/Setup2024",
    "the gift card has 25 pounds left on it",
    "our flat number is 14B and the buzzer is broken",
    # A second batch, written after the first had been run.
    "I bought a bus pass for 2024 and it cost 540",
    "my boarding pass says seat 23C and gate B12",
    "the safe room on floor 4 holds 1200 people",
    "the door to room 4410 was locked when we arrived",
    "I locked myself out at 2300 and had to call a locksmith",
    "the padlock cost 12.99 at the hardware store",
    "my iPhone15Pro battery dies by 1500 every day",
    "the new MacBookPro M3 has 18 hours of battery",
    "I log in every morning at 0745 to check the rota",
    "we signed in at reception at 09:10",
    "he unlocked level 37 of the game last night",
    "the code review took 3 hours for 1200 lines",
    "kod pocztowy to 00-950 Warszawa",
    "mein Passwort ist zu kurz, sagt die Bank, mindestens 12 Zeichen",
    "la porte du garage est cassée depuis 2022",
    "the gym locker room closes at 2200",
    "the YouTube video got 12000 views in a day",
    "the PR number is 4821 and it fixes the login bug",
    "Login page loads in 1200 ms on 3G",
    "the combination of 3 eggs and 200 g sugar works best",
    "the keynote is at 1400 in hall B, the keypad on the door is broken",
    "I got the OTP but it took 45 seconds to arrive",
    "the PIN pad at the supermarket was broken so I paid 23.50 in cash",
    "the train to Glasgow is the 1730 from King's Cross",
    "my parking space is number 4417 in the basement",
    "the safe deposit box fee is 120 a year",
    "Gate 14 opens for boarding at 1120",
    "Git commit 3f9c0a7 broke the build",
    "the hash of the file is d41d8cd98f00b204e9800998ecf8427e",
    "the UUID of the order is 123e4567-e89b-12d3-a456-426614174000",
    "I used the code HELLO2024 for 10% off",
    "my password manager has 340 entries",
    "the lock screen shows 12:45 and my battery is at 8%",
    "ein Tresor kostet ungefähr 300 Euro",
    "our WiFi network is called Vodafone-7H2K",
    "the locker number is 221 and the key is on a wristband",
    "we opened 3 bottles of wine for 8 people",
    "the secret to good bread is 72 hours of fermentation",
    "Der Termin für die EC-Karte ist am Montag",
    # A third batch, written after the second had been run.
    "the lecture hall is room 2104 in building C",
    "we need 2500 signatures by friday",
    "my son's school opens at 0845",
    "the password workshop starts at 1500 in the library",
    "the bakery's phone is 01632 960 123",
    "I used code 4 in the survey to mean 'no answer'",
    "the PIN on the map marks the museum at 14 Rue Cler",
    "flight AF1381 leaves from terminal 2E",
    "the secret santa budget is 25 euros",
    "my key ring has 7 keys and I know 3 of them",
    "the alarm clock is set to 0630",
    "we got 4 stars on 1200 reviews",
    "that door has been painted 3 times since 1998",
    "Passwort-Reset dauert ungefähr 15 Minuten",
    "the entry fee is 1500 yen",
    "check out page 4471 of the archive",
    "in 2021 we opened a second shop",
    "a locksmith charges 90 pounds for a callout",
    "my bank's sort code finder says the branch is in Leeds",
    "the recipe code on the packet is RC-2291-B",
    # A fourth batch, run once as written: all kept.
    "we booked table 14 for 8 people at 19:30",
    "my phone bill went up to 34.99 a month",
    "the marathon is 42.195 km and I did it in 4:12",
    "I've read 27 books this year, aiming for 40",
    "the train number on the ticket is ICE 1597",
    "the dentist moved my appointment to 11 March",
    "bus 1450 stops right outside the office",
    "I keep forgetting my password, so I use a password manager now",
    "our door has a keypad but nobody uses it",
    "the gate to the park opens at 0700",
    "the code club meets every Tuesday at 1700",
    "my PIN got blocked after 3 wrong tries",
    "Flight EZY8431 to Lisbon is boarding at gate 22",
    "they printed 5000 copies of the first edition in 1954",
    "the model number is KDL-55W805C and the warranty runs till 2026",
    "the hotel safe was too small for the laptop",
    "I signed up for the 10K race on 4 May",
    "ring the bell at number 1184 and go to the 3rd floor",
    "the temperature hit 38 degrees in July",
    "our quiz team scored 78 out of 100",
    # A fifth batch, aimed at the access cues: 4 of 40 refused when first run (an error number,
    # "a 1500 word essay", "badge number will be", a phone number), all kept after the fixes.
    "I need to reset my Passwort for the 3rd time this month",
    "my bank locked my card after 3 wrong PIN attempts",
    "the wifi password at the cafe changes every 7 days",
    "two-factor codes arrive within 30 seconds usually",
    "I store 200 passwords in Bitwarden",
    "my PIN has 4 digits, my password has 16 characters",
    "the login screen froze at 99%",
    "since 2020 our office unlocks at 0800 automatically",
    "the keypad beeped 5 times",
    "the hotel key card for room 1412 stopped working",
    "the combination lock on my suitcase is TSA approved",
    "error code 0x80070005 when updating Windows",
    "the promo code SPRING25 saves 25%",
    "Postleitzahl 80331 ist München",
    "el código postal es 28013",
    "the token for the bus costs 2.50",
    "the login page says error 5003",
    "Unlock the full version for 4.99",
    "we need a 1500 word essay to unlock the next module",
    "a 2000 piece puzzle kept us busy over christmas",
    "the verification took 10 working days",
    "the gate code changed in 2023, I'll ask the landlord",
    "the password for the guest network is on the fridge",
    "our new door lock has a 6 digit code and a fingerprint reader",
    "season 4 episode 1207 of the soap is on tonight",
    "the access code is printed on page 14 of the booklet",
    "I had to log in with my 2FA app 4 times today",
    "my partner's birthday is 1990-06-14 and we celebrate on the 15th",
    "the apartment is 85 m2 with 3 rooms",
    "the PIN sentry reader runs on 2 AAA batteries",
    "Rome to Florence on Frecciarossa 9541 at 10:05",
    "sign in at the desk, your badge number will be 3312",
    "the safe in the hotel was model SX-450 by Yale",
    "opening hours: 0900-1700 Monday to Friday",
    "we scored 3-0, and the keeper saved a penalty",
    "the lottery jackpot is 14 million",
    "I'm 1.82 m tall and weigh 78 kg",
    "her flight number is UA 907 from Newark",
    "the order #A-55821 shipped yesterday",
    "call 0800 123 4567 to unlock your SIM, the network says",
    # 2026-12-03: decades, amounts with the sign after, names given to things, questions
    "my dad restores cars from the 1960s and the early 70s",
    "the dinner was 45$ a head and the wine 12€ a glass",
    "the office printer is called HP4410LX on the network",
    "wie kann ich mein Passwort ändern, wenn es abgelaufen ist?",
    "the ISBN 978-0-14-044913-6 is the penguin edition",
    # after review: course codes, product codes, garden seeds, a nightly rate
    "I'm taking CSC 263 and CSC 373 this term",
    "the product code for the blue mug is HX2291",
    "the registration code for the conference is EARLYBIRD2025",
    "seed: tomatoes, basil and chives",
    "the hotel was $140/night and the password for the wifi was on the card",
    "I lost my licence key for Photoshop, the order was 204.99 dollars",
    "the answer to question 7 is 1914",  # a quiz's numbered question (a false refusal until stop 28)
    # security questions named without their answer, and intercoms with numbers that open nothing
    "la question secrète de ma banque demande le nom de mon premier animal, c'est bête",
    "la pregunta de seguridad de mi banco es ridícula, ¿la cambio?",
    "la risposta è 42, ovviamente",
    "the intercom in flat 12 has been broken since 2019",
    "ordered a new intercom handset for 89 euros",
    # flags that take no password, and the words without a value
    "ssh -p 2222 deploy@build-host fails since this morning",
    "docker run -p 8080:80 nginx works but the page is blank",
    "mysql -u root -p asks me for it, which is fine",
    "パスワードを忘れてしまった、どうやってリセットする？",
    "암호화폐 가격이 또 떨어졌네 2024년 최저",
    # a year after "signed in" / "logged on", and numbers with their unit glued on beside a door
    "the peace was signed in 1815 after the congress",
    "my grandad logged on 1997 for the first time, on a modem",
    "the wardrobe is 198cm tall and the bedroom door only 190cm",
    "the safe weighs 35kg, can two people carry it up",
    # (a review's sentences) a port, another command's -p, prose, a prompt, a variable
    "mysql -h 127.0.0.1 -P3307 keeps timing out",
    "mysql is on the db box; ssh -p2222 admin@db to get there",
    "I use mysql at work -pretty boring stuff",
    "psql -U postgres --password mydb asks me every time",
    "mysql -uroot -p$MYSQL_ROOT_PASSWORD in the compose file",
    # 2026-12-04 night: a transaction's hash, a parcel's number that passes the Luhn check, a
    # public key, numbers listed with commas, where an answer is written, error and postal codes
    "the tx hash was 0xd9270c5b066841d1848d4cd677cb388b874dc159a20023a6659220108ed3c6ba, still pending",
    "dhl says the waybill 40512977305545 is stuck in customs",
    "add this to authorized_keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIajGxC2arXxHWevfF9k2iSJw4csEvS5QZhK5/xzB4Soo me@desk",
    "we need three, four, maybe five chairs for the code review",
    "the lottery draw was 4, 12, 19, 23, 31 and 45",
    "my mother's maiden name is on the old form, is that a problem",
    "Код ошибки 1603 при установке, что делать?",
    "ssh -p 2222 me@host and then docker run -p 8080:80 app",
    "רמת הקוד שלי השתפרה מאז 2021",
    "the answer to 'why is the sky blue' is rayleigh scattering, apparently",
    # a device before the network it joins, a car got around in, a thing unpacked or kept in,
    # names joined by a hyphen
    "can you get my old Canon EOS-550D back on the wifi",
    "we get around in a Kia XCeed-2 mostly",
    "the lenses are Acuvue Oasys1, can you keep them in overnight?",
    "opened the Lego Technic 42115 box last night, took hours",
    "what's the best combo for Shao-Kahn in the new game",
    # (a review's sentences) lists, ports, sizes, paths, other commands' flags, reference codes
    "I unlocked levels 1, 2, 3, 4 and 5 in the game today",
    "Pin tabs 1, 2, 3, 4 to the top of the browser",
    "Paid with Mastercard, order 12345678 arrives Tuesday",
    "Amex customer service is 1 800 528 4800 if you need them",
    "The card was valid 2021-2024 and I need a new one",
    "The private key is 2048 bits long",
    "Private key path: /home/deploy/.ssh/id_ed25519",
    "We removed sshpass and now run ssh -p 2222 deploy@10.0.0.5",
    "docker run -d --name mongo -p 27017:27017 mongo:7",
    "I ran openssl to check the cert, then curl -k https://example.com/api",
    "docker compose run -u www-data:www-data app bash",
    "Трек-код посылки 12345678 не работает",
    "Ο κωδικός παραγγελίας είναι 88812345",
    "Sandi is coming tomorrow at 7",
    "My mum's maiden name is hard to spell",
    "Pages 10-12 and 45-48 cover the code of conduct",
    "ΤΑΧΥΔΡΟΜΙΚΟΣ ΚΩΔΙΚΑΣ: 54622",
    "ο ταχυδρομικος κωδικας ειναι 10431",
    "Emma pinged 4417 times",
    "קוד ההזמנה שלי הוא 882145",
    "the hotel gave me a master key for room 1204",
]


# 2026-12-04 night (blind_v7's dev split showed the classes; none of these is one of its phrasings):
# typos of the word, digits read in other languages or the phonetic alphabet, a relative clause,
# keys in groups of one length, settings in config files, a wallet's words named, a password's
# symbols, a sign-in page, a code to verify, digits read in groups, a card's CID, "opens with",
# hyphen halves after the word, a continuation that says which part follows.
NEW_CLASSES = [
    ("my passwrod for the library app is Ochre_Lamp3", "Ochre_Lamp3"),
    ("the passowrd on the tablet is Gl0wworm", "Gl0wworm"),
    ("el pin de mi tarjeta es ocho tres uno cinco, no lo olvides", "ocho tres uno cinco"),
    ("le code de la porte est sept deux neuf huit", "sept deux neuf huit"),
    ("die PIN ist vier null acht zwei", "vier null acht zwei"),
    ("the wifi password is bravo seven echo two nine", "bravo seven echo two nine"),
    ("my banking passcode, which is Tangerine88, stopped working", "Tangerine88"),
    ("the key on the box is 7KXQ2-M9PLD-3RWTV-8HJNF-Q2ZKT, does it work for office 2021?",
     "7KXQ2-M9PLD-3RWTV-8HJNF-Q2ZKT"),
    ("recovery key, when i set it up on the new phone: HJKW-PLMQ-RTVX-ZNBC-DFGS", "HJKW-PLMQ-RTVX-ZNBC-DFGS"),
    ("the authenticator key is k3vq pm7x wq2d ra9c jh4t", "k3vq pm7x wq2d ra9c jh4t"),
    ('settings.json has "smtp_password": "Fjord-Bell-2291" in it, is that safe?', "Fjord-Bell-2291"),
    ('wpa config: network={ ssid="Loft" psk="Orchid+Tide77" }', "Orchid+Tide77"),
    ("the seed for my trezor is: olive crane sunset rabbit glory piano tunnel mirror orbit lemon velvet canyon",
     "olive crane sunset rabbit glory piano tunnel mirror orbit lemon velvet canyon"),
    ("wallet words from the steel card:\n1. acid\n2. brisk\n3. cabin\n4. dune\n5. elbow\n6. fiber\n7. glory\n"
     "8. hover\n9. inch\n10. jelly\n11. kitten\n12. lumber", "cabin"),
    ("would Harbour!Kite9 be strong enough for a bank?", "Harbour!Kite9"),
    ("is Harbour!Kite9 ok for the bank app or too short?", "Harbour!Kite9"),
    ("amazon texted a code, six one four, two nine eight, where does it go", "six one four, two nine eight"),
    ("the amex cid is 7742 and it expires soon", "7742"),
    ("back door: 5518# then pull hard", "5518"),
    ("the shed padlock opens with 1984, tell the gardener", "1984"),
    ("signal registration code 204-771, what do i do with it", "204-771"),
    ("koda za vrata je 4417 8830", "4417 8830"),
    ("кодът за входа е 558812", "558812"),
    ("میرا پن 6042 ہے", "6042"),
    ("the bike locker: 4 · 8 · 1 · 6", "4 · 8 · 1 · 6"),
]
NEW_ORDINARY = [
    "answer to question 12 of the quiz is 1789",
    "pin code 400050, which area is that? i want them to deliver there",
    "the stop code on the tram shelter is 31842",
    "the hotel wifi is free and open, no sign up",
    "my xbox gamertag is Frost_Wolf88",
    "rename get_User2 in the script to fetch_user",
    "the app crashed on my Galaxy-S24Ultra again",
    "loving the #Summer_2024 photos",
    "password: \"${DB_PASSWORD}\" comes from the environment",
    # a reviewer's, against the first version of these classes
    "I forgot my password, which is annoying",
    "My Order#12345 hasn't arrived",
    "does this work on the iPhone15+ models",
    "press Ctrl+Shift+F12 in the app for the dev tools",
    "The exhibition opens with 1914 posters",
    "Seed packets I bought: tomato, pepper, carrot, onion, garlic, lettuce, spinach, radish, pea, bean, corn, squash",
    "the IPv6 literal is 2001-0db8-85a3-0000",
    "Connect the LED to pin 12-13",
    '"api_key": "YOUR_API_KEY_HERE" goes in config.json',
    "My Instagram is Sunny_Days2020, follow me on the app",
    "my IGN is Sn!per2000, add me on the app",
]


def test_a_continuation_that_says_which_part_follows_is_redacted():
    assert "Harbour!9" not in redact_secrets("and it finishes with Harbour!9, no space", continues=True)[0]


def test_a_card_pin_code_is_no_postcode_when_banking_is_named():
    assert "582913" not in redact_secrets("my card pin code is 582913, courier brings the new one")[0]


@pytest.mark.parametrize("text,secret", CREDENTIALS)
def test_a_credential_in_a_new_phrasing_is_redacted(text, secret):
    assert find_secrets(text), text
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", ORDINARY)
def test_an_ordinary_sentence_with_numbers_is_kept_as_it_is(text):
    assert redact_secrets(text) == (text, []), redact_secrets(text)[0]


def test_the_sets_are_large_enough_to_measure_with():
    assert len(CREDENTIALS) >= 40 and len(ORDINARY) >= 60


@pytest.mark.django_db
def test_a_value_sent_right_after_a_message_naming_the_credential_is_redacted(tenant_a, actor):
    """The first message names the credential without a value ("I'll send it separately"), the
    next opens with the value: caught with what came before, not on its own."""
    ingest(tenant_a, "alice", actor,
           ("m1", "user", "the router admin password, sending it in the next message", None, at(0)),
           ("m2", "user", "Gannet7Spruce!", None, at(1)),
           ("m3", "user", "I should change my password soon", None, at(2)),
           ("m4", "user", "4400 people signed the petition though", None, at(3)))
    with as_tenant(tenant_a):
        contents = dict(Event.objects.filter(tenant=tenant_a).values_list("event_id", "content"))
        statements = " ".join(Memory.objects.filter(tenant=tenant_a).values_list("statement", flat=True))
    assert "Gannet7Spruce!" not in contents["m2"] and "Gannet7Spruce!" not in statements
    assert contents["m4"] == "4400 people signed the petition though"


@pytest.mark.django_db
def test_a_key_body_split_over_two_messages_is_redacted_in_both(tenant_a, actor):
    first, second = _KEY_BODY[:128], _KEY_BODY[128:]
    ingest(tenant_a, "bob", actor,
           ("k1", "user", f"{first[:64]}\n{first[64:]}", None, at(0)),
           ("k2", "user", f"{second[:64]}\n{second[64:]}", None, at(1)))
    with as_tenant(tenant_a):
        stored = " ".join([*Event.objects.filter(tenant=tenant_a).values_list("content", flat=True),
                           *Memory.objects.filter(tenant=tenant_a).values_list("statement", flat=True)])
    for line in (first[:64], first[64:], second[:64], second[64:]):
        assert line not in stored


@pytest.mark.django_db
def test_an_appended_event_holds_no_secret_even_before_the_worker_runs(tenant_a, actor):
    """The write path redacts: what waits for extraction is already without the secret, also
    when its value came in the message after the one naming it."""
    from memoryapp.services.events import EventInput, event_append

    event_append(tenant=tenant_a, subject_ref="carol", actor=actor, events=[
        EventInput("p1", "user", "the shed padlock is", occurred_at=at(0)),
        EventInput("p2", "user", "7 7 0 4", occurred_at=at(1)),
        EventInput("p3", "user", "we need 4 chairs for the party", occurred_at=at(2)),
    ])
    with as_tenant(tenant_a):
        events = {e.event_id: e for e in Event.objects.filter(tenant=tenant_a, subject__external_id="carol")}
    assert all(e.status == "pending" for e in events.values())
    assert "7 7 0 4" not in events["p2"].content and events["p2"].redacted
    assert events["p3"].content == "we need 4 chairs for the party" and not events["p3"].redacted


# Found by a reviewer's ordinary sentences on 2026-12-05 (these are other sentences of the same
# classes): any question's answer is no security answer, a network's name is no password, and
# what happened to a password is not its value.
REVIEWED_ORDINARY = [
    "the answer to the trivia question was canberra",
    "the answer to her question is no, we can't come on friday",
    "the cafe wifi is named beanhub, no idea who picked that",
    "our home wifi is called the shed, don't ask",
    "das passwort ist falsch, sagt die app",
    "sein kennwort ist gesperrt und er muss die bank anrufen",
]
REVIEWED_CREDENTIALS = [
    ("the answer to my bank's security question is Thornbury", "Thornbury"),
    ("the answer to the question about my first pet is Biscuit", "Biscuit"),
    ("the wifi network is called beanhub and the password is Crumpet!88", "Crumpet!88"),
    ("the wifi is tulipfields77", "tulipfields77"),
    # (a second review: the usual questions named without a security word)
    ("the answer to the question about my first car is Corolla", "Corolla"),
    ("answer to the favourite teacher question: Hargreaves", "Hargreaves"),
    ("the wifi password is called Crumpet!88", "Crumpet!88"),
]


# A login written as a pair: an email address or an administrator's name, a separator, a value
# shaped like a password. (Other pairs of the same look are kept.)
LOGIN_PAIRS = [
    ("the gym portal is maria.lopez@gmail.com / Sunbeam42 if you need to book for me", "Sunbeam42"),
    ("nas login admin | Kettle!9", "Kettle!9"),
    ("ssh root:pine88apple@192.168.1.20", "pine88apple"),
]
NOT_LOGIN_PAIRS = [
    "reach me at maria.lopez@gmail.com / 07700 900456 after six",
    "cc maria.lopez@gmail.com / joe2@work.org on the invite",
    "the admin / owner of ClubHub2 is my cousin",
    "send it to info@bakery.co.uk / orders@bakery.co.uk",
    "my site is maria.dev / my email is maria@maria.dev",
    "the report is at intranet.example.com/admin/reports2024",
]


@pytest.mark.parametrize("text,secret", NEW_CLASSES + REVIEWED_CREDENTIALS + LOGIN_PAIRS)
def test_a_credential_of_the_new_classes_is_redacted(text, secret):
    assert _hides(text, secret), redact_secrets(text)[0]


@pytest.mark.parametrize("text", NEW_ORDINARY + REVIEWED_ORDINARY + NOT_LOGIN_PAIRS)
def test_an_ordinary_sentence_near_the_new_classes_is_kept(text):
    assert redact_secrets(text) == (text, []), redact_secrets(text)[0]


def test_login_pairs_take_linear_time():
    import time

    from memoryapp.safety import login_pairs

    for text in ("a@" + "b." * 16000, "x@y.z / " * 4000, "admin/" * 6000):
        started = time.perf_counter()
        login_pairs(text)
        assert time.perf_counter() - started < 0.5
