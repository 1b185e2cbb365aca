"""JSON bodies, bounded: size, nesting depth, and text PostgreSQL can store (no NUL, no lone
surrogates), checked once here so no field can carry such input to the database."""
import json
import math

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


def json_problem(value, depth: int = 0) -> str | None:
    """What in a decoded JSON value PostgreSQL cannot store or compare, in words (None: nothing):
    NUL characters, lone surrogates, numbers beyond a double (1e999 decodes to infinity), nesting
    beyond MAX_DEPTH. Also for JSON that arrives in a query string or through another door."""
    if depth > MAX_DEPTH:
        return f"JSON nested deeper than {MAX_DEPTH} levels."
    if isinstance(value, str):
        if "\x00" in value:
            return "Text may not contain NUL characters."
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "Text contains an invalid unicode escape (a lone surrogate)."
    elif isinstance(value, float) and not math.isfinite(value):
        return "Numbers must be finite."
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = json_problem(key, depth + 1) or json_problem(item, depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for item in value:
            problem = json_problem(item, depth + 1)
            if problem:
                return problem
    return None


def json_loads_strict(raw: str):
    """json.loads without NaN or Infinity (not JSON, and PostgreSQL's jsonb refuses them)."""
    return json.loads(raw, parse_constant=_reject_constant)


def _check(value) -> None:
    problem = json_problem(value)
    if problem:
        raise ParseError(problem)


def body_limit() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = body_limit()
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        try:
            data = json_loads_strict(raw.decode("utf-8"))
        except RecursionError:
            raise ParseError(f"JSON nested deeper than {MAX_DEPTH} levels.") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"The body is not valid JSON: {exc}") from None
        _check(data)
        return data
