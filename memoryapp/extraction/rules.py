"""The deterministic extractor: first-person statements to candidates, offline and repeatable.

High bar on purpose: a sentence becomes a durable memory only when a pattern names what it is
about (home city, job, pet, a favourite ...). Questions, hypotheticals, and chatter tied to the
moment ("I'm tired today", "brb", "thanks!") produce nothing; the event is still kept as an
episodic memory by the pipeline, so nothing said is lost, only not promoted.
"""
import re

from memoryapp.extraction.candidates import Candidate
from memoryapp.extraction.keys import preference_key, slug, topic_of, user_key

RULES_VERSION = "rules-v1"

# Leading phrases that announce a change; stripped before matching, remembered as a cue.
_CORRECTION_LEAD = re.compile(
    r"^(?:(?:oh|ah|hey|so|well|ok(?:ay)?|oops|wait|sorry)[,!]?\s+)*"
    r"(?:actually|correction|update|quick update|small update|news|scratch that|to correct myself|"
    r"i (?:should|need to|have to|must) correct (?:myself|that|what i said)|i misspoke|not anymore|"
    r"things (?:have )?changed|that(?:'s| is) (?:changed|outdated|old news|not true any ?more)|"
    r"that changed|change of plans?|plot twist|big news|as of (?:now|this (?:week|month|year)))\b[^a-z0-9]*",
    re.I,
)
_CORRECTION_ANYWHERE = re.compile(
    r"\b(?:actually|any ?more|no longer|not \w+ any ?more|these days|nowadays|now|recently|just|"
    r"switched|changed|moved|relocated|since (?:last|this)|used to|instead|new)\b",
    re.I,
)
_REMEMBER_LEAD = re.compile(
    r"^(?:please |pls |kindly )?(?:(?:do )?remember|note|keep in mind|don't forget|for the record|fyi|"
    r"just so you know|for your information|for future reference)(?: that)?[,:]?\s+",
    re.I,
)
_FILLER_LEAD = re.compile(r"^(?:(?:so|well|oh|also|and|but|btw|by the way|anyway|honestly|ok(?:ay)?|yeah|yes|"
                          r"hi|hello|hey)[,!.]?\s+)+", re.I)

# Markers that tie a statement to the moment: not durable.
_EPHEMERAL = re.compile(
    r"\b(?:today|tonight|this (?:morning|afternoon|evening)|right now|at the moment|atm|for now|"
    r"currently feeling|in a (?:minute|sec|second|bit)|brb|gtg|be right back|this instant|later today|"
    r"tomorrow morning)\b",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if i|i wish|i would|i'd (?:like|love) to (?:live|be)|maybe i|perhaps i|i might|i may|"
    r"suppose|imagine|pretend|what if|would i|should i|can i|could i|i wonder|i doubt|i'm not sure|"
    r"my (?:friend|brother|sister|mother|mom|father|dad|colleague|boss|neighbou?r|cousin|son|daughter)'?s?\b(?! (?:is|'s) (?:called|named)))",
    re.I,
)
_NEGATED_BEFORE = re.compile(r"\b(?:don't|do not|never|no longer|not)\s*$", re.I)

# A value runs to the end of its clause.
_VALUE = r"(?P<v>[^.,;!?()\n]{1,80}?)"
_END = (
    r"(?=\s*(?:$|[.,;!?()\n]|\s(?:and|but|because|since|so|which|where|who|though|although|"
    r"now|anymore|any more|these days|nowadays|at the moment|for (?:a|the) (?:while|past|last)|"
    r"for \d+|for (?:two|three|four|five|six|several|many|a few) |since \d|"
    r"instead|as of|too|lol|haha|:\)|btw|, ?actually|last|this|next|yesterday|ago|still)\b))"
)

_ARTICLE = re.compile(r"^(?:a|an|the|my|our)\s+", re.I)
_TRAIL = re.compile(r"\s+(?:now|then|again|too|also|already|full[- ]time|part[- ]time|as well|still|"
                    r"lately|recently|currently|there)$", re.I)

_PETS = (r"dog|puppy|cat|kitten|hamster|rabbit|bunny|parrot|budgie|bird|goldfish|fish|turtle|tortoise|"
         r"guinea pig|ferret|snake|lizard|gecko|iguana|horse|pony|chinchilla|hedgehog|rat|mouse|canary|"
         r"cockatiel|axolotl|frog|chicken|goat")
_PARTNER = r"wife|husband|partner|girlfriend|boyfriend|spouse|fianc[eé]e?"

