from django.apps import AppConfig


class TranscriptsConfig(AppConfig):
    """Uploaded sessions and their turns. Named ``transcripts`` because Django's
    ``contrib.sessions`` owns the label ``sessions``; the product, the URLs and the models say
    "session"."""

    name = "transcripts"
    verbose_name = "Sessions"
