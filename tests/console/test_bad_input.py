"""Bad filter input on console pages is a form error on the page, never a 500."""
import pytest
from django.urls import reverse

from tests.console.conftest import client_for

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.mark.parametrize("field", ["since", "until"])
@pytest.mark.parametrize("offset", ["+16:00", "-23:59", "+14:01"])
@pytest.mark.parametrize("hx", [False, True])
def test_audit_filter_time_with_an_offset_beyond_14_hours_is_a_form_error(world, field, offset, hx):
    response = client_for(world.admin_a).get(reverse("console:admin_audit"),
                                             {field: f"2026-01-01T00:00{offset}"}, **(HX if hx else {}))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="alert"' in html and "offset must be between -14:00 and +14:00" in html


@pytest.mark.parametrize("since", ["2026-01-01T00:00+14:00", "2026-01-01T00:00-12:00", "0001-01-01T00:00+14:00",
                                   "9999-12-31T23:59-12:00", "2026-01-01T00:00"])
def test_audit_filter_times_with_real_offsets_still_filter(world, since):
    response = client_for(world.admin_a).get(reverse("console:admin_audit"), {"since": since}, **HX)
    assert response.status_code == 200 and 'role="alert"' not in response.content.decode()