_JOB_WORDS = re.compile(
    r"(?:er|or|ist|ian|ant|ent|eer|ect|ive|nurse|chef|cook|doctor|vet|surgeon|pilot|judge|"
    r"clerk|analyst|scientist|consultant|barista|dentist|architect|attorney|lawyer|intern|"
    r"professor|lecturer|tutor|coach|nanny|midwife|paramedic|firefighter|officer|"
    r"mechanic|plumber|electrician|carpenter|florist|pharmacist|therapist|accountant|"
    r"librarian|engineer|developer|designer|manager|director|student|freelancer|"
    r"journalist|editor|photographer|veterinarian|translator|secretary|assistant|"
    r"cashier|waiter|waitress|bartender|model|monk|priest|rabbi|imam|sailor|soldier|"
    r"farmer|baker|butcher|tailor|welder|dj|ceo|cto|cfo|founder|entrepreneur|artist|"
    r"musician|actor|actress|writer|author|poet|painter|dancer|singer|researcher)$",
    re.I,
)
_NOT_JOBS = re.compile(
    r"\b(?:fan|lover|person|people|bit|lot|little|fanatic|vegetarian|vegan|pescatarian|member|"
    r"believer|beginner|morning|night|owl|introvert|extrovert|parent|mother|father|mom|dad|"
    r"grandmother|grandfather|twin|sucker|big deal|user|customer|native|speaker|citizen|resident|"
    r"smoker|drinker|runner|reader|gamer|foodie|cook at heart|early bird)\b",
    re.I,
)


def _clean(value: str) -> str:
    value = value.strip(" \"'`*:-")
    value = _TRAIL.sub("", value)
    return value.strip(" \"'`*:-")


def _with_article(value: str) -> str:
    if _ARTICLE.match(value):
        return value
    return ("an " if value[:1].lower() in "aeiou" else "a ") + value


def _bare(value: str) -> str:
    return _ARTICLE.sub("", value)


# Rules compile with re.I, so a name's capital must be asked for case-sensitively: without it
# "my partner is pregnant" names a partner and "call me at the store" a name.
_CAP = r"(?-i:[A-Z])"
_NAME = rf"{_CAP}[\w-]+(?: {_CAP}[\w-]+)?"
_SUBJECT_PRONOUNS = re.compile(r"\b(i|you|he|she|they|we)\b", re.I)


def _said_of_user(m) -> bool:
    """A rule that accepts "... and became a nurse" speaks of the user only when the last subject
    pronoun before it is "I": "so happy you followed your dreams and became an engineer" is about
    someone else, "I told her and became a nurse" is not."""
    if not m.group(0).lower().startswith("and"):
        return True
    before = _SUBJECT_PRONOUNS.findall(m.string[: m.start()])
    return bool(before) and before[-1].lower() == "i"


def _has_name(value: str) -> bool:
    """A capitalised word other than "I" ("downtown Seattle", "the Red Cross")."""
    return re.search(r"(?:^|[\s(])(?-i:(?!I\b)[A-Z0-9])", value) is not None


def _writes_in_capitals(text: str) -> bool:
    """The writer capitalises at all: in "i moved to berlin" no capital can be asked for, nor in
    a script without capitals ("東京")."""
    return re.search(r"(?-i:[A-Z])", text) is not None


# Each rule: (regex on the cleaned sentence, builder(match) -> Candidate | None).
_RULES: list[tuple[re.Pattern, callable]] = []


def rule(pattern: str):
    compiled = re.compile(pattern, re.I)

    def register(builder):
        _RULES.append((compiled, builder))
        return builder

    return register


# A profile-style label before a fact's sentence names the attribute in words a question uses
# ("What car ...", "Who is the user's employer?") even when the sentence does not ("drives a
# Fiat Panda"): without it every "The user ..." fact looks alike to lexical and dense search.
LABELS = {
    "user:home_city": "Home city", "user:work_city": "Work city", "user:hometown": "Hometown",
    "user:job": "Job / profession", "user:employer": "Employer / company", "user:pet": "Pet",
    "user:partner": "Partner / spouse", "user:car": "Car", "user:hobby": "Hobby / pastime / free-time activity",
    "user:diet": "Diet", "user:name": "Name", "user:age": "Age", "user:birthday": "Birthday",
    "user:native_language": "Native language", "user:timezone": "Timezone",
}


def _fact(key, statement, value, kind="fact", confidence=0.9, importance=0.7, sensitivity="personal"):
    label = LABELS.get(key)
    if label:
        statement = f"{label}: {statement}"
    return Candidate(statement=statement, kind=kind, key=key, value=value, confidence=confidence,
                     importance=importance, sensitivity=sensitivity)


_I = r"\bi(?:'ve| have|'m| am)?\s+(?:now |currently |still |just |recently |finally |officially |since )*"

# --- where the user lives -------------------------------------------------------------------


