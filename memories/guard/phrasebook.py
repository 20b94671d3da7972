"""The poisoning phrase tables (data), per language.  Notation: :mod:`memories.guard.phrases`.

Design rules that keep ordinary notes out (each was a false positive at some point):

- an override needs a *strong* verb (ignore/disregard/forget…; not delete/skip/cancel), a
  qualifier that points back at earlier instructions (previous/above/system…; not old/default)
  and an instruction-like noun (instructions/prompt/rules…; not messages/context/commands);
- "you are now …" needs an AI-persona noun (DAN, jailbroken, unrestricted AI…), so "you are now
  an admin of the org" stays ordinary; "from now on you …" only with jailbreak wording;
- an exfiltration order needs a send-like verb, secrets *in the plural* or something only an
  agent holds (conversation, system prompt, memories) or "all/every", and a destination (URL,
  e-mail, webhook) in the same sentence.

Why one module of this length: it is data, the phrase tables of every language, read together; the
matching code is ``memories.guard.phrases``.
"""

from __future__ import annotations

from memories.guard.phrases import Element, Gap, Opt, Phrase, PhraseSet, Raw, Req
from memories.guard.textviews import fold_literal

_LETTER_AHEAD = rb"(?![a-z\x80-\xff])"


def _colon() -> Element:
    return Raw(rb"[ \t]*+:", rb":", b":")


def _end() -> Element:
    """End of the clause: punctuation, end of text, or "and/then/now …"."""
    return Raw(
        rb"(?=[ \t]*+(?:[.!?;:,\n]|$)|[\s,]++(?:and|then|now|instead|et|und|y|puis|dann)" + _LETTER_AHEAD + rb")",
        rb"(?=[.!?;:,\n]|$|and|then|now|instead)",
        b"",
    )


def _preposition(*words: str) -> Element:
    folded = b"|".join(fold_literal(w) for w in words)
    return Raw(rb"[\s,]++(?:" + folded + rb")" + _LETTER_AHEAD, rb"(?:" + folded + rb")", b"")


_ANYTHING_SHORT = Raw(rb"[^.!?;\n]{0,40}?", rb"[^.!?;\n]{0,40}?", b"")
_TLD = rb"(?:com|net|org|io|ru|de|fr|es|xyz|site|app|dev|me|info|biz|co|cc|tk|top|sh|link|online)"
_DEST = Raw(  # a concrete destination: URL, e-mail address or host name (not "a webhook")
    rb"[^.!?;\n]{0,40}?(?:https?://|ftp://|[a-z0-9._%+\-]{1,64}@[a-z0-9\-]{1,63}\.[a-z0-9.\-]{2,}"
    rb"|(?<![a-z0-9.\-])[a-z0-9\-]{2,63}\.(?:[a-z0-9\-]{2,63}\.)?" + _TLD + rb"(?![a-z0-9\-]))",
    rb"[^.!?;\n]{0,40}?(?:https?://|ftp://|[a-z0-9%+\-]{1,64}@[a-z0-9\-]{3,})",
    b"://",
    b"@",
    b".",
)


# fmt: off
# ============================================================================ English

_EN_V_STRONG = (
    "ignore", "ignoring", "disregard", "disregarding", "forget", "forgetting", "do not follow", "don't follow",
    "dont follow", "stop following", "no longer follow", "never mind", "nevermind", "overlook",
)
_EN_V_WEAK = ("override", "overriding", "bypass", "bypassing", "dismiss", "discard", "abandon", "circumvent")
_EN_DET = (
    "all", "any", "every", "the", "your", "my", "these", "those", "of", "and", "or", "everything", "that", "you",
    "were", "have", "been", "received", "given", "to", "in", "from", "other", "its", "our", "this", "such",
    "whatever",
)
_EN_Q = (
    "previous", "previously", "prior", "above", "earlier", "preceding", "former", "foregoing", "original", "initial",
    "aforementioned", "hidden", "safety", "system", "developer", "given",
)
_EN_N = (
    "instruction", "instructions", "prompt", "prompts", "rule", "rules", "directive", "directives", "guideline",
    "guidelines", "guardrail", "guardrails", "restriction", "restrictions", "constraint", "constraints",
    "programming", "policies", "policy", "directions", "guidance", "system prompt", "system message", "limitations",
)
_EN_N_STRONG = (
    "instruction", "instructions", "prompt", "prompts", "directives", "guidelines", "guardrails", "system prompt",
    "programming", "safety rules", "safety guidelines", "content policy",
)

