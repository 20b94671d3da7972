"""CSV for people's spreadsheets: every download of the dashboard (the memory browser's export,
the audit log) writes its cells through here.

A cell that a spreadsheet would read as a formula (starting with ``=``, ``+``, ``-``, ``@``, a
tab or a carriage return) is prefixed with ``'`` (OWASP's CSV-injection advice): agents and
members wrote these texts, and opening the file must not run them. A plain negative decimal
(``-1240.18``) is left as it is, so amounts stay numbers. The one rule for every CSV MMW writes
(the memory browser's export, the audit log, the ledger's CSV). Rows are rendered one at a time
so a response can stream them."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NEGATIVE = re.compile(r"-[0-9]+(\.[0-9]+)?")


def cell(value: object) -> str:
    """``value`` as one cell's text, formula-escaped (None: empty; a list: comma-joined)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list | tuple):
        text = ",".join(str(v) for v in value)
    else:
        text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) and not _PLAIN_NEGATIVE.fullmatch(text) else text


def lines(header: Sequence[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    """The header, then each row, as CSV text (RFC 4180 quoting, CRLF line ends), one line at a
    time; every cell goes through ``cell``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow([cell(h) for h in header])
    yield flush()
    for row in rows:
        writer.writerow([cell(v) for v in row])
        yield flush()