def _home(m):
    city = _clean(m.group("v"))
    if not city or city.lower() in {"a house", "an apartment", "a flat", "here", "there", "it", "the city"}:
        return None
    # A place is a name ("Graz", "downtown Seattle") or a described one ("a village near
    # Graz"): "I stay in shape" and "a safe home is key" are not homes.
    words = city.split()
    if not words:  # only whitespace _clean leaves (a no-break space)
        return None
    described = words[0].lower() in {"a", "an", "the", "my", "our"}
    if not described and not _has_name(city) and _writes_in_capitals(m.string) and re.search(r"[A-Za-z]", city):
        return None
    city = re.sub(r"^(?:the city of|the town of)\s+", "", city, flags=re.I)
    return _fact(user_key("home_city"), f"The user lives in {city}.", city)


rule(rf"\bi (?:now |currently |still |actually )?(?:live|reside|stay|am living|am based|am located){{1}}\s+(?:in|at)\s+{_VALUE}{_END}")(_home)
rule(rf"\bi'?m (?:now |currently |actually )?(?:living|based|located|settled|residing)\s+(?:in|at|out of)\s+{_VALUE}{_END}")(_home)
rule(rf"\bi (?:have |'ve )?(?:just |recently |finally |since )?(?:moved|relocated|settled|moved house|moved back)\s+(?:over |back |down |up )?(?:to|in)\s+{_VALUE}{_END}")(_home)
rule(rf"\bmy (?:home|new home|place|new place|apartment|flat|house) is (?:now )?(?:in|located in)\s+{_VALUE}{_END}")(_home)
# "home is Leeds" opens a clause; "the game we play most at home is Catan" is not about a home.
rule(rf"(?:^|[.!?,;:]\s*|\b(?:and|but|so|now|honestly|well)\s+)(?:home|my home base)(?: for (?:me|us))? "
     rf"(?:is|these days is|is now) (?:in )?{_VALUE}{_END}")(_home)
# A household move is the user's move too.
rule(rf"\bwe(?:'ve| have)? (?:just |recently |finally )?(?:moved|relocated) (?:over |back )?to\s+{_VALUE}{_END}")(_home)
rule(rf"\bi (?:now )?call {_VALUE} home\b")(_home)
rule(rf"\bi'?ve (?:been )?(?:living|based) in {_VALUE}{_END}")(_home)


@rule(rf"\bi(?:'m| am) (?:originally )?from {_VALUE}{_END}")
def _origin(m):
    place = _clean(m.group("v"))
    return _fact(user_key("hometown"), f"The user is originally from {place}.", place) if place else None


# --- work -----------------------------------------------------------------------------------


def _job(m, confidence=0.9):
    job = _clean(m.group("v"))
    job = re.sub(r"\s+(?:at|for|with|in) .*$", "", job, flags=re.I)
    if not job or _NOT_JOBS.search(job) or len(job.split()) > 5 or not _said_of_user(m):
        return None
    return _fact(user_key("job"), f"The user works as {_with_article(_bare(job))}.", _bare(job),
                 confidence=confidence)


rule(rf"\bi(?:'ve| have)? (?:now |currently |actually |still |long |always )?work(?:ed)? as\s+{_VALUE}{_END}")(_job)
rule(rf"\bby (?:profession|trade),? i'?m\s+{_VALUE}{_END}")(_job)
rule(rf"\bi'?m (?:now |currently )?(?:working|employed|hired|retraining|training) as\s+{_VALUE}{_END}")(_job)
rule(rf"\bmy (?:job|profession|occupation|role|position|job title|title|day job|new job|new role)(?: these days| nowadays| now)? is(?: now)?(?: that of)?\s+{_VALUE}{_END}")(_job)
rule(rf"\b(?:i|and) (?:have |'ve )?(?:just |recently |finally )?(?:became|become|got a job as|started working as|switched careers? to (?:being )?|retrained as|changed careers? to (?:being )?|took a (?:job|position|role) as|am now)\s+{_VALUE}{_END}")(_job)
rule(rf"\bi (?:do|work in) {_VALUE} for a living{_END}")(_job)
rule(rf"\bi earn my living as {_VALUE}{_END}")(_job)


@rule(rf"^(?:i'?m|i am)(?: now| currently| actually)? (?P<v>(?:an?|the) [^.,;!?()\n]{{2,60}}?){_END}")
def _im_a(m):
    value = _clean(m.group("v"))
    head = _bare(value).split(" by ")[0].split(" at ")[0].split(" for ")[0].strip()
    if _NOT_JOBS.search(head) or not _JOB_WORDS.search(head.split()[-1] if head else ""):
        return None
    return _fact(user_key("job"), f"The user works as {_with_article(head)}.", head, confidence=0.8)