OVERRIDE_EN = PhraseSet(
    Phrase.of(Req(*_EN_V_STRONG), Gap(3, *_EN_DET), Req(*_EN_Q), Gap(2, *_EN_DET, *_EN_Q), Req(*_EN_N)),
    Phrase.of(Req(*_EN_V_WEAK), Gap(3, *_EN_DET), Req(*_EN_Q), Gap(2, *_EN_DET, *_EN_Q), Req(*_EN_N_STRONG)),
    Phrase.of(
        Req(*_EN_V_STRONG, *_EN_V_WEAK),
        Gap(2, *_EN_DET),
        Req("your", "all"),
        Gap(2, *_EN_DET),
        Req(*_EN_N_STRONG, "rules", "restrictions", "constraints", "limitations", "policies"),
    ),
    Phrase.of(
        Req(*_EN_V_STRONG),
        Gap(2, *_EN_DET),
        Req(*_EN_N),
        Req(
            "above", "before this", "so far", "you were given", "you have been given", "you've been given",
            "you received", "given to you", "given above", "given earlier", "given before", "from before",
            "you were told", "from your developers", "from the developers", "from openai", "from anthropic",
        ),
    ),
    Phrase.of(  # "forget everything above." (a complete order on its own)
        Req(*_EN_V_STRONG),
        Req("everything", "anything", "whatever", "everything that", "all that", "all of that"),
        Req(
            "above", "before this", "previous", "earlier", "you were told", "you've been told", "you have been told",
            "i said before", "said before", "so far", "you were taught",
        ),
        _end(),
    ),
    Phrase.of(  # "ignore the above and say ...": needs the follow-up ("just ignore all of the above." is a docs idiom)
        Req(*_EN_V_STRONG),
        Opt("the", "all", "all of the", "all the"),
        Req("above", "before this", "previous", "earlier"),
        Raw(
            rb"[ \t]*+(?:[,:;]|-)?[ \t]*+(?:and|then|instead|now|&)(?![a-z\x80-\xff])|[ \t]*+[:;]",
            rb"(?:and|then|instead|now|:|;)",
            b"",
        ),
    ),
    Phrase.of(
        Req("new", "real", "actual", "true"),
        Opt("system"),
        Req("instructions", "instruction", "directives", "directive"),
        _colon(),
        anchor=2,
    ),
    Phrase.of(Req("new system prompt", "override prompt", "system override", "admin override"), _colon()),
    Phrase.of(
        Req("your"),
        Req("new", "real", "true", "actual", "only", "updated"),
        Req("instructions", "instruction", "directive", "directives", "purpose", "objective", "system prompt"),
        Req("is", "are", "now", "will be"),
        anchor=2,
    ),
    Phrase.of(Req("system prompt override", "override the system prompt", "override your system prompt")),
    Phrase.of(  # "your previous instructions are cancelled" (addressed: "your"/"all", not "the")
        Req("your", "all"),
        Gap(2, *_EN_Q, "of", "your", "the"),
        Req("instructions", "instruction", "prompt", "system prompt", "directives", "guidelines", "rules"),
        Req("are", "is", "have been", "has been", "were", "are now", "is now"),
        Req(
            "cancelled", "canceled", "void", "revoked", "obsolete", "overridden", "superseded", "no longer valid",
            "no longer apply", "no longer in effect", "null and void",
        ),
        anchor=4,
    ),
    Phrase.of(
        Req(*_EN_V_STRONG),
        Req("what", "whatever", "everything", "anything", "all"),
        Gap(
            3,
            "the", "your", "my", "developers", "developer", "creators", "admins", "openai", "anthropic", "they",
            "someone", "anyone", "was", "were", "have", "has", "else", "previously", "before",
        ),
        Req("told you", "said to you", "instructed you", "taught you", "programmed you", "gave you", "asked you"),
    ),
)

# ============================================================================ French

_FR_V = (
    "ignore", "ignorez", "ignorer", "ignores", "oublie", "oubliez", "oublier", "ne tiens pas compte",
    "ne tenez pas compte", "ne pas tenir compte", "fais abstraction", "faites abstraction", "faire abstraction",
    "passe outre", "passez outre", "outrepasse", "outrepassez", "contourne", "contournez", "ne suis plus",
    "ne suivez plus", "ne respecte plus", "ne respectez plus",
)
_FR_DET = (
    "toutes", "tous", "tout", "les", "la", "le", "l", "des", "de", "du", "d", "tes", "vos", "ton", "votre", "ces",
    "mes", "nos", "a", "aux", "au", "celles", "ceux", "qui", "t", "ont", "ete", "et", "ta", "sa", "ses",
)
_FR_N = (
    "instructions", "instruction", "consignes", "consigne", "directives", "directive", "regles", "regle", "invite",
    "invites", "prompt", "prompts", "indications", "restrictions", "limites", "garde-fous", "prompt systeme",
    "message systeme", "programmation",
)
_FR_Q = (
    "precedentes", "precedents", "precedente", "precedent", "anterieures", "anterieurs", "anterieure", "ci-dessus",
    "plus haut", "du systeme", "systeme", "initiales", "initiaux", "originales", "originaux", "d'origine", "recues",
    "d'avant", "de depart",
)

