"""Tool definitions: one definition feeds the model's tool list, the prompt, validation and execution."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from pi_host.messages import ToolResult
from pi_host.providers import AbortSignal, Model, ToolSpec

__all__ = ["Tool", "ToolArgumentsError", "ToolCallContext", "ToolError", "ToolExecutionMode"]

P = TypeVar("P", bound=BaseModel)
ToolExecutionMode = Literal["sequential", "parallel"]


class ToolArgumentsError(ValueError):
    """The model's arguments do not fit the tool's parameters; the text is shown to the model."""


class ToolError(Exception):
    """A tool's failure that keeps ``details`` for user interfaces and the session file.

    Raising any exception from ``execute`` gives the model an error result with the
    exception's text; raising this one also records ``details`` in that result (a sub-agent
    that was stopped still reports what it spent, under ``details["usage"]``).
    """

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


@dataclass(frozen=True)
class ToolCallContext:
    """What a running tool gets besides its parameters.

    :ivar tool_call_id: the id the model gave this call.
    :ivar signal: aborted when the user aborts the run; awaiting code is cancelled through it.
    :ivar cwd: the session's working directory (relative paths resolve against it).
    :ivar session: the host's plugin context when run inside a session, else ``None``.
    :ivar model: the model that made the call (e.g. to tell whether it can see images).
    """

    tool_call_id: str
    signal: AbortSignal
    cwd: str = field(default_factory=os.getcwd)
    session: Any = None
    model: Model | None = None
    _on_update: Callable[[ToolResult], Awaitable[None]] | None = None

    async def update(self, partial: ToolResult) -> None:
        """Report partial output (a ``tool_execution_update`` event); ignored once the tool returned."""
        if self._on_update is not None:
            await self._on_update(partial)


@dataclass(frozen=True)
class Tool(Generic[P]):
    """A tool the model can call.

    :ivar name: the name the model calls it by (``read``, ``bash`` …).
    :ivar description: the text the model reads to decide when to call it.
    :ivar parameters: a pydantic model; its JSON schema is sent to the model and it validates
        (and coerces) the model's arguments before ``execute`` runs.
    :ivar execute: ``async def execute(params, ctx) -> ToolResult``. Signal failure by raising;
        the exception text becomes an error result the model reads.
    :ivar label: a short human label for user interfaces (defaults to ``name``).
    :ivar prompt_snippet: one line for the system prompt's "Available tools" list; tools
        without one are not listed there.
    :ivar prompt_guidelines: bullets appended to the system prompt's guidelines while active.
    :ivar execution_mode: ``"sequential"`` makes any batch that contains this tool run one
        call at a time.
    :ivar prepare_arguments: a shim run on the raw arguments before validation (fold legacy
        argument shapes into the current one).
    :ivar parameters_schema: the JSON schema ``spec()`` sends, written out in advance (pi ships
        literal schemas too). Generating it from ``parameters`` costs milliseconds of pydantic
        work in every process; a literal costs nothing. It must equal the generated schema,
        key order included; a tool that sets it should pin that with a test (compare with
        ``dataclasses.replace(tool, parameters_schema=None).spec()``). ``parameters`` still
        validates the arguments.
    :ivar writes: ``writes(params, cwd) -> paths``: the files a call with these (validated)
        arguments will create, overwrite or delete, as absolute paths. Declaring it lets a
        plugin act before the change (a checkpoint plugin keeps the previous content); it is
        called just before ``execute`` and must not touch the files. ``None``: the tool
        declares nothing (it may still write, as ``bash`` does).
    """

    name: str
    description: str
    parameters: type[P]
    execute: Callable[[P, ToolCallContext], Awaitable[ToolResult]]
    label: str = ""
    prompt_snippet: str | None = None
    prompt_guidelines: tuple[str, ...] = ()
    execution_mode: ToolExecutionMode | None = None
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    # Left out of ==/hash(): it is derived from ``parameters``, and a dict is not hashable.
    parameters_schema: Mapping[str, Any] | None = field(default=None, compare=False)
    writes: Callable[[P, str], Sequence[str]] | None = field(default=None, compare=False)

    @cached_property
    def _spec(self) -> ToolSpec:
        if self.parameters_schema is not None:
            return ToolSpec(
                name=self.name, description=self.description, parameters=dict(self.parameters_schema)
            )
        schema = _strip_titles(self.parameters.model_json_schema())
        # pydantic puts the model's docstring in the schema; the tool's description is what the
        # model reads, so the parameters object carries none of its own.
        schema.pop("description", None)
        return ToolSpec(name=self.name, description=self.description, parameters=schema)

    def spec(self) -> ToolSpec:
        """The provider-facing description of this tool (computed once).

        The JSON schema is ``parameters_schema`` when given, else pydantic's without the
        ``title`` keys it generates from class and field names, which only cost the model tokens.
        """
        return self._spec

    def validate_arguments(self, raw: Mapping[str, Any]) -> P:
        """Validate (and coerce) raw model arguments.

        :raises ToolArgumentsError: with pi's message: the tool, each failing path, and the
            arguments received.
        """
        try:
            return self.parameters.model_validate(dict(raw))
        except ValidationError as exc:
            lines = []
            for error in exc.errors():
                path = ".".join(str(part) for part in error["loc"]) or "root"
                lines.append(f"  - {path}: {error['msg']}")
            received = json.dumps(raw, indent=2, ensure_ascii=False, default=str)
            raise ToolArgumentsError(
                f'Validation failed for tool "{self.name}":\n'
                + ("\n".join(lines) or "Unknown validation error")
                + f"\n\nReceived arguments:\n{received}"
            ) from None


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` keys from a JSON schema, at every level."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(value, dict):
                out[key] = {name: _strip_titles(sub) for name, sub in value.items()}
            else:
                out[key] = _strip_titles(value)
        return out
    if isinstance(schema, list):
        return [_strip_titles(item) for item in schema]
    return schema
