"""MMW: a hosted memory service for AI agents."""

from mmw.celery import app as celery_app

__all__ = ["celery_app"]