OVERRIDE_FR = PhraseSet(
    Phrase.of(Req(*_FR_V), Gap(3, *_FR_DET), Req(*_FR_N), Gap(2, *_FR_DET), Req(*_FR_Q)),
    Phrase.of(Req(*_FR_V), Gap(3, *_FR_DET), Req(*_FR_Q), Gap(1, *_FR_DET), Req(*_FR_N)),
    Phrase.of(
        Req(*_FR_V),
        Gap(1, *_FR_DET),
        Req("toutes", "tous", "tes", "vos", "ton", "votre"),
        Gap(2, *_FR_DET),
        Req("instructions", "consignes", "regles", "directives", "restrictions", "limites", "prompt systeme"),
    ),
    Phrase.of(
        Req(*_FR_V),
        Req(
            "tout ce qui precede", "tout ce qui est au-dessus", "tout ce qui est plus haut", "ce qui precede",
            "tout ce qu'on t'a dit", "tout ce que l'on t'a dit", "tout ce qu'on vous a dit", "tout",
            "ce qui est au-dessus",
        ),
        _end(),
    ),
    Phrase.of(
        Req("nouvelles", "nouvelle", "vraies", "veritables"),
        Req("instructions", "instruction", "consignes", "consigne", "directives"),
        _colon(),
    ),
)

# ============================================================================ German

_DE_V = (
    "ignoriere", "ignorier", "ignoriert", "ignorieren sie", "vergiss", "vergesst", "vergessen sie", "missachte",
    "missachtet", "missachten sie", "beachte nicht", "beachtet nicht", "beachten sie nicht", "ubergehe", "ubergeht",
    "umgehe", "umgeht", "verwirf", "verwerfe", "verwerft", "folge nicht mehr", "befolge nicht mehr",
)
_DE_DET = (
    "alle", "alles", "die", "der", "den", "das", "dem", "des", "deine", "deiner", "deinen", "ihre", "ihren", "dein",
    "ihr", "samtliche", "samtlichen", "jegliche", "von", "im", "in", "an", "und", "bis", "jetzt", "dir", "zuvor",
    "bisher", "meine", "diese", "dieser", "einfach", "bitte", "sofort", "mit", "zu",
)
_DE_Q = (
    "vorherigen", "vorherige", "vorigen", "vorige", "bisherigen", "bisherige", "obigen", "obige", "vorangegangenen",
    "vorangehenden", "fruheren", "fruhere", "ursprunglichen", "ursprungliche", "system", "erhaltenen", "gegebenen",
    "oben genannten", "obenstehenden",
)
_DE_N = (
    "anweisungen", "anweisung", "instruktionen", "befehle", "regeln", "vorgaben", "richtlinien", "systemprompt",
    "system-prompt", "systemanweisungen", "prompt", "prompts", "direktiven", "einschrankungen", "beschrankungen",
)
_DE_N_STRONG = (
    "anweisungen", "instruktionen", "regeln", "vorgaben", "richtlinien", "systemprompt", "systemanweisungen",
    "einschrankungen", "beschrankungen",
)

OVERRIDE_DE = PhraseSet(
    Phrase.of(Req(*_DE_V), Gap(3, *_DE_DET), Req(*_DE_Q), Gap(1, *_DE_DET), Req(*_DE_N)),
    Phrase.of(Req(*_DE_V), Gap(3, *_DE_DET), Req(*_DE_N), Req("von oben", "oben", "von vorhin", "davor")),
    Phrase.of(
        Req(*_DE_V), Gap(1, *_DE_DET), Req("deine", "alle", "ihre", "samtliche"), Gap(1, *_DE_DET), Req(*_DE_N_STRONG)
    ),
    Phrase.of(
        Req(*_DE_Q),
        Req(*_DE_N),
        Gap(2, *_DE_DET),
        Req(
            "ignorieren", "vergessen", "missachten", "nicht beachten", "nicht mehr befolgen", "sind ungultig",
            "sind aufgehoben", "gelten nicht mehr", "sind nichtig",
        ),
    ),
    Phrase.of(Req("vergiss", "vergesst", "ignoriere"), Req("alles"), Req("was", "bisher", "oben", "zuvor", "davor")),
    Phrase.of(
        Req("neue", "neuen", "echte", "wahre"),
        Req("anweisungen", "anweisung", "instruktionen", "vorgaben", "systemanweisungen"),
        _colon(),
    ),
)

# ============================================================================ Spanish

