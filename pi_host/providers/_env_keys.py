"""API keys from environment variables, per provider (pi's ``env-api-keys``)."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["ENV_API_KEYS", "env_api_key", "env_api_key_names"]

#: Environment variables consulted for each provider, first match wins.
ENV_API_KEYS: dict[str, tuple[str, ...]] = {
    # A subscription token, when present, wins over an API key (as in pi).
    "anthropic": ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
    "azure-openai-responses": ("AZURE_OPENAI_API_KEY",),
    "github-copilot": ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "google": ("GEMINI_API_KEY",),
    "google-vertex": ("GOOGLE_CLOUD_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "vercel-ai-gateway": ("AI_GATEWAY_API_KEY",),
    "zai": ("ZAI_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "minimax": ("MINIMAX_API_KEY",),
    "minimax-cn": ("MINIMAX_CN_API_KEY",),
    "moonshotai": ("MOONSHOT_API_KEY",),
    "moonshotai-cn": ("MOONSHOT_API_KEY",),
    "huggingface": ("HF_TOKEN",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "opencode": ("OPENCODE_API_KEY",),
    "opencode-go": ("OPENCODE_API_KEY",),
    "kimi-coding": ("KIMI_API_KEY",),
    "cloudflare-workers-ai": ("CLOUDFLARE_API_KEY",),
    "cloudflare-ai-gateway": ("CLOUDFLARE_API_KEY",),
    "xiaomi": ("XIAOMI_API_KEY",),
    "xiaomi-token-plan-cn": ("XIAOMI_TOKEN_PLAN_CN_API_KEY",),
    "xiaomi-token-plan-ams": ("XIAOMI_TOKEN_PLAN_AMS_API_KEY",),
    "xiaomi-token-plan-sgp": ("XIAOMI_TOKEN_PLAN_SGP_API_KEY",),
}


def env_api_key_names(provider: str, env: Mapping[str, str] | None = None) -> list[str]:
    """The names of the set (non-empty) variables that hold a key for ``provider``."""
    environ = os.environ if env is None else env
    return [name for name in ENV_API_KEYS.get(provider, ()) if environ.get(name)]


def env_api_key(provider: str, env: Mapping[str, str] | None = None) -> str | None:
    """The key for ``provider`` from the environment, or ``None``."""
    environ = os.environ if env is None else env
    names = env_api_key_names(provider, environ)
    return environ[names[0]] if names else None
