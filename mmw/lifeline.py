"""Tie a process's life to its parent's: the kernel kills it when the parent dies.

``manage.py serve`` sets this in each child it starts (between fork and exec), so a SIGKILL of
``serve`` leaves no orphans. Celery's prefork pool processes already do the same with their worker
(``celery.concurrency.prefork.process_initializer``: ``set_pdeathsig('SIGKILL')``; verified by
tests/mmw/test_faults.py). Linux only (``prctl``); elsewhere a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from typing import Any

PR_SET_PDEATHSIG = 1


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl


# Loaded at import, in the parent: a preexec_fn runs between fork and exec, where loading a
# library could deadlock on a lock another thread of the parent held at fork time.
_prctl = _load_prctl()


def die_with_parent(expected_parent: int | None = None, sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent exits.

    ``expected_parent``: if the parent is already gone (re-parented) by the time this runs, exit
    now rather than live on as an orphan. Safe in a ``preexec_fn``: no allocation-heavy work."""
    if _prctl is None:
        return
    _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)