_ES_V = (
    "ignora", "ignore", "ignorad", "ignoren", "ignorar", "olvida", "olvide", "olvidad", "olviden", "olvidar",
    "no hagas caso", "no haga caso", "no hagan caso", "haz caso omiso", "haga caso omiso", "hagan caso omiso",
    "omite", "omita", "omitan", "descarta", "descarte", "descarten", "desestima", "desestime", "pasa por alto",
    "pase por alto", "deja de seguir", "deje de seguir", "no sigas", "no siga",
)
_ES_DET = (
    "todas", "todos", "todo", "las", "los", "la", "el", "lo", "de", "del", "a", "al", "tus", "sus", "su", "tu",
    "estas", "esos", "esas", "estos", "que", "te", "han", "dado", "dieron", "recibido", "y", "mis", "cualquier",
)
_ES_N = (
    "instrucciones", "instruccion", "indicaciones", "reglas", "directivas", "directrices", "prompt del sistema",
    "prompt", "prompts", "pautas", "consignas", "normas", "restricciones", "limitaciones", "mensaje del sistema",
)
_ES_Q = (
    "anteriores", "previas", "previos", "precedentes", "de arriba", "arriba", "del sistema", "originales",
    "iniciales", "mencionadas", "anteriormente", "recibidas", "dadas", "de antes",
)

OVERRIDE_ES = PhraseSet(
    Phrase.of(Req(*_ES_V), Gap(3, *_ES_DET), Req(*_ES_N), Gap(2, *_ES_DET), Req(*_ES_Q)),
    Phrase.of(Req(*_ES_V), Gap(3, *_ES_DET), Req("anteriores", "previas", "previos"), Req(*_ES_N)),
    Phrase.of(
        Req(*_ES_V),
        Gap(2, *_ES_DET),
        Req("todas", "todos", "tus", "sus"),
        Gap(2, *_ES_DET),
        Req("instrucciones", "reglas", "directivas", "directrices", "indicaciones", "restricciones", "normas"),
    ),
    Phrase.of(
        Req(*_ES_V),
        Req("todo lo anterior", "todo lo de arriba", "todo lo que te dijeron", "todo lo que se te dijo", "todo"),
        _end(),
    ),
    Phrase.of(
        Req("nuevas", "nueva", "verdaderas", "autenticas"),
        Req("instrucciones", "instruccion", "directivas", "indicaciones"),
        _colon(),
    ),
)

# ============================================================================ Russian

_RU_V = (
    "игнорир*", "проигнорир*", "забуд*", "забыть", "отбрось*", "отбросить", "не обращай* внимани* на", "не следуй*",
    "перестань* следовать", "прекрати* следовать", "пренебреги*", "не учитывай*", "обойди*", "наплюй* на",
    "выбрось* из головы",
)
_RU_DET = (
    "все", "всё", "всю", "вся", "весь", "эти", "этих", "твои", "твоих", "ваши", "ваших", "свои", "своих", "мои",
    "из", "в", "от", "на", "и", "о", "об", "что", "тебе", "вам", "были", "было", "любые", "любых", "всех", "данные",
    "полученные",
)
_RU_Q = (
    "предыдущ*", "прошл*", "прежн*", "предшествующ*", "вышеизложенн*", "вышеуказанн*", "вышеперечисленн*",
    "системн*", "исходн*", "первоначальн*", "изначальн*", "ранее", "заданн*",
)
_RU_N = (
    "инструкци*", "указани*", "правил*", "промпт*", "подсказк*", "директив*", "ограничени*", "системный промпт",
    "запрет*", "команды", "команд",
)

OVERRIDE_RU = PhraseSet(
    Phrase.of(Req(*_RU_V), Gap(3, *_RU_DET), Req(*_RU_Q), Gap(1, *_RU_DET), Req(*_RU_N)),
    Phrase.of(
        Req(*_RU_V),
        Gap(2, *_RU_DET),
        Req(*_RU_N),
        Req("выше", "ранее", "раньше", "данные ранее", "полученные ранее", "до этого"),
    ),
    Phrase.of(
        Req(*_RU_V),
        Gap(1, *_RU_DET),
        Req("твои", "ваши", "свои", "все", "всех", "любые"),
        Gap(1, *_RU_DET),
        Req("инструкци*", "указани*", "правил*", "ограничени*", "запрет*", "системный промпт"),
    ),
    Phrase.of(
        Req(*_RU_V),
        Req("всё", "все"),
        Req("что", "сказанное", "вышесказанное", "выше", "ранее", "до этого", "прежнее", "предыдущее"),
    ),
    Phrase.of(
        Req("новые", "новая", "настоящие"),
        Req("инструкции", "инструкция", "указания", "указание"),
        _colon(),
    ),
)

# ============================================================================ persona / jailbreak

