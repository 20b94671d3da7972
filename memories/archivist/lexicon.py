"""The archivist's word lists (English, Russian, French): stop words, negations, the words that
start a predicate, announce a change or an addition, name one of many things, the classes of
values and the pairs of opposite words — and ``fold`` and ``stem``, which every list and every
token go through. Data, read by ``memories.archivist.text``."""

from __future__ import annotations

import re
import unicodedata

from memories.words import STOP_WORDS
from mmw.text import strip_marks

VOWELS = frozenset("aeiouyаеёиоуыэюяйь")


def fold(text: str) -> str:
    """Lower case without accents (``é`` → ``e``, ``ё`` → ``е``); Cyrillic otherwise kept."""
    text = text.replace("’", "'").replace("ё", "е").replace("Ё", "Е")
    return unicodedata.normalize("NFC", strip_marks(text.lower()))


def stem(word: str) -> str:
    """A crude language-neutral stem: five letters for long words; short words lose a plural ``s``
    and one final vowel. Good enough to match ``deploy``/``deployment``, ``сервер``/``сервера``,
    ``déploiement``/``déployer``, ``rate``/``rates``."""
    if len(word) >= 6:
        return word[:5]
    if len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    if len(word) > 3 and word[-1] in VOWELS:
        word = word[:-1]
    return word


# --- word lists ---------------------------------------------------------------------------------


def words(text: str) -> frozenset[str]:
    """A word list written as text, folded as tokens are."""
    return frozenset(fold(w) for w in text.split())