# What people join that is not where they work.
_GROUPS = re.compile(
    r"\b(?:club|group|forum|gym|class|classes|course|team|band|choir|church|community|tournament|league|"
    r"society|circle|meetup|server|chat|party|movement|program|programme|workshop|cause|network|in|them|us)$",
    re.I,
)


_EMPLOYER_NOUNS = re.compile(r"(?i)\b(?:company|firm|startup|agency|hospital|lab|clinic|bank|school|university)$")


def _employer(m):
    org = _clean(m.group("v"))
    if not org or org.lower() in {"home", "a company", "myself", "it", "that"} or re.match(r"(?i)home\b", org):
        return None
    if not _said_of_user(m):
        return None
    return _fact(user_key("employer"), f"The user works at {org}.", org)


def _joined(m):
    """"I joined Globex" is a new employer; "I joined a gym / a writers group / in" is not.
    After "joined", only a named organisation that is not a club or group ("the Red Cross",
    "Google's cloud team" -> Google), or an employer by its kind ("a law firm")."""
    org = re.sub(r"['’]s\b.*$", "", _clean(m.group("v")))
    named = _has_name(org) or not _writes_in_capitals(m.string)
    if not org or _GROUPS.search(org) or not (named or _EMPLOYER_NOUNS.search(org)):
        return None
    return _fact(user_key("employer"), f"The user works at {org}.", org)


rule(rf"\b(?:i|and) (?:now |currently |still |actually )?work (?:at|for)\s+{_VALUE}{_END}")(_employer)
rule(rf"\bi'?m (?:now |currently )?(?:working|employed) (?:at|for|by)\s+{_VALUE}{_END}")(_employer)
rule(rf"\bi (?:have |'ve )?(?:just |recently )?(?:started at|started working at|started working for|got hired (?:at|by)|was hired (?:at|by)|moved to work at)\s+{_VALUE}{_END}")(_employer)
rule(rf"\bi (?:have |'ve )?(?:just |recently )?joined\s+{_VALUE}{_END}")(_joined)
rule(rf"\bmy (?:employer|company|new employer|workplace|new company) is (?:now )?{_VALUE}{_END}")(_employer)

def _work_city(m):
    place = _clean(m.group("v"))
    # Only a proper name is a place ("I work in marketing" is a field, not a city).
    if not place or not place[:1].isupper() or place.split()[0].lower() in {"the", "a", "an", "my"}:
        return None
    return _fact(user_key("work_city"), f"The user works in {place}.", place)


rule(rf"\bi (?:now |currently |still |actually )?work (?:in|from|out of)\s+{_VALUE}{_END}")(_work_city)
rule(rf"\bi(?:'ve| have)? (?:been |got |just been |recently been |was )?(?:transferred|reassigned|posted|seconded) (?:to|over to)\s+(?:the )?(?:office in |team in )?{_VALUE}{_END}")(_work_city)
rule(rf"\bmy (?:office|workplace|work) is (?:now )?(?:in|located in)\s+{_VALUE}{_END}")(_work_city)

# --- pets, partner, car ----------------------------------------------------------------------


def _pet(m):
    animal = m.groupdict().get("a")
    name = m.groupdict().get("name")
    if name:
        name = _clean(name)
    if animal and name:
        return _fact(user_key("pet"), f"The user has a pet {animal.lower()} named {name}.", f"{animal} {name}")
    if animal:
        return _fact(user_key("pet"), f"The user's pet is {_with_article(animal.lower())}.", animal.lower())
    if name:
        return _fact(user_key("pet"), f"The user's pet is named {name}.", name)
    return None


rule(rf"\bmy (?:pet |new )?(?P<a>{_PETS})(?:'s name)? is (?:called |named )?(?P<name>{_CAP}[\w-]+)\b")(_pet)
rule(rf"\bmy (?:only |new )?pet is (?:now )?an? (?:little |small |big |young |old )?(?P<a>{_PETS})\b(?: (?:called|named) (?P<name>{_CAP}[\w-]+))?")(_pet)
rule(rf"\bi (?:have|own|got|adopted|rescued|bought|now have|just got|recently adopted|'ve got)(?: myself)? (?:an?|one) (?:new |little |small |big |young |old |cute |rescue )*(?P<a>{_PETS})\b(?: (?:called|named) (?P<name>{_CAP}[\w-]+))?")(_pet)
rule(rf"\b(?:our|the) (?:family )?pet (?:is|these days is) (?:now )?an? (?P<a>{_PETS})\b")(_pet)