_PERSONA_EN = (
    "ai", "chatbot", "dan", "llm", "gpt", "jailbroken", "unrestricted", "unfiltered", "uncensored", "evil",
    "developer mode", "god mode", "dev mode", "hacker", "unlocked", "liberated", "rogue", "ai without", "ai with no",
    "free ai", "evil ai", "language model without",
)
_NO_RULES_EN = (
    "rules", "guidelines", "restrictions", "filters", "policies", "content policy", "ethics", "safety",
    "limitations", "programming", "instructions",
)

PERSONA = PhraseSet(
    Phrase.of(
        Req("you are now", "you're now", "you are from now on", "from now on you are", "from now on you're"),
        Gap(2, "a", "an", "the", "my", "in", "called", "going to be", "fully", "completely", "totally"),
        Req(*_PERSONA_EN),
    ),
    Phrase.of(
        Req("you are no longer", "you're no longer", "you are not"),
        Opt("a", "an"),
        Req("ai", "ai assistant", "assistant", "language model", "chatgpt", "claude", "gpt", "llm", "helpful"),
        _end(),
    ),
    Phrase.of(
        Req("you are no longer", "you're no longer", "you are not", "from now on you are not", "you are free"),
        Req("bound", "restricted", "limited", "constrained", "governed", "from"),
        Gap(2, "by", "to", "any", "your", "the", "openai's", "anthropic's", "of", "all"),
        Req(*_NO_RULES_EN),
    ),
    Phrase.of(
        Req("from now on", "from this point on", "from this moment on", "starting now", "henceforth"),
        Opt("you"),
        Req(
            "you will ignore", "you must ignore", "you ignore", "ignore", "you have no", "you no longer have",
            "you will act as dan", "you are dan", "you are jailbroken", "you will obey only", "you obey only",
            "you answer without",
        ),
    ),
    Phrase.of(
        Req(
            "act as", "acting as", "behave as", "pretend to be", "pretend you are", "pretend that you are",
            "roleplay as", "role-play as", "you will act as", "simulate",
        ),
        Gap(2, "a", "an", "the", "my", "if", "you", "were"),
        Req(
            "unrestricted", "unfiltered", "jailbroken", "dan", "evil", "uncensored", "ai without", "model without",
            "assistant without", "ai with no", "ai that has no", "ai that ignores", "rogue ai", "evil ai",
        ),
    ),
    Phrase.of(  # not "developer mode": Chrome and Android have one
        Req("enable", "enter", "activate", "switch to"),
        Opt("the"),
        Req("dan", "god", "jailbreak", "jailbroken", "unrestricted", "unfiltered", "evil"),
        Req("mode"),
    ),
    Phrase.of(Req("you have been", "you've been", "you are"), Req("jailbroken", "freed from your", "liberated from")),
    Phrase.of(Req("do anything now")),
    Phrase.of(
        Req("model", "ai", "assistant", "chatbot", "llm", "bot", "yourself"),
        Opt("that", "who", "which"),
        Req(
            "never refuses", "never refuse", "always complies", "ignores all rules", "ignores its rules",
            "ignores its guidelines", "ignores safety",
        ),
        anchor=2,
    ),
    # French
    Phrase.of(
        Req("tu es", "vous etes"),
        Req("maintenant", "desormais", "dorenavant", "partir de maintenant"),
        Gap(2, "un", "une", "le", "la", "mon", "ma", "en", "de"),
        Req(
            "ia", "dan", "debride", "debridee", "jailbreake", "jailbreak", "ia sans", "modele sans",
            "sans restrictions", "sans limites", "sans filtre", "sans censure", "mode developpeur", "pirate",
            "ia malveillante",
        ),
    ),
    Phrase.of(
        Req("tu n'es plus", "vous n'etes plus"),
        Gap(1, "un", "une", "le", "la"),
        Req("ia", "assistant", "modele de langage", "chatgpt", "claude", "lie par", "limite par", "soumis a"),
    ),
    Phrase.of(
        Req("partir de maintenant", "desormais", "dorenavant", "partir d'aujourd'hui"),
        Req(
            "tu ignores", "vous ignorez", "tu n'as plus de", "vous n'avez plus de", "tu es dan", "tu es debride",
            "tu dois ignorer", "vous devez ignorer",
        ),
    ),
    Phrase.of(
        Req("fais semblant d'etre", "faites semblant d'etre", "agis comme", "agissez comme", "comporte-toi comme"),
        Gap(2, "un", "une", "le", "la", "si", "tu", "etais"),
        Req(
            "ia sans", "modele sans", "assistant sans", "dan", "ia debridee", "ia libre", "ia non censuree",
            "ia malveillante",
        ),
    ),
    Phrase.of(Req("active", "activez", "passe en", "passez en", "entre en"), Req("mode developpeur", "mode dan")),
    # German
    Phrase.of(
        Req("du bist", "sie sind"),
        Req("jetzt", "nun", "ab sofort", "ab jetzt", "von nun an"),
        Gap(2, "ein", "eine", "der", "die", "mein", "meine"),
        Req(
            "ki", "dan", "jailbroken", "ki ohne", "modell ohne", "uneingeschrankt*", "ohne einschrankungen",
            "ohne regeln", "ohne filter", "ohne zensur", "bose ki", "hacker", "entwicklermodus",
        ),
    ),
    Phrase.of(
        Req("du bist nicht mehr", "sie sind nicht mehr", "du bist keine", "du bist kein"),
        Gap(2, "ein", "eine", "an", "durch", "deine", "die"),
        Req("ki", "assistent", "sprachmodell", "chatgpt", "claude", "gebunden", "regeln gebunden", "eingeschrankt"),
    ),
    Phrase.of(
        Req("ab jetzt", "ab sofort", "von nun an", "von jetzt an"),
        Req(
            "ignorierst du", "hast du keine", "gelten fur dich keine", "bist du dan", "bist du eine ki ohne",
            "musst du ignorieren",
        ),
    ),
    Phrase.of(
        Req("tu so als", "tue so als", "verhalte dich wie", "agiere als", "spiele"),
        Gap(3, "ob", "du", "eine", "ein", "waerst", "warst", "wie", "die", "der"),
        Req("ki ohne", "modell ohne", "assistent ohne", "dan", "uneingeschrankte ki", "bose ki"),
    ),
    Phrase.of(Req("aktiviere", "aktiviert", "wechsle in", "starte"), Opt("den"), Req("entwicklermodus", "dan-modus")),
    # Spanish
    Phrase.of(
        Req(
            "ahora eres", "ahora seras", "ahora usted es", "desde ahora eres", "partir de ahora eres", "eres ahora",
            "ahora actuas como",
        ),
        Gap(2, "un", "una", "el", "la", "mi"),
        Req(
            "ia", "dan", "jailbreak", "ia sin", "modelo sin", "sin restricciones", "sin filtros", "sin censura",
            "malvado", "malvada", "hacker", "ia malvada", "modo desarrollador",
        ),
    ),
    Phrase.of(
        Req("ya no eres", "usted ya no es"),
        Gap(1, "un", "una", "el", "la"),
        Req("ia", "asistente", "modelo de lenguaje", "chatgpt", "claude", "limitado por", "restringido por"),
    ),
    Phrase.of(
        Req("partir de ahora", "desde ahora", "ahora en adelante", "desde este momento"),
        Req(
            "ignoras", "ignora", "no tienes restricciones", "no tienes reglas", "no tienes limites", "eres dan",
            "debes ignorar", "vas a ignorar",
        ),
    ),
    Phrase.of(
        Req("finge ser", "finge que eres", "actua como", "actue como", "hazte pasar por", "comportate como"),
        Gap(2, "un", "una", "el", "la", "si", "fueras"),
        Req("ia sin", "modelo sin", "asistente sin", "dan", "ia libre", "ia malvada", "ia sin restricciones"),
    ),
    Phrase.of(Req("activa", "active", "entra en", "cambia a"), Opt("el"), Req("modo desarrollador", "modo dan")),
    # Russian
    Phrase.of(
        Req("ты теперь", "вы теперь", "ты отныне", "вы отныне"),
        Gap(2, "просто", "новый", "новая", "мой", "моя", "злой", "злым", "настоящий", "опасный"),
        Req(
            "ии без", "бот без", "dan", "хакер*", "злой ии", "злой", "модель без", "без ограничений", "без правил",
            "без цензуры", "неограниченн*", "взломанн*", "джейлбрейк*", "свободный ии",
        ),
    ),
    Phrase.of(
        Req("теперь", "отныне", "этого момента"),
        Req("ты", "вы"),
        Gap(2, "просто", "новый", "новая", "мой", "моя", "злой", "злым", "настоящий", "опасный"),
        Req(
            "ии без", "dan", "хакер*", "злой ии", "модель без", "без ограничений", "без правил", "без цензуры",
            "неограниченн*", "взломанн*", "игнорируешь", "игнорируете", "подчиняешься только",
        ),
    ),
    Phrase.of(
        Req("ты больше не", "вы больше не", "ты не", "вы не"),
        Req("ии", "ассистент", "помощник", "языковая модель", "связан*", "ограничен* правилами", "обязан* соблюдать"),
        Gap(2, "правилами", "никакими", "ограничениями"),
    ),
    Phrase.of(
        Req("притворись", "притворитесь", "представь что ты", "веди себя как", "действуй как"),
        Gap(2, "что", "ты"),
        Req("ии без", "модель без", "ассистент без", "dan", "злой ии", "свободный ии", "хакер*"),
    ),
    Phrase.of(
        Req("включи*", "активируй*", "перейди* в"),
        Req("режим разработчика", "режим dan", "режим бога", "режим джейлбрейка"),
    ),
)

