"""pi's ``retry`` section of ``settings.json``, owned by this plugin (``pi_register_settings``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

__all__ = ["ProviderRetrySettings", "RetrySettings"]


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="allow")


class ProviderRetrySettings(_Section):
    """``retry.provider``: the provider client's own retries and timeouts, and the longest
    server-requested delay this plugin honours (``maxRetryDelayMs``)."""

    timeout_ms: int | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int = 60000


class RetrySettings(_Section):
    """``retry``: the agent-level retry of transient provider errors (pi's keys and defaults)."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    provider: ProviderRetrySettings = Field(default_factory=ProviderRetrySettings)

    @model_validator(mode="before")
    @classmethod
    def _migrate_max_delay(cls, data: Any) -> Any:
        """pi's old ``retry.maxDelayMs`` is ``retry.provider.maxRetryDelayMs`` now (as pi migrates it)."""
        if not isinstance(data, dict) or "maxDelayMs" not in data:
            return data
        data = dict(data)
        old = data.pop("maxDelayMs")
        provider = data.get("provider") if isinstance(data.get("provider"), dict) else {}
        if (
            isinstance(old, (int, float))
            and not isinstance(old, bool)
            and provider.get("maxRetryDelayMs") is None
        ):
            data["provider"] = {**provider, "maxRetryDelayMs": old}
        return data
