"""Turning raw events into memory candidates.

The default extractor (rules.py) is deterministic and offline: first-person statements become
facts, preferences, plans, corrections and procedures with a normalised key. An optional LLM
extractor (llm.py) emits the same Candidate schema and falls back to the rules on any failure.
"""
from memoryapp.extraction.candidates import Candidate
from memoryapp.extraction.rules import RULES_VERSION, extract_candidates


def extractor_for_settings():
    """The extractor the settings ask for: the LLM one when an endpoint is configured."""
    from django.conf import settings

    if getattr(settings, "MEMORY_LLM_BASE_URL", "") and getattr(settings, "MEMORY_LLM_MODEL", ""):
        from memoryapp.extraction.llm import LLMExtractor

        return LLMExtractor(
            base_url=settings.MEMORY_LLM_BASE_URL, model=settings.MEMORY_LLM_MODEL,
            timeout=settings.MEMORY_LLM_TIMEOUT,
        )
    return None


__all__ = ["Candidate", "RULES_VERSION", "extract_candidates", "extractor_for_settings"]
