"""The archivist's optional LLM judge: an OpenAI-compatible chat model asked about the strongest
pairs (settings ``MMW_ARCHIVIST_LLM_URL`` / ``_MODEL`` / ``_KEY``); when it fails, the
heuristic's verdict stands."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

import httpx
from django.conf import settings

from memories.archivist.judge import UNRELATED, Verdict
from memories.models import RelationType

logger = logging.getLogger(__name__)

# --- the optional LLM -------------------------------------------------------------------------

LLM_PAIRS = 5
LLM_TIMEOUT = 20.0
_LLM_PROMPT = (
    "You compare two notes stored by an AI agent's memory. Answer with JSON only: "
    '{"relation": "contradicts" | "refines" | "related" | "unrelated", "score": <0..1>}. '
    '"contradicts": both cannot be true (different values, names or a negation for the same subject). '
    '"refines": the NEWER note restates the OLDER one and adds detail. '
    '"related": same topic, compatible. "unrelated": different topics.'
)


@dataclass(frozen=True)
class LLMConfig:
    url: str
    model: str
    key: str


def llm_config() -> LLMConfig | None:
    """The chat model to ask (settings ``MMW_ARCHIVIST_LLM_*``), or None: the default, no LLM."""
    url = settings.MMW_ARCHIVIST_LLM_URL.strip()
    if not url:
        return None
    return LLMConfig(
        url=url.rstrip("/"),
        model=settings.MMW_ARCHIVIST_LLM_MODEL.strip() or "default",
        key=settings.MMW_ARCHIVIST_LLM_KEY.strip(),
    )


def llm_classify(config: LLMConfig, newer: str, older: str, client: httpx.Client) -> Verdict | None:
    """Ask the model; ``None`` on any failure or an answer it cannot parse."""
    body = {
        "model": config.model,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": _LLM_PROMPT},
            {"role": "user", "content": f"OLDER:\n{older[:4000]}\n\nNEWER:\n{newer[:4000]}"},
        ],
    }
    headers = {"Authorization": f"Bearer {config.key}"} if config.key else {}
    try:
        response = client.post(f"{config.url}/chat/completions", json=body, headers=headers)
        response.raise_for_status()
        text = response.json()["choices"][0]["message"]["content"]
        return _parse_llm_answer(str(text))
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        logger.warning("archivist LLM failed (%s); keeping the heuristic's answer", exc)
        return None


def _parse_llm_answer(text: str) -> Verdict | None:
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if match is None:
        return None
    data = json.loads(match.group(0))
    relation = str(data.get("relation", "")).strip().lower()
    if relation not in (RelationType.CONTRADICTS, RelationType.REFINES, RelationType.RELATED, UNRELATED):
        return None
    score = float(data.get("score", 0.8))
    return Verdict(relation, round(min(max(score, 0.0), 1.0), 4), "llm")
