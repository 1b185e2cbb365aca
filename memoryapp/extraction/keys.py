"""Normalised keys: "<entity>:<attribute>[:<topic>]", so that two phrasings of the same
attribute ("I live in", "I moved to", "home is now") meet on one key and supersede each other."""
import re

# Topic words a preference can be about, with their canonical form. A preference naming one
# of these gets the key "user:preference:<topic>"; others stay unkeyed (they accumulate).
TOPICS = {
    "coffee": "coffee", "espresso": "coffee", "latte": "coffee", "cappuccino": "coffee",
    "tea": "tea", "drink": "drink", "beverage": "drink", "beer": "beer", "wine": "wine",
    "food": "food", "dish": "food", "meal": "food", "cuisine": "cuisine", "snack": "snack",
    "dessert": "dessert", "fruit": "fruit", "breakfast": "breakfast",
    "color": "colour", "colour": "colour",
    "movie": "film", "film": "film", "show": "tv_show", "series": "tv_show", "tv show": "tv_show",
    "book": "book", "novel": "book", "author": "author", "writer": "author",
    "music": "music", "genre": "music", "band": "band", "singer": "singer", "artist": "artist", "song": "song",
    "sport": "sport", "team": "team", "game": "game", "hobby": "hobby", "pastime": "hobby",
    "season": "season", "holiday": "holiday", "vacation": "holiday", "destination": "destination",
    "city": "city", "country": "country", "place": "place",
    "airline": "airline", "seat": "seat", "aisle": "seat", "window": "seat",
    "language": "language", "programming language": "programming_language", "editor": "editor",
    "restaurant": "restaurant", "cafe": "cafe", "flower": "flower", "animal": "animal",
    "car": "car_brand", "brand": "brand", "podcast": "podcast", "channel": "channel",
    "reply": "reply_style", "answer": "reply_style", "response": "reply_style", "format": "format",
    "meeting": "meetings", "meetings": "meetings", "email": "email", "emails": "email",
}

_SLUG = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    return _SLUG.sub("_", text.lower()).strip("_")[:60]


def topic_of(text: str) -> str | None:
    """The canonical topic a phrase is about, longest match first ("tv show" before "show")."""
    lowered = f" {text.lower()} "
    for word in sorted(TOPICS, key=len, reverse=True):
        if re.search(rf"\b{re.escape(word)}s?\b", lowered):
            return TOPICS[word]
    return None


def preference_key(topic_phrase: str) -> str:
    topic = topic_of(topic_phrase) or slug(re.sub(r"\b(?:kind|type|sort) of\b", "", topic_phrase))
    return f"user:preference:{topic}" if topic else ""


def user_key(attribute: str) -> str:
    return f"user:{attribute}"


# What each key means, in the words a question about it would use. Retrieval compares a query's
# embedding with these (memoryapp/keyroute.py) to tell which attribute a question asks about even
# when it shares no word with the stored fact ("What does the user do for a living?" and
# "The user works as a pilot."). A trailing ":" names a family of keys ("user:allergy:<what>").
DESCRIPTIONS = {
    "user:home_city": "Home city: where the user lives, the city or town they live in now",
    "user:work_city": "Work city: the city where the user works",
    "user:hometown": "Hometown: where the user is originally from, where they grew up",
    "user:job": "Job / profession / occupation: what the user does for work, for a living, their career",
    "user:employer": "Employer / company: the company or organisation the user works for",
    "user:pet": "Pet: the user's pet animal, its kind and name",
    "user:partner": "Partner / spouse: the user's partner, wife, husband, boyfriend or girlfriend",
    "user:car": "Car: the car or vehicle the user drives or owns",
    "user:hobby": "Hobby / pastime: what the user does in their free or spare time",
    "user:diet": "Diet: what the user eats or avoids eating, vegetarian, vegan",
    "user:name": "Name: the user's name, what they are called",
    "user:age": "Age: how old the user is",
    "user:birthday": "Birthday: the user's date of birth, when they were born",
    "user:native_language": "Native language: the user's mother tongue, the language they grew up speaking",
    "user:timezone": "Timezone: the user's time zone",
    "user:allergy:": "Allergies: what the user is allergic to",
}


def key_descriptions() -> dict[str, str]:
    """Every describable key: the fixed attributes, and a favourite for each preference topic
    (described by all the words that name that topic, so "dish" finds favourite food)."""
    words: dict[str, list[str]] = {}
    for word, topic in TOPICS.items():
        words.setdefault(topic, []).append(word)
    out = dict(DESCRIPTIONS)
    for topic, names in words.items():
        label = topic.replace("_", " ")
        out[f"user:preference:{topic}"] = (
            f"Favourite {label}: the {', '.join(dict.fromkeys([label, *names]))} the user likes best or prefers"
        )
    return out
