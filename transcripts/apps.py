from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TranscriptsConfig(AppConfig):
    """Uploaded sessions and their turns. Named ``transcripts`` because Django's
    ``contrib.sessions`` owns the label ``sessions``; the product, the URLs and the models say
    "session"."""

    name = "transcripts"
    verbose_name = _("Sessions")

    def ready(self) -> None:
        from memories import selectors as memory_selectors
        from transcripts import selectors

        memory_selectors.count_pending_turns_with(selectors.pending_turns)