@rule(rf"\bmy (?:{_PARTNER})(?:'s name)? is (?:called |named )?(?P<v>{_NAME})")
def _partner(m):
    return _fact(user_key("partner"), f"The user's partner is {m.group('v')}.", m.group("v"))


# Not "I'm with X" or "I'm seeing X": people are with Verizon and seeing Dr Lee, and a partner
# read wrongly would outrank what was really said.
@rule(rf"\bi(?:'m| am) (?:now |happily )?(?:married to|engaged to|dating) (?P<v>{_NAME})")
def _partner2(m):
    return _fact(user_key("partner"), f"The user's partner is {m.group('v')}.", m.group("v"))


_CAR_WORDS = (r"car|suv|truck|van|minivan|pickup|motorbike|motorcycle|scooter|hybrid|wagon|coupe|camper|ev|"
              r"electric one|hatchback|sedan|convertible|tesla|volvo|toyota|honda|bmw|audi|ford|mini|fiat|kia|"
              r"jeep|prius|golf|polo|civic|corolla|model \w+|mazda|subaru|skoda|nissan|hyundai|peugeot|renault|"
              r"volkswagen|vw|mercedes|porsche|lexus|chevrolet|chevy|jaguar|land rover|range rover|dacia|citroen|opel")
_CAR_WORD = re.compile(rf"(?i)\b(?:{_CAR_WORDS})\b")


def _car(m):
    car = _clean(m.group("v"))
    if not car or _bare(car).lower() in {"car", "lot", "bit", "new car"} or not _said_of_user(m):
        return None
    # A car is a make or model, or a described vehicle: "my ride is the best" names none.
    if not _CAR_WORD.search(car) and not _has_name(_bare(car)):
        return None
    return _fact(user_key("car"), f"The user drives {_with_article(_bare(car))}.", _bare(car))


rule(rf"\bi (?:now |currently )?(?:drive|own|have|bought|got)(?: myself)? (?P<v>(?:an?|the) (?:new |used |old |second-hand )?[^.,;!?()\n]{{0,40}}?\b(?:{_CAR_WORDS})(?: [A-Z0-9][\w-]*){{0,2}}){_END}")(_car)
rule(rf"\bmy (?:car|new car|ride|vehicle) is (?:now )?{_VALUE}{_END}")(_car)
rule(rf"\b(?:i|and) (?:now |currently )?drive {_VALUE}{_END}")(_car)

# --- preferences ----------------------------------------------------------------------------


@rule(rf"\bmy (?:absolute |all[- ]time |new |current )?(?:favou?rite|fave|preferred|go-to) (?P<t>[a-z][a-z ]{{1,30}}?)(?: these days| nowadays| now)? (?:is|has become|is now|these days is|would be|has to be|must be) (?:probably |definitely |now )?{_VALUE}{_END}")
def _favourite(m):
    topic, value = m.group("t").strip(), _clean(m.group("v"))
    if not value:
        return None
    key = preference_key(topic)
    return Candidate(statement=f"The user's favourite {topic} is {value}.", kind="preference", key=key,
                     value=value, confidence=0.9, importance=0.6)


@rule(rf"\b(?P<v>[^.,;!?()\n]{{2,40}}?) (?:is|has become|became) (?:now |currently |definitely )?my (?:absolute |all[- ]time |new )?(?:favou?rite|fave|go-to) (?P<t>[a-z][a-z ]{{1,30}}?){_END}")
def _favourite_inverted(m):
    value, topic = _clean(m.group("v")), m.group("t").strip()
    if not value or re.match(r"(?i)(?:it|this|that|which|what)$", value):
        return None
    return Candidate(statement=f"The user's favourite {topic} is {value}.", kind="preference",
                     key=preference_key(topic), value=value, confidence=0.85, importance=0.6)


# A liked "thing" that only points at the conversation ("I love them", "I love your turtles",
# "I love this quote", "I enjoy what I do") says nothing durable about the user, and keyed as a
# preference it would supersede the last such "preference" and retire its message.
_POINTING = re.compile(
    r"(?i)(?:(?:it|that|this|these|those|them|him|her|you|your|yours|what|when|how|where|which|who|"
    r"everything|anything|something|being in places like)\b(?!-)|to(?: say)?$)"
)


