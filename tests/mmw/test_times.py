"""mmw.times: the edges of what Python (years 1-9999) and PostgreSQL can both hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mmw import times
from mmw.errors import InvalidInput


@pytest.mark.parametrize(
    "written", ["9999-12-31T23:59:59-14:00", "9999-12-31T10:00:00-14:00", "0001-01-01T00:00:00+14:00"]
)
def test_a_time_outside_the_years_1_to_9999_in_utc_is_refused_naming_its_field(written: str) -> None:
    with pytest.raises(InvalidInput) as excinfo:
        times.to_utc("until", datetime.fromisoformat(written))
    assert excinfo.value.message == "until must lie between the years 1 and 9999 once converted to UTC"


def test_the_last_and_first_moments_in_utc_are_kept() -> None:
    assert times.to_utc("t", datetime.fromisoformat("9999-12-31T09:59:59-14:00")) == datetime(
        9999, 12, 31, 23, 59, 59, tzinfo=UTC
    )
    assert times.to_utc("t", datetime.fromisoformat("0001-01-01T14:00:00+14:00")) == times.EARLIEST


def test_a_step_past_the_year_9999_is_none_or_the_cap() -> None:
    late = datetime(9999, 12, 1, tzinfo=UTC)
    assert times.later(late, timedelta(days=30)) == datetime(9999, 12, 31, tzinfo=UTC)
    assert times.later(late, timedelta(days=31)) is None
    assert times.later(times.EARLIEST, timedelta(days=-1)) is None
    assert times.capped_later(late, timedelta(days=366)) == times.LATEST
    assert times.later(times.EARLIEST, timedelta(days=times.MAX_DAYS)) is None
