"""The times a client may send, for every door: the API's fields and list cursors, and the
console's filters. Outside them a time fails in PostgreSQL (a 500) instead of at the door."""
from datetime import datetime, timedelta, timezone as dt_timezone

# The earliest and latest times we accept: beyond them a timezone shift can overflow.
MIN_TIME = datetime(1900, 1, 1, tzinfo=dt_timezone.utc)
MAX_TIME = datetime(2200, 1, 1, tzinfo=dt_timezone.utc)
# Real UTC offsets lie in -12:00..+14:00. Python accepts up to ±23:59 but PostgreSQL refuses
# beyond ±15:59, so a wider one would reach the database and fail there.
MAX_UTC_OFFSET = timedelta(hours=14)


def utc_offset_problem(value: datetime) -> str | None:
    """Why a time a client sent cannot be right, or None."""
    offset = value.utcoffset()
    if offset is not None and abs(offset) > MAX_UTC_OFFSET:
        return "The UTC offset must be between -14:00 and +14:00."
    return None