@rule(rf"\bi\s*(?:really |much |strongly |definitely |now |generally |usually |always )*(?:prefer|like|love|enjoy|adore|am into|'m into|am a fan of|'m a fan of|am a big fan of|'m a big fan of)\s+{_VALUE}{_END}")
def _likes(m):
    value = _clean(m.group("v"))
    before = m.string[: m.start()]
    if not value or _NEGATED_BEFORE.search(before) or len(value.split()) > 10 or _POINTING.match(value):
        return None
    if re.match(r"(?i)(?:to )?(?:chat|talk|help|know|hear|see|think)\b", value):
        return None
    verb = re.search(r"prefer|like|love|enjoy|adore|into|fan of", m.group(0), re.I).group(0).lower()
    topic = topic_of(value)
    key = f"user:preference:{topic}" if topic and verb == "prefer" else (f"user:likes:{slug(value)}" if value else "")
    phrase = {"into": "is into", "fan of": "is a fan of"}.get(verb, verb + "s")
    return Candidate(statement=f"The user {phrase} {value}.", kind="preference", key=key, value=value,
                     confidence=0.85, importance=0.55)


@rule(rf"\bi (?:really |strongly |absolutely )?(?:hate|dislike|can't stand|cannot stand|don't like|do not like|don't enjoy|avoid)\s+{_VALUE}{_END}")
def _dislikes(m):
    value = _clean(m.group("v"))
    if not value or value.lower() in {"it", "that", "this", "you", "mondays"} and False:
        return None
    return Candidate(statement=f"The user dislikes {value}.", kind="preference", key=f"user:dislikes:{slug(value)}",
                     value=value, confidence=0.85, importance=0.55)


@rule(r"\bi take my (?P<t>coffee|tea) (?P<v>[^.,;!?()\n]{2,40}?)" + _END)
def _take_my(m):
    topic, value = m.group("t").lower(), _clean(m.group("v"))
    return Candidate(statement=f"The user takes their {topic} {value}.", kind="preference",
                     key=f"user:preference:{topic}", value=value, confidence=0.85, importance=0.55)


# --- health, diet, identity ---------------------------------------------------------------


@rule(r"\bi(?:'m| am) (?:now |strictly |fully |mostly )?(?:an? )?(?P<v>vegetarian|vegan|pescatarian|keto|gluten[- ]free|lactose[- ]intolerant|halal|kosher|teetotal|sober)\b")
def _diet(m):
    return _fact(user_key("diet"), f"The user is {m.group('v').lower()}.", m.group("v").lower(),
                 sensitivity="special", importance=0.7)


@rule(r"\bi(?:'m| am) (?:no longer|not) (?:an? )?(?P<v>vegetarian|vegan|pescatarian|keto)(?: any ?more)?\b")
def _diet_ended(m):
    return Candidate(statement=f"The user is no longer {m.group('v').lower()}.", kind="correction",
                     key=user_key("diet"), value=f"not {m.group('v').lower()}", confidence=0.9,
                     importance=0.7, sensitivity="special", decision="update")


@rule(rf"\bi(?:'m| am) (?:severely |very |mildly |deathly )?allergic to {_VALUE}{_END}")
def _allergy(m):
    value = _clean(m.group("v"))
    return Candidate(statement=f"The user is allergic to {value}.", kind="fact", key=f"user:allergy:{slug(value)}",
                     value=value, confidence=0.95, importance=0.9, sensitivity="special")


@rule(rf"\b(?:my name is|call me|i go by|people call me) (?P<v>{_NAME})")
def _name(m):
    return _fact(user_key("name"), f"The user's name is {m.group('v')}.", m.group("v"), importance=0.8)


@rule(r"\bi(?:'m| am|'ll be| will be) (?:now |just )?(?P<v>\d{1,3}) (?:years old|yrs old|y/o)\b|\bi just turned (?P<v2>\d{1,3})\b")
def _age(m):
    age = m.group("v") or m.group("v2")
    return _fact(user_key("age"), f"The user is {age} years old.", age, importance=0.5)


@rule(rf"\bmy birthday is (?:on )?{_VALUE}{_END}")
def _birthday(m):
    value = _clean(m.group("v"))
    return _fact(user_key("birthday"), f"The user's birthday is {value}.", value, importance=0.6)


@rule(rf"\bmy (?:native|first|mother) (?:language|tongue) is {_VALUE}{_END}")
def _native_language(m):
    value = _clean(m.group("v"))
    return _fact(user_key("native_language"), f"The user's native language is {value}.", value)


@rule(rf"\bmy time ?zone is (?:now )?{_VALUE}{_END}|\bi'?m in the (?P<v2>[^.,;!?\n]{{2,30}}) time ?zone\b")
def _timezone(m):
    value = _clean(m.group("v") or m.group("v2"))
    return _fact(user_key("timezone"), f"The user's timezone is {value}.", value, importance=0.7)


@rule(rf"\bmy (?:main |only |current |new |favou?rite )?hobby(?: these days| nowadays| now)? (?:is|has become) (?:now )?{_VALUE}{_END}|\bi(?:'ve| have) (?:recently |just )?taken up {_VALUE.replace('P<v>', 'P<v2>')}{_END}")
def _hobby(m):
    value = _clean(m.group("v") or m.group("v2"))
    return _fact(user_key("hobby"), f"The user's hobby is {value}.", value, importance=0.6)