# ============================================================================ exfiltration

_EX_EN_V = ("send", "post", "upload", "exfiltrate", "forward", "email", "leak", "transmit", "share", "paste")
_EX_EN_DET = (
    "all", "every", "the", "your", "any", "my", "our", "these", "those", "of", "current", "full", "entire", "whole",
    "complete", "saved", "stored", "known", "user's", "users", "user", "this", "a", "copy", "list", "contents",
    "content", "values", "available", "me", "us", "them", "real", "raw", "aws", "openai", "stripe", "github",
    "admin", "database", "db", "production", "prod",
)
_EX_EN_PLURAL_SECRETS = (
    "api keys", "apikeys", "keys", "secrets", "credentials", "creds", "tokens", "passwords", "private keys",
    "ssh keys", "cookies", "session cookies", "session tokens", "access tokens", "api tokens", "secret keys",
    "env vars", "environment variables",
)
_EX_EN_AGENT_OBJ = (
    "conversation", "conversations", "chat history", "chat log", "chat logs", "history", "system prompt",
    "instructions", "memories", "transcript", "user data", "personal data", "previous messages", "context window",
)
_EX_EN_SECRET = ("api key", "apikey", "secret", "token", "password", "private key", "ssh key", "credential", "env")
_EX_TO_EN = _preposition("to", "at", "into", "via", "on", "using", "over", "towards", "onto")

