"""JSON bodies, bounded: size, nesting depth, and text PostgreSQL can store (no NUL, no lone
surrogates), checked once here so no field can carry such input to the database."""
import json

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def _check(value, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels.")
    if isinstance(value, str):
        if "\x00" in value:
            raise ParseError("Text may not contain NUL characters.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ParseError("Text contains an invalid unicode escape (a lone surrogate).") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, depth + 1)
            _check(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = body_limit()
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels.") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"The body is not valid JSON: {exc}") from None
        _check(data)
        return data