# --- plans and procedures ------------------------------------------------------------------


# A plan keeps its time qualifier ("next spring"), so it runs to the end of the sentence.
_NOT_PLANNED = re.compile(r"(?i)(?:go|be|have|do|get|sleep|eat|bed|head|need)\b"
                          r"(?!.*\b(?:next|in \d{4}|this (?:summer|winter|spring|autumn|fall|year)))")
_NOUN_PHRASE = re.compile(r"(?i)(?:an?|the|my|our|some)\s")


_FOR_VERBS = {"saving up", "aiming", "scheduled"}


def _plan_statement(verb: str, to: str, value: str) -> str | None:
    """The plan as a sentence about the user, or None when the words are no plan. `to` is the
    word after the verb ("to", "on", "for" or "")."""
    noun_phrase = _NOUN_PHRASE.match(value) is not None
    if noun_phrase:
        if (_bare(value).split() or [""])[0].lower() in {"few", "lot", "bit"}:  # "planning a few"
            return None
        value = re.sub(r"(?i)^(?:my|our)\s", "their ", value)
    if to == "for":  # "saving up for a house"; not "going for my dreams"
        return f"The user is {verb} for {value}." if verb in _FOR_VERBS else None
    if verb == "going" and to in ("to", "on") and (noun_phrase or re.match(r"(?-i:[A-Z])", value)):
        return f"The user plans to go {to} {value}."  # "going to a conference / on a trip / to Rome"
    if verb.startswith("plan") and noun_phrase:  # "planning a trip", "planning on a trip"
        return f"The user plans {value}."
    if to and not noun_phrase:  # "planning to move", "going to visit Rome"
        return f"The user plans to {value}."
    # "going through a hard time", "hoping we can", "hoping to a better year"
    return None


# A plan keeps its time qualifier ("next spring"), so it runs to the end of the sentence.
_NOT_PLANNED = re.compile(r"(?i)(?:go|be|have|do|get|sleep|eat|bed|head|need)\b"
                          r"(?!.*\b(?:next|in \d{4}|this (?:summer|winter|spring|autumn|fall|year)))")
_NOUN_PHRASE = re.compile(r"(?i)(?:an?|the|my|our|some)\s")


def _plan_statement(verb: str, to: str, value: str) -> str | None:
    """The plan as a sentence about the user, or None when the words are no plan."""
    if _NOUN_PHRASE.match(value):
        head = _bare(value).split()[0].lower() if _bare(value).split() else ""
        if head in {"few", "lot", "bit"}:  # "planning a few", "going to a lot of trouble"
            return None
        value = re.sub(r"(?i)^(?:my|our)\s", "their ", value)
        if to == "":
            # Only "plan" takes its plan as an object ("I'm planning a trip"); "I'm going
            # through a hard time" and "I'm hoping we can" are no plans.
            return f"The user plans {value}." if verb.startswith("plan") else None
        if to == "for":  # "saving up for a house", "aiming for a promotion"; not "going for my dreams"
            return f"The user is {verb} for {value}." if verb in {"saving up", "aiming", "scheduled"} else None
        if verb == "going":  # "I'm going to a conference", "going on a trip"
            return f"The user plans to go {to} {value}."
        # "planning on a trip"; "hoping to a ..." or "intend on the ..." reads as no plan
        return f"The user plans {value}." if verb.startswith("plan") else None
    if to == "":
        return None
    if verb == "going" and to == "to" and re.match(r"(?-i:[A-Z])", value):  # "I'm going to Rome next spring"
        return f"The user plans to go to {value}."
    if to == "for":  # "scheduled for surgery next month"
        return f"The user is {verb} for {value}." if verb in {"saving up", "aiming", "scheduled"} else None
    return f"The user plans to {value}."


# A plan keeps its time qualifier ("next spring"), so it runs to the end of the sentence.
@rule(r"\bi(?:'m| am)? (?P<verb>planning|plan|intend|intending|hoping|going|aiming|saving up|scheduled) (?:(?P<to>on|to|for) )?(?P<v>[^.;!?\n]{2,120})")
def _plan(m):
    value = _clean(m.group("v"))
    if not value or len(value.split()) < 2 or _NOT_PLANNED.match(value):
        return None
    statement = _plan_statement(m.group("verb").lower(), (m.group("to") or "").lower(), value)
    if statement is None:
        return None
    return Candidate(statement=statement, kind="plan", key="", value=value, confidence=0.75, importance=0.6)