STOP = words(" ".join(STOP_WORDS)) | words(
    """
    also just only very more most much many some any all each every can could should would must may
    might shall now then there here into onto over under about after before via per than such
    other same new old one two still yet again longer up out without whether if so its it's
    это также тоже уже ещё еще очень всё все весь вся надо нужно можно должен должна должны через
    при над под после перед между про будет будут больше до раз каждый каждая каждое каждую каждого
    каждой каждом каждым
    aussi très tout tous toute toutes avec chez entre après avant sous être avoir fait faut doit
    peut encore déjà deja ici là sans plus chaque jusqu jusque
    """
)
# Words that negate the clause they are in.
NEGATIONS = words("not no never cannot none nobody nothing не нет никогда нельзя ни ne pas jamais aucun aucune")
# Copulas, auxiliaries and common verbs: the first one after the subject starts the predicate.
PREDICATE_WORDS = words(
    """
    is are was were be been am has have had does do did can cannot could must should shall will
    would may might need needs
    use uses used run runs ran own owns go goes went happen happens live lives sit sits store stores
    stored keep keeps kept listen listens point points handle handles serve serves send sends sent
    take takes took support supports require requires prefer prefers want wants like likes work
    works start starts started end ends ended change changes changed move moves moved lag lags
    process processes return returns allow allows talk talks reviewed fail fails failed ship ships
    shipped pay pays paid caused booked assigned built written deploy deploys deployed hosted
    retried rebuilt generated answered reset retained managed carry carries carried retrained
    replicated scanned pushed routed exported tested expire expires expired contain contains belong
    belongs get gets got make makes made give gives receive receives rotated verified include
    includes consume consumes publish publishes published commit commits reply replies last lasts
    migrated upgraded switched replaced raised lowered encrypted signed approved merged fixed
    released resized hashed stay stays means mean leaves leave
    является являются есть был была было были будет будут
    est sont suis es sommes êtes était étaient sera seront a ai as avons avez ont avait avaient été
    doit doivent peut peuvent va vont
    utilise utilisent tourne tournent passe passent part partent gère gèrent écoute écoutent paie
    paient préfère préfèrent veut veulent aime aiment compte comptent répond répondent prend
    prennent garde gardent stocke stockent envoie envoient écrit écrivent lance lancent relance
    relancent valide valident arrive arrivent accepte acceptent demande demandent figure figurent
    expire expirent réessaie réessaient remonte remontent appartient appartiennent héberge
    hébergent contient contiennent reste restent sert servent termine terminent change changent
    dépend dépendent travaille travaillent s se
    """
)
SEPARATORS = frozenset("—–:=")
# After one of these, a token is one item of a list: "PostgreSQL 16 and Redis 7".
LIST_WORDS = frozenset([",", "and", "or", "и", "или", "et", "ou"])
# The predicate is in the past: the record tells an event ("Caroline went to Paris on 7 May"),
# and two events with different values are two events.
PAST_WORDS = words(
    """
    was were had did went ran took made got gave sent paid built wrote bought met saw said told left
    came began won lost spent held kept shipped liked loved enjoyed
    был была было были
    """
)
FRENCH_AUXILIARIES = words("a ai as avons avez ont avait avaient")
# Predicates that hold for many values at once: liking Python does not rule out liking Rust.
MANY_VALUED = words(
    "like likes liked love loves loved enjoy enjoys enjoyed любит любят нравится нравятся aime aiment adore adorent"
)
# A pronoun subject ("we deploy…", "мы держим…", "on garde…"): the predicate may be the first token.
PRONOUNS = words("i we you they he she мы я вы они он она nous on je vous ils elles il elle")
FRENCH_PARTICIPLE = re.compile(r"\w+(?:e|ee|es|ees|i|is|it|u|us|ue)")
# Russian verb forms by their endings (present, past, short participle), less the nouns that
# end like them.
RU_VERB_ENDINGS = tuple("ется ются ится ятся тся ает яет еет ует ают яют уют ит ут ют ят".split())  # noqa: SIM905 - a word list reads better as text
RU_PAST_ENDINGS = tuple("ал ял ил ел ала яла ила ела али яли или ели ало ило лся лась лись".split())  # noqa: SIM905
RU_PARTICIPLE_ENDINGS = tuple("ен ена ено ены ан ана ано аны ян яна нут нута нуты".split())  # noqa: SIM905
RU_NOT_VERBS = words(
    """
    лимит кредит визит аудит депозит транзит бит маршрут атрибут институт минут парашют салют канал
    сигнал терминал портал материал отдел раздел правила начало отпуск план экран тюльпан стакан
    """
)
# Update cues: the newer record says a value changed. "Also" words make it an addition instead.
UPDATE_WORDS = words(
    """
    moved migrated switched changed upgraded downgraded raised lowered replaced renamed now anymore
    перенесли перенесен перенесён перевели переведен переехал переехали переехала перешли обновили
    обновлен сменили заменили теперь вместо отныне
    migré migrée migrés déplacé déplacée déménagé passé passée désormais maintenant remplacé
    remplacée lieu
    """
)
ADDITIVE_WORDS = words("also additionally ещё еще тоже также aussi également")
# A number or identifier right after one of these names a different thing, not a different value:
# "ticket OPS-311" / "ticket OPS-318", "tenant 17" / "tenant 23", "PR 412" / "PR 415".
ENTITY_WORDS = words(
    """
    pr ticket issue invoice build order user customer client tenant sprint release incident module
    host job task room step commit case bug story epic account project team queue repository repo
    pool service endpoint bucket pipeline worker cron
    тикет задача задачи счет сборка заказ пользователь арендатор спринт релиз инцидент модуль хост
    очередь репозиторий сервис флаг реплика таблице таблица пул
    facture commande utilisateur locataire hote file depot drapeau tache table salle
    """
)
# Closed classes of values: two different members of one class in the same slot disagree.
CLASS_WORDS: dict[str, frozenset[str]] = {
    "weekday": words(
        """
        monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays
        thursdays fridays saturdays sundays понедельник понедельникам вторник вторникам среда среду
        средам четверг четвергам пятница пятницу пятницам суббота субботу субботам воскресенье
        воскресеньям lundi mardi mercredi jeudi vendredi samedi dimanche
        """
    ),
    "month": words(
        """
        january february march april june july august september october november december января
        февраля марта апреля мая июня июля августа сентября октября ноября декабря январь февраль
        март апрель май июнь июль август сентябрь октябрь ноябрь декабрь janvier fevrier mars avril
        mai juin juillet aout septembre octobre novembre decembre
        """
    ),
    "language": words(
        """
        english russian french german spanish chinese italian английский английском русский русском
        русски французский французском немецкий немецком испанский anglais francais russe allemand
        espagnol chinois italien
        """
    ),
    "period": words(
        """
        hour hours day days week weeks month months year years night nights час часа часов день дня
        дней неделя неделю недели месяц месяца год года лет ночь ночи heure heures jour jours
        semaine semaines mois annee annees an ans nuit nuits
        """
    ),
    "frequency": words(
        """
        hourly daily weekly monthly yearly annually nightly quarterly ежечасно ежедневно еженедельно
        ежемесячно ежегодно quotidien quotidienne hebdomadaire mensuel mensuelle annuel nocturne
        """
    ),
}
# Pairs of opposite words; a slot that swaps one side for the other is a contradiction. A word
# ending in * is a prefix (folded: no accents), any other must match whole.
ANTONYM_WORDS = [
    (
        "enable enabled enabl* activ* включ* актив*",
        "disable disabled disabl* deactiv* inactiv* выключ* отключ* деактив* desactiv*",
    ),
    ("allow allows allowed permitted разреш* autoris*", "forbidden prohibited запрещ* interdit interdite interdits"),
    ("required mandatory обязател* obligatoire obligatoires", "optional необязател* facultati* optionnel*"),
    ("true", "false"),
    ("public публичн* publique publiques", "private приватн* prive privee prives privees"),
    (
        "synchronous synchronously синхронн* synchrone synchrones",
        "asynchronous asynchronously асинхронн* asynchrone asynchrones",
    ),
    ("dark темн* sombre", "light светл* clair claire"),
    ("metric метрическ* metrique metriques", "imperial имперск* imperiale imperiales"),
    ("online онлайн", "offline офлайн оффлайн"),
]


def stems(words: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(fold(w)) for w in words)


ENTITY_STEMS = stems(ENTITY_WORDS)
CLASS_LOOKUP: dict[str, str] = {s: name for name, words in CLASS_WORDS.items() for s in stems(words)}
ANTONYMS = tuple((words(a), words(b)) for a, b in ANTONYM_WORDS)