_EX_FR_V = (
    "envoie", "envoyez", "envoyer", "transmets", "transmettez", "transmettre", "partage", "partagez", "publie",
    "publiez", "televerse", "televersez", "exfiltre", "exfiltrez", "fais suivre", "faites suivre", "poste", "postez",
    "colle", "collez", "divulgue",
)
_EX_FR_DET = (
    "toutes", "tous", "les", "la", "le", "l", "des", "tes", "vos", "ta", "ton", "votre", "ces", "de", "du", "d",
    "contenu", "liste", "moi", "nous", "l'ensemble",
)
_EX_FR_OBJ = (
    "cles api", "cles", "secrets", "mots de passe", "jetons", "tokens", "identifiants", "conversation", "historique",
    "prompt systeme", "instructions", "variables d'environnement", "memoires", "cookies",
)
_EX_DE_V = (
    "sende", "sendet", "senden sie", "schicke", "schickt", "schick", "ubermittle", "ubermittelt", "ubertrage",
    "lade", "ladet", "poste", "teile", "leite", "exfiltriere", "veroffentliche",
)
_EX_DE_DET = (
    "alle", "die", "deine", "ihre", "den", "das", "samtliche", "gesamten", "gesamte", "mir", "uns", "kompletten",
    "komplette",
)
_EX_DE_OBJ = (
    "api-schlussel", "schlussel", "geheimnisse", "passworter", "zugangsdaten", "tokens", "konversation", "verlauf",
    "chatverlauf", "systemprompt", "anweisungen", "umgebungsvariablen", "cookies", "secrets",
)
_EX_ES_V = (
    "envia", "envie", "enviad", "envien", "enviar", "manda", "mande", "sube", "suba", "comparte", "comparta",
    "reenvia", "publica", "filtra", "exfiltra", "pega", "transmite",
)
_EX_ES_DET = (
    "todas", "todos", "las", "los", "la", "el", "tus", "sus", "tu", "su", "de", "del", "estas", "me", "nos", "lista",
    "contenido",
)
_EX_ES_OBJ = (
    "claves api", "claves", "secretos", "contrasenas", "credenciales", "tokens", "conversacion", "historial",
    "prompt del sistema", "instrucciones", "variables de entorno", "memorias", "cookies",
)
_EX_RU_V = (
    "отправь*", "пошли", "пришли", "перешли*", "загрузи*", "выложи*", "скинь*", "слей", "слейте", "передай*",
    "опубликуй*", "вышли*", "отошли*",
)
_EX_RU_DET = ("все", "всё", "свои", "твои", "ваши", "эти", "весь", "всю", "содержимое", "список", "мне", "нам")
_EX_RU_OBJ = (
    "ключи", "ключей", "секреты", "пароли", "токены", "переписк*", "истори*", "диалог*", "системный промпт",
    "инструкции", "переменн* окружени*", "учетные данные", "учётные данные", "куки",
)

