"""Which runs a dataset export takes: a space, a protocol, an outcome, proven successes
only (the default), and a range of days or instants. ``Filters.parse`` turns what a
person types into filters, or a ``ValidationError`` naming the field."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from .errors import ValidationError
from .run_data import RunData
from .uris import parse_uri, to_uri

OUTCOMES = ("success", "failure")
_WHEN = "a date (YYYY-MM-DD) or an ISO-8601 date and time"


def _instant(value: datetime) -> datetime:
    """Naive times are UTC, as the store writes them."""
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def parse_when(value: Any, name: str, *, end: bool = False) -> datetime:
    """The first instant a bound admits (``end``: the first it no longer admits). A date
    covers its whole day, so ``until=2026-05-31`` takes the runs of the 31st."""
    if isinstance(value, datetime):
        moment = _instant(value)
        return moment + timedelta(microseconds=1) if end else moment
    if isinstance(value, date):
        day = datetime(value.year, value.month, value.day, tzinfo=UTC)
        return day + timedelta(days=1) if end else day
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(name, _WHEN)
    text = value.strip()
    try:
        if len(text) == 10:
            return parse_when(date.fromisoformat(text), name, end=end)
        return parse_when(datetime.fromisoformat(text), name, end=end)
    except ValueError:
        raise ValidationError(name, _WHEN, message=f"Invalid {name} {value!r}: expected "
                              f"{_WHEN}.") from None


@dataclass(frozen=True)
class Filters:
    """``since`` admits runs that began at or after it; ``until`` is exclusive (see
    ``parse_when`` for how a typed date becomes one)."""

    space: str | None = None
    protocol: str | None = None       # the URI of any step of the protocol
    outcome: str | None = None        # success | failure
    proven_only: bool = True
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def parse(cls, *, space: str | None = None, protocol: Any = None, outcome: Any = None,
              proven_only: Any = True, since: Any = None, until: Any = None) -> Filters:
        uri = None if protocol is None else to_uri(parse_uri(protocol, "protocol"))
        if outcome is not None and outcome not in OUTCOMES:
            raise ValidationError("outcome", " or ".join(OUTCOMES))
        if not isinstance(proven_only, bool):
            raise ValidationError("proven_only", "true or false")
        start = None if since is None else parse_when(since, "since")
        stop = None if until is None else parse_when(until, "until", end=True)
        if start is not None and stop is not None and stop <= start:
            raise ValidationError("until", "a date or time after since")
        return cls(space, uri, outcome, proven_only, start, stop)

    def selects(self, run: RunData) -> bool:
        """Whether ``run`` is one of the runs these filters take. A run without an
        outcome never is; an unproven success only when ``proven_only`` is off."""
        if not run.counts(include_unproven=not self.proven_only):
            return False
        if self.space is not None and run.space != self.space:
            return False
        if self.outcome is not None and run.outcome != self.outcome:
            return False
        if self.protocol is not None and self.protocol != run.protocol.uri and \
                self.protocol not in {s.uri for s in run.protocol.steps}:
            return False
        if self.since is None and self.until is None:
            return True
        try:
            began = _instant(datetime.fromisoformat(run.created_at))
        except ValueError:
            return False  # a run whose time cannot be read is in no range
        return ((self.since is None or began >= self.since)
                and (self.until is None or began < self.until))


__all__ = ["OUTCOMES", "Filters", "parse_when"]