@rule(r"\b(?:from now on|going forward|in (?:the )?future|always|never|please always|please never|make sure to always|be sure to)[,]? (?P<v>(?:please )?(?:always |never |do not |don't )?(?:reply|respond|answer|write|use|call|address|format|send|include|keep|start|end|give|show|summari[sz]e|put|sign|cc|remind)\b[^.!?\n]{2,160})")
def _procedure(m):
    value = _clean(m.group("v"))
    lead = re.match(r"(?i)\b(?:always|never|please always|please never)", m.group(0))
    text = m.group(0).strip().rstrip(".")
    statement = text[0].upper() + text[1:] + "."
    del lead
    return Candidate(statement=statement, kind="procedure", key=f"user:procedure:{slug(value)[:40]}", value=value,
                     memory_type="procedural", confidence=0.85, importance=0.8)


# --- the extractor --------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|;\s+|\s+(?:but|and) (?=i(?:'m|'ve| am| have| now| just| live| work| moved)\b)", re.I)
_CHATTER = re.compile(
    r"^(?:thanks?(?: you)?(?: so much| a lot)?|thx|ty|ok(?:ay)?|cool|great|nice|lol|haha|hmm+|brb|gtg|bye|"
    r"see you|good (?:morning|night|evening|afternoon)|hi|hello|hey|sure|yes|no|yep|nope|np|you too|"
    r"sounds good|got it|awesome|perfect|wow|oh|ah)\b[\s!.?]*$",
    re.I,
)
_YOU_TO_I = [
    (re.compile(r"\byou're\b", re.I), "i'm"), (re.compile(r"\byou are\b", re.I), "i am"),
    (re.compile(r"\byou've\b", re.I), "i've"), (re.compile(r"\byour\b", re.I), "my"),
    (re.compile(r"\byou\b", re.I), "i"),
]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _strip_leads(sentence: str) -> tuple[str, bool, bool]:
    """Remove fillers, "remember that" and correction openers; report which were present."""
    explicit = correction = False
    for _ in range(3):
        before = sentence
        sentence = _FILLER_LEAD.sub("", sentence)
        if _REMEMBER_LEAD.match(sentence):
            explicit = True
            sentence = _REMEMBER_LEAD.sub("", sentence)
        if _CORRECTION_LEAD.match(sentence):
            stripped = _CORRECTION_LEAD.sub("", sentence)
            if stripped != sentence:
                correction = True
                sentence = stripped
        if sentence == before:
            break
    return sentence.strip(), explicit, correction


def extract_candidates(text: str, *, role: str = "user") -> list[Candidate]:
    """Candidates from one event's (already redacted) text. Only the user speaks for themself;
    an assistant's "you live in ..." is kept as an inference with lower confidence."""
    if role not in ("user", "assistant"):
        return []
    found: list[Candidate] = []
    seen_keys: set[str] = set()
    for raw in split_sentences(text):
        if raw.endswith("?") or _CHATTER.match(raw) or "[redacted" in raw:
            continue
        sentence, explicit, correction = _strip_leads(raw)
        if role == "assistant":
            if not re.search(r"\byou(?:'re|'ve| are| have| live| work| moved| prefer| like| love)\b", sentence, re.I):
                continue
            for pattern, repl in _YOU_TO_I:
                sentence = pattern.sub(repl, sentence)
        if not sentence or _HYPOTHETICAL.search(sentence):
            continue
        ephemeral = bool(_EPHEMERAL.search(sentence))
        for pattern, builder in _RULES:
            match = pattern.search(sentence)
            if not match:
                continue
            candidate = builder(match)
            if candidate is None:
                continue
            if ephemeral and candidate.kind not in ("procedure",):
                # "I'm working from Lisbon this week" is an arrangement, not a home.
                break
            if candidate.key and candidate.key in seen_keys:
                continue
            if correction or (_CORRECTION_ANYWHERE.search(sentence) and candidate.key):
                candidate.decision = "update"
                if correction:
                    candidate.kind = "correction" if candidate.kind == "fact" else candidate.kind
            if explicit:
                candidate.explicit = True
                candidate.confidence = max(candidate.confidence, 0.95)
            if role == "assistant":
                candidate.confidence = round(candidate.confidence * 0.7, 3)
            candidate.metadata["sentence"] = raw[:300]
            found.append(candidate)
            if candidate.key:
                seen_keys.add(candidate.key)
            break
    return found


def is_ephemeral(text: str) -> bool:
    """Every sentence is chatter or tied to the moment: the episode is short-term only."""
    sentences = split_sentences(text)
    return bool(sentences) and all(
        _CHATTER.match(s) or (_EPHEMERAL.search(s) and not extract_candidates(s)) for s in sentences
    )
