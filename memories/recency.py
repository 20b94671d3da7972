"""Recency inside the keyword index: a record's creation time as coarse lexemes (issue #19).

When even a query's rarest word is in more than ``search.KEYWORD_SCORED_ROWS`` records, the
keyword ranker scores only that word's newest matches. Finding them used to mean reading every
match from the heap and sorting it by ``created_at``: at 1M records a word in 1 % of them is
~9,500 heap pages per search (docs/latency.md, "Recency inside the keyword index"). The GIN index cannot order by
time, but it can intersect: every record carries ``recency_document``, one lexeme per level of
nested time buckets (an hour, 8 hours, 64 hours, … each ``FACTOR`` times the last), and the
keyword GIN index holds it beside ``search_document``. A *window* — the buckets covering the
project's newest stretch of time, sized from the word's document frequency to hold about
``MARGIN`` times the matches wanted — then cuts the word's posting list inside the index, and
only the matches in the window reach the heap.

Exactness: a window is the newest stretch of time, whole buckets, so every record outside it is
older than every record inside. When the window holds at least the matches wanted, its newest
matches are the word's newest matches; when it holds fewer (the word is rarer lately than on
average), ``sql.keyword_ranked`` falls back to the unwindowed scan in the same statement. The
answer never depends on the window; only the work does.

The buckets are counted per project in ``TermStat`` (the lexemes start with ``#``, which no word
lexeme can: the ``simple`` parser splits on it), so choosing a window is one indexed read of at
most ~90 rows. Every window starts ~30 years ahead of the searching server's clock (the buckets
ahead are almost always empty and cost the index next to nothing): a record dated ahead of it — a
server whose clock runs ahead, a restored file — is still inside, so it is never missed.

The same bucket arithmetic lives in SQL (``mmw_recency_document``, migration 0012); a test keeps
the two equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

BASE_SECONDS = 3600  # the finest bucket: an hour
FACTOR = 8  # each level's bucket holds FACTOR of the level below
LEVELS = 6  # an hour, 8 h, 64 h (2.7 days), 512 h (21 days), 4,096 h (171 days), 32,768 h (3.7 years)
TOP_REACH = 8  # top-level buckets a window may reach back (~30 years)
# The window aims at this many times the matches wanted: a word is rarely spread evenly in time,
# and a window that holds too few costs the unwindowed scan on top.
MARGIN = 2.0
# A window expected to hold more than this share of the project saves too little: no window.
MAX_SHARE = 0.5
# A bucket that would straddle the window's old end is split into its sub-buckets unless it is
# estimated to hold at most this share of what the window needs (then it is taken whole).
SPLIT_SHARE = 0.25


def needed(wanted: int, matches: int, corpus: int) -> float:
    """The records a window should hold so that, if ``matches`` of a project's ``corpus`` records
    are spread evenly in time, it holds ``MARGIN`` times ``wanted`` of them."""
    return MARGIN * wanted * corpus / max(matches, 1)


def width(level: int) -> int:
    """The seconds a bucket of ``level`` spans."""
    return int(BASE_SECONDS * FACTOR**level)


def bucket(level: int, at: datetime) -> int:
    """The index of the ``level`` bucket holding ``at`` (whole seconds since the epoch, divided
    by the bucket's width; times after 1970 only)."""
    return math.floor(at.timestamp()) // width(level)


def lexeme(level: int, index: int) -> str:
    """The lexeme of bucket ``index`` of ``level``: ``#<level>.<index>``."""
    return f"#{level}.{index}"


def lexemes(at: datetime) -> list[str]:
    """A record created at ``at``'s ``recency_document`` lexemes, one per level (what
    ``mmw_recency_document`` stores)."""
    return [lexeme(level, bucket(level, at)) for level in range(LEVELS)]


@dataclass(frozen=True)
class Bucket:
    level: int
    index: int

    @property
    def lexeme(self) -> str:
        return lexeme(self.level, self.index)

    def parts(self) -> Iterator[Bucket]:
        """Its sub-buckets, newest first."""
        first = self.index * FACTOR
        return (Bucket(self.level - 1, i) for i in range(first + FACTOR - 1, first - 1, -1))


def reachable(now: datetime) -> list[Bucket]:
    """The buckets tiling time from ``TOP_REACH`` top buckets after ``now``'s back ``TOP_REACH``
    top buckets before it, newest first, coarsest allowed: ahead of ``now``, the later top
    buckets, then the current top bucket's later buckets of the level below, and so on down to
    the current 8-hour block's later hours (records dated ahead of this server's clock: another
    server's clock, a restored file); then ``now``'s hour, the current 8-hour block's earlier
    hours, the current 64-hour block's earlier 8-hour buckets, and so on back. Consecutive buckets
    meet: together they are one stretch of time, and nothing newer than it is within ~30 years."""
    ahead: list[Bucket] = []
    behind: list[Bucket] = [Bucket(0, bucket(0, now))]
    for level in range(LEVELS):
        current = bucket(level, now)
        top = level == LEVELS - 1
        last = current + TOP_REACH if top else bucket(level + 1, now) * FACTOR + FACTOR - 1
        first = current - TOP_REACH if top else bucket(level + 1, now) * FACTOR
        ahead = [Bucket(level, i) for i in range(last, current, -1)] + ahead
        behind += [Bucket(level, i) for i in range(current - 1, first - 1, -1)]
    return ahead + behind


def window(
    now: datetime, needed: float, corpus: int, counts_of: Callable[[Sequence[str]], Mapping[str, int]]
) -> list[str]:
    """The lexemes of the newest stretch of time expected to hold ``needed`` of a project's
    ``corpus`` records, given ``counts_of`` (the project's record count per lexeme); ``[]`` for
    no window (it would hold more than ``MAX_SHARE`` of the project, or every bucket together
    holds fewer than ``needed``).

    Whole buckets are taken newest first while they hold less than what is still needed; the one
    that would straddle the old end is split into its sub-buckets, each estimated at an even share
    of its count, down to the hour (or taken whole when it is at most ``SPLIT_SHARE`` of
    ``needed``). So the window overshoots by about an hour's records, or a quarter of ``needed``.
    Buckets the counts call empty are taken too: the counts leave out private and forgotten
    records, and a window with a gap would not be the newest stretch of time."""
    if corpus <= 0 or needed > MAX_SHARE * corpus:
        return []
    tiles = reachable(now)
    counts = counts_of([b.lexeme for b in tiles])
    chosen: list[str] = []
    remaining = needed
    for tile in tiles:
        count = counts.get(tile.lexeme, 0)
        if count < remaining:
            chosen.append(tile.lexeme)  # even when empty: it may hold records the counts leave out
            remaining -= count
            continue
        chosen += _split(tile, float(count), remaining, needed)
        return chosen
    return []


def _split(tile: Bucket, count: float, remaining: float, needed: float) -> list[str]:
    """The newest part of ``tile`` (estimated to hold ``count``) expected to hold ``remaining``."""
    if tile.level == 0 or count <= SPLIT_SHARE * needed:
        return [tile.lexeme]
    share = count / FACTOR
    taken: list[str] = []
    for part in tile.parts():
        if share < remaining:
            taken.append(part.lexeme)
            remaining -= share
            continue
        return taken + _split(part, share, remaining, needed)
    return taken  # unreachable: the parts together hold ``count`` ≥ ``remaining``
