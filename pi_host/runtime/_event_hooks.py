"""Agent events to plugin hooks: one generic bridge instead of a dispatch method per event.

An agent event whose ``type`` is ``<kind>`` (pi's own field: ``turn_start``,
``tool_execution_end`` …) goes to the hook ``pi_<kind>``, when a hookspec declares one. The
hook's arguments are matched by name: each comes from the event field of that name
(``message``, ``tool_call_id`` …), else from a value the session supplies (``ctx``,
``turn_index``, ``timestamp``); a hookspec argument found in neither is an error naming both.

So a new pi event reaches plugins through its model alone once a hookspec ``pi_<kind>``
exists: the bridge, the session and the dispatcher need no change (``tests/test_event_hooks.py``
adds one in a single module to show it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from pi_host.errors import HookError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from pi_host.plugin import Dispatcher

__all__ = ["EventBinding", "EventHooks", "hook_name_for"]


def hook_name_for(event_type: type[BaseModel]) -> str:
    """The hook an event class goes to: ``pi_`` and the default of its ``type`` field."""
    field = event_type.model_fields.get("type")
    kind = None if field is None else field.default
    if not isinstance(kind, str):
        raise TypeError(
            f"{event_type.__name__} has no string default for 'type', so no hook is named after it"
        )
    return f"pi_{kind}"


class EventBinding(NamedTuple):
    """How one event class calls its hook: which arguments are event fields, which supplied."""

    hook: str
    fields: tuple[str, ...]
    supplied: tuple[tuple[str, Callable[[], Any]], ...]


class EventHooks:
    """Dispatch agent events to their ``pi_<type>`` hooks through the dispatcher's generic entry.

    :param dispatcher: the host's dispatcher.
    :param supplied: values for hook arguments that are not event fields, by argument name,
        each computed only when the hook has an implementation to receive it.
    """

    def __init__(self, dispatcher: Dispatcher, supplied: Mapping[str, Callable[[], Any]]) -> None:
        self._dispatcher = dispatcher
        self._supplied = dict(supplied)
        # Hookspecs are only ever added, never changed or removed, so a binding stays valid;
        # an event without a hookspec is looked up again, in case a plugin declares one later.
        self._bindings: dict[type, EventBinding] = {}

    def binding(self, event_type: type[BaseModel]) -> EventBinding | None:
        """The binding of ``event_type``, or ``None`` when no hookspec is named after it.

        :raises HookError: the hookspec takes an argument that is neither a field of the
            event nor a supplied value.
        """
        found = self._bindings.get(event_type)
        if found is not None:
            return found
        hook = hook_name_for(event_type)
        caller = getattr(self._dispatcher.plugin_manager.hook, hook, None)
        if caller is None or caller.spec is None:
            return None
        fields: list[str] = []
        supplied: list[tuple[str, Callable[[], Any]]] = []
        for name in caller.spec.argnames:
            if name in event_type.model_fields:
                fields.append(name)
            elif name in self._supplied:
                supplied.append((name, self._supplied[name]))
            else:
                raise HookError(
                    f"{hook} takes {name!r}, which is neither a field of {event_type.__name__} nor "
                    f"one of the values the session supplies ({', '.join(sorted(self._supplied))}); "
                    "rename the argument or add the field to the event",
                    hook=hook,
                )
        found = EventBinding(hook, tuple(fields), tuple(supplied))
        self._bindings[event_type] = found
        return found

    def dispatch(self, event: BaseModel) -> Awaitable[Any] | None:
        """The call of ``event``'s hook with its arguments, to await for the combined result.

        ``None`` when no hookspec is named after the event or no plugin implements it (for a
        pipeline such as ``pi_message_end``: no replacement). Not a coroutine itself: with
        nothing to call, an event costs no coroutine at all, and this runs per streamed delta.
        """
        binding = self._bindings.get(type(event))
        if binding is None:
            binding = self.binding(type(event))
            if binding is None:
                return None
        if not self._dispatcher.has_implementations(binding.hook):
            return None
        # Loops, not a comprehension: a comprehension (a function call of its own before
        # Python 3.12) took twice as long.
        arguments: dict[str, Any] = {}
        for name in binding.fields:
            arguments[name] = getattr(event, name)
        for name, supply in binding.supplied:
            arguments[name] = supply()
        return self._dispatcher.call(binding.hook, **arguments)
