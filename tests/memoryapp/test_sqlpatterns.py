import pytest
from django.db import connection

from memoryapp.sqlpatterns import like_escape


@pytest.mark.django_db
@pytest.mark.parametrize("value,other", [("user_1", "userX1"), ("50%", "50 apples"), ("a\\b", "ab")])
def test_an_escaped_value_matches_itself_in_like_and_nothing_its_wildcards_would(value, other):
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s LIKE %s, %s LIKE %s, %s LIKE %s",
                       [value, like_escape(value), other, like_escape(value), value + "/x", like_escape(value) + "/%"])
        assert cursor.fetchone() == (True, False, True)
