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
