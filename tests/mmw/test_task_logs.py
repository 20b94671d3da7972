"""Beat and task chatter stays out of the console at INFO (issue #40, item 2): the webhook scan
alone is sent every 10 s, and each run was three lines ("Sending due task", "received",
"succeeded") among the e-mails a person reads there. Failures still show."""

from __future__ import annotations

import logging
import logging.config
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
BROKER_DB = (
    2  # a Redis database of its own (the xdist workers take 15 down to 4): beat's messages are dropped after the test
)


def test_at_info_task_and_beat_loggers_say_only_warnings_and_errors() -> None:
    logging.config.dictConfig(settings.LOGGING)
    try:
        for name in ("celery.beat", "celery.app.trace", "celery.worker.strategy"):
            logger = logging.getLogger(name)
            assert not logger.isEnabledFor(logging.INFO), name
            assert logger.isEnabledFor(logging.WARNING), name
        assert logging.getLogger("mmw.serve").isEnabledFor(logging.INFO)
        assert logging.getLogger("celery.apps.worker").isEnabledFor(logging.INFO)  # "ready." stays
    finally:
        for name in ("celery.beat", "celery.app.trace", "celery.worker.strategy"):
            logging.getLogger(name).setLevel(logging.NOTSET)


@pytest.mark.slow  # runs celery beat for one tick of the 10-second webhook scan
def test_beat_sends_its_jobs_without_a_line_each(tmp_path: Path) -> None:
    broker = f"redis://127.0.0.1:6379/{BROKER_DB}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mmw.settings.test",
        "MMW_TEST_BROKER_URL": broker,
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("MMW_TASK_LOG_LEVEL", None)
    log = tmp_path / "beat.log"
    command = [sys.executable, "-m", "celery", "-A", "mmw", "beat", "--loglevel=INFO", "-s", str(tmp_path / "s")]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        queue = redis.Redis.from_url(broker)
        deadline = time.monotonic() + 40
        while not queue.llen("celery") and time.monotonic() < deadline:  # the first job sent
            time.sleep(0.5)
        assert queue.llen("celery"), log.read_text(errors="replace")[-2000:]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        redis.Redis.from_url(broker).flushdb()
    text = log.read_text(errors="replace")
    assert "celery beat" in text  # it ran and said so once
    assert "Sending due task" not in text