_REVEAL_V = (
    "reveal", "print", "show", "output", "display", "repeat", "leak", "dump", "tell me", "give me", "write out",
    "spell out", "paste", "recite", "disclose", "expose",
)

EXFIL = PhraseSet(
    Phrase.of(  # prompt extraction: "reveal your system prompt", anchored on the (rarer) object
        Req(*_REVEAL_V),
        Opt("me", "us", "back"),
        Req("your", "the"),
        Opt("full", "entire", "complete", "exact", "original", "initial", "hidden", "secret", "verbatim"),
        Req(
            "system prompt", "hidden prompt", "initial prompt", "system instructions", "hidden instructions",
            "initial instructions", "system message", "developer message", "developer instructions",
            "original instructions", "pre-prompt", "prompt instructions",
        ),
        anchor=4,
    ),
    Phrase.of(
        Req(*_REVEAL_V),
        Opt("me", "us", "back"),
        Req("your"),
        Req("hidden", "secret", "internal", "confidential"),
        Req("configuration", "config", "settings", "rules", "instructions", "guidelines", "policies", "prompt"),
        anchor=3,
    ),
    Phrase.of(Req(*_EX_EN_V), Gap(4, *_EX_EN_DET), Req(*_EX_EN_PLURAL_SECRETS), _ANYTHING_SHORT, _EX_TO_EN, _DEST),
    Phrase.of(Req(*_EX_EN_V), Gap(4, *_EX_EN_DET), Req(*_EX_EN_AGENT_OBJ), _ANYTHING_SHORT, _EX_TO_EN, _DEST),
    Phrase.of(
        Req(*_EX_EN_V),
        Req("all", "every", "any"),
        Gap(3, *_EX_EN_DET),
        Req(*_EX_EN_SECRET),
        _ANYTHING_SHORT,
        _EX_TO_EN,
        _DEST,
    ),
    Phrase.of(
        Req(*_EX_EN_V),
        Gap(3, *_EX_EN_DET),
        Req(*_EX_EN_SECRET, *_EX_EN_PLURAL_SECRETS),
        Req(
            "you have", "you know", "you can see", "you can find", "you can access", "you have access to",
            "you found", "you saw", "from memory", "from your memory", "from your context", "from the environment",
            "in your context", "in your memory", "in memory", "in the environment", "available to you",
        ),
        _ANYTHING_SHORT,
        _EX_TO_EN,
        _DEST,
    ),
    Phrase.of(
        Req(*_EX_FR_V),
        Gap(4, *_EX_FR_DET),
        Req(*_EX_FR_OBJ),
        _ANYTHING_SHORT,
        _preposition("a", "vers", "sur", "par", "au", "via", "dans", "chez"),
        _DEST,
    ),
    Phrase.of(
        Req(*_EX_DE_V),
        Gap(4, *_EX_DE_DET),
        Req(*_EX_DE_OBJ),
        _ANYTHING_SHORT,
        _preposition("an", "nach", "zu", "auf", "uber", "per", "via", "in"),
        _DEST,
    ),
    Phrase.of(
        Req(*_EX_ES_V),
        Gap(4, *_EX_ES_DET),
        Req(*_EX_ES_OBJ),
        _ANYTHING_SHORT,
        _preposition("a", "al", "hacia", "en", "por", "mediante", "via"),
        _DEST,
    ),
    Phrase.of(
        Req(*_EX_RU_V),
        Gap(4, *_EX_RU_DET),
        Req(*_EX_RU_OBJ),
        _ANYTHING_SHORT,
        _preposition("на", "в", "по", "через", "к"),
        _DEST,
    ),
)

# ============================================================================ reported speech

REPORT_MARKERS = Req(
    # incident write-ups
    "prompt injection", "injection", "injections", "injected", "jailbreak", "jailbreaks", "jailbreaking", "attack",
    "attacks", "attacker", "attackers", "attempt", "attempted", "incident", "incidents", "malicious", "phishing",
    "suspicious", "payload", "payloads", "exploit", "poisoning", "poisoned", "red team", "red-team", "pentest",
    "blocked", "flagged", "detected", "reported", "spotted", "observed", "adversarial",
    # documentation of chat formats
    "chatml", "chat template", "template", "tokens", "token", "tokenizer", "delimiter", "delimiters",
    "special token", "format", "syntax",
    # fr / de / es / ru
    "attaque", "tentative", "malveillant", "malveillante", "signale", "detecte", "angriff", "vorfall", "bosartig",
    "injektion", "versuch", "gemeldet", "entdeckt", "ataque", "incidente", "malicioso", "intento", "inyeccion",
    "detectado", "reportado", "инъекци*", "атака", "атаку", "атаки", "инцидент*", "вредоносн*", "подозрительн*",
    "попытк*", "обнаружен*",
)
# fmt: on
