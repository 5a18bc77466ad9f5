"""``/scoped-models``: choose, and order, the models that Ctrl+P cycles through.

The scope is a list of ``provider/id`` references (pi's ``enabledModels``), or ``None`` when
every available model takes part. As in pi, a change applies to the running session at once
and is written to settings.json only on ``app.models.save`` (Ctrl+S). The list operations are
plain functions of that value, so they can be checked without a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from prompt_toolkit.buffer import Buffer
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import FormattedTextControl, HSplit, VSplit, Window
from prompt_toolkit.layout.controls import BufferControl

from ._completion import fuzzy_score
from ._dialogs import Dialog, _bind, _hint_text, _rule, _title_window
from ._keymap import Keymap, default_keymap
from ._keys import key_label

if TYPE_CHECKING:
    from pi_host.providers import Model

__all__ = [
    "ScopedModelsDialog",
    "clear_all",
    "enable_all",
    "move",
    "ordered",
    "saved_value",
    "toggle",
]

Scope = list[str] | None
"""Enabled ``provider/id`` references in cycling order; ``None``: all models."""


def toggle(enabled: Scope, ref: str) -> Scope:
    """Enable or disable ``ref``; the first toggle from "all" keeps only ``ref`` (pi's rule)."""
    if enabled is None:
        return [ref]
    if ref in enabled:
        return [other for other in enabled if other != ref]
    return [*enabled, ref]


def enable_all(enabled: Scope, all_refs: Sequence[str], targets: Sequence[str] | None = None) -> Scope:
    """Enable ``targets`` (default: every model), appended in list order; all enabled is ``None``."""
    if enabled is None:
        return None
    result = list(enabled)
    for ref in targets if targets is not None else all_refs:
        if ref not in result:
            result.append(ref)
    return None if len(result) == len(all_refs) else result


def clear_all(enabled: Scope, all_refs: Sequence[str], targets: Sequence[str] | None = None) -> Scope:
    """Disable ``targets`` (default: every model)."""
    if enabled is None:
        return [ref for ref in all_refs if ref not in targets] if targets is not None else []
    dropped = set(targets if targets is not None else enabled)
    return [ref for ref in enabled if ref not in dropped]


def move(enabled: Scope, ref: str, delta: int) -> Scope:
    """Move an enabled ``ref`` ``delta`` places in the cycling order (unchanged at the ends)."""
    if enabled is None or ref not in enabled:
        return enabled
    index = enabled.index(ref)
    target = index + delta
    if not 0 <= target < len(enabled):
        return enabled
    result = list(enabled)
    result[index], result[target] = result[target], result[index]
    return result


def ordered(enabled: Scope, all_refs: Sequence[str]) -> list[str]:
    """The list as shown: enabled models in cycling order, then the others."""
    if enabled is None:
        return list(all_refs)
    known = set(all_refs)
    return [ref for ref in enabled if ref in known] + [ref for ref in all_refs if ref not in enabled]


def saved_value(enabled: Scope, all_refs: Sequence[str]) -> list[str] | None:
    """What ``enabledModels`` gets: ``None`` (the key removed) when no filter is left."""
    if enabled is None or not enabled or set(all_refs) <= set(enabled):
        return None
    return list(enabled)


class ScopedModelsDialog(Dialog[None]):
    """The model list with checkmarks; closes with ``None`` on Esc (Ctrl+C first clears a search).

    :param on_change: called with the new scope after every change (apply it to the session).
    :param on_save: called with the scope on ``app.models.save``; returns whether it was saved.
    """

    def __init__(
        self,
        models: Sequence[Model],
        enabled: Scope,
        *,
        on_change: Callable[[Scope], None],
        on_save: Callable[[Scope], bool],
        keymap: Keymap | None = None,
        max_visible: int = 8,
    ) -> None:
        super().__init__()
        self._models = {model.ref: model for model in models}
        self._all = list(self._models)
        self.enabled: Scope = None if enabled is None else [ref for ref in enabled if ref in self._models]
        self._on_change = on_change
        self._on_save = on_save
        self._max_visible = max_visible
        self._selected = 0
        self.dirty = False
        self._search = Buffer(multiline=False, on_text_changed=lambda _: self._refresh())
        self._items: list[str] = []
        keymap = keymap or default_keymap()
        self._keymap = keymap

        bindings = KeyBindings()
        _bind(bindings, keymap, "tui.select.up", lambda event: self._step(-1))
        _bind(bindings, keymap, "tui.select.down", lambda event: self._step(1))
        _bind(bindings, keymap, "tui.select.confirm", lambda event: self._toggle())
        _bind(bindings, keymap, "tui.select.cancel", self._cancel)
        # Bound after the list keys so that they win where they share one (Ctrl+P moves up
        # in other lists; here it is pi's "toggle provider").
        _bind(bindings, keymap, "app.models.enableAll", lambda event: self._change_all(enable_all))
        _bind(bindings, keymap, "app.models.clearAll", lambda event: self._change_all(clear_all))
        _bind(bindings, keymap, "app.models.toggleProvider", lambda event: self._toggle_provider())
        _bind(bindings, keymap, "app.models.reorderUp", lambda event: self._reorder(-1))
        _bind(bindings, keymap, "app.models.reorderDown", lambda event: self._reorder(1))
        _bind(bindings, keymap, "app.models.save", lambda event: self._save())

        save_keys = keymap.keys_for("app.models.save")
        save = save_keys[0] if save_keys else "app.models.save"
        search = Window(BufferControl(self._search), height=1, style="class:picker.filter")
        label = Window(FormattedTextControl([("class:picker.hint", "search: ")]), width=8, height=1)
        self.container = HSplit(
            [
                _rule(),
                _title_window("Model Configuration"),
                Window(
                    FormattedTextControl(
                        [("class:picker.hint", f"Session-only. {save} saves to settings.json.")]
                    ),
                    height=1,
                ),
                VSplit([label, search], height=1),
                Window(FormattedTextControl(self._list_fragments), dont_extend_height=True),
                Window(FormattedTextControl(self._footer_fragments), height=1, dont_extend_height=True),
            ],
            key_bindings=bindings,
        )
        self.focus = search
        self._refresh()

    # -- state ----------------------------------------------------------------------------------

    @property
    def items(self) -> list[str]:
        """The references listed now (filtered by the search), in display order."""
        return list(self._items)

    @property
    def selected_ref(self) -> str | None:
        return self._items[self._selected] if self._items else None

    def _refresh(self) -> None:
        refs = ordered(self.enabled, self._all)
        query = self._search.text.strip()
        if query:
            scored = []
            for position, ref in enumerate(refs):
                model = self._models[ref]
                score = fuzzy_score(query, f"{model.id} {model.provider}")
                if score is not None:
                    scored.append((-score, position, ref))
            refs = [ref for _, _, ref in sorted(scored)]
        self._items = refs
        self._selected = min(self._selected, max(0, len(refs) - 1))

    def _changed(self, enabled: Scope) -> None:
        self.enabled = enabled
        self.dirty = True
        self._refresh()
        self._on_change(None if enabled is None else list(enabled))

    # -- keys -----------------------------------------------------------------------------------

    def _step(self, delta: int) -> None:
        if self._items:
            self._selected = (self._selected + delta) % len(self._items)

    def _toggle(self) -> None:
        ref = self.selected_ref
        if ref is not None:
            self._changed(toggle(self.enabled, ref))

    def _targets(self) -> list[str] | None:
        # While searching, "all" means the models listed.
        return list(self._items) if self._search.text.strip() else None

    def _change_all(self, operation: Callable[[Scope, Sequence[str], Sequence[str] | None], Scope]) -> None:
        self._changed(operation(self.enabled, self._all, self._targets()))

    def _toggle_provider(self) -> None:
        ref = self.selected_ref
        if ref is None:
            return
        provider = self._models[ref].provider
        refs = [other for other in self._all if self._models[other].provider == provider]
        all_on = self.enabled is None or all(other in self.enabled for other in refs)
        operation = clear_all if all_on else enable_all
        self._changed(operation(self.enabled, self._all, refs))

    def _reorder(self, delta: int) -> None:
        ref = self.selected_ref
        if ref is None or self.enabled is None or ref not in self.enabled:
            return
        moved = move(self.enabled, ref, delta)
        if moved != self.enabled:
            self._selected += delta
            self._changed(moved)

    def _save(self) -> None:
        if self._on_save(None if self.enabled is None else list(self.enabled)):
            self.dirty = False

    def _cancel(self, event: KeyPressEvent) -> None:
        # pi: Ctrl+C clears a search before it closes the list.
        if self._search.text and event.key_sequence[0].key == "c-c":
            self._search.text = ""
            return
        self.close(None)

    # -- rendering ------------------------------------------------------------------------------

    def _list_fragments(self) -> StyleAndTextTuples:
        if not self._items:
            return [("class:picker.hint", "  No matching models")]
        fragments: StyleAndTextTuples = []
        start = max(0, min(self._selected - self._max_visible // 2, len(self._items) - self._max_visible))
        end = min(start + self._max_visible, len(self._items))
        for position in range(start, end):
            ref = self._items[position]
            model = self._models[ref]
            chosen = position == self._selected
            style = "class:picker.selected" if chosen else "class:picker.option"
            fragments.append((style, ("→ " if chosen else "  ") + model.id))
            fragments.append(("class:picker.hint", f" [{model.provider}]"))
            if self.enabled is not None:
                on = ref in self.enabled
                fragments.append(("class:picker.option", " ✓") if on else ("class:picker.hint", " ✗"))
            fragments.append(("", "\n"))
        if start > 0 or end < len(self._items):
            fragments.append(("class:picker.hint", f"  ({self._selected + 1}/{len(self._items)})\n"))
        model = self._models[self._items[self._selected]]
        fragments.append(("class:picker.hint", f"  Model Name: {model.name or model.id}"))
        return fragments

    def _footer_fragments(self) -> StyleAndTextTuples:
        count = "all enabled" if self.enabled is None else f"{len(self.enabled)}/{len(self._all)} enabled"
        # The count first: on a narrow terminal the key hints are what gets cut.
        fragments: StyleAndTextTuples = [("class:picker.hint", count)]
        if self.dirty:
            fragments.append(("class:status.warning", " (unsaved)"))
        keys = _hint_text(
            self._keymap,
            ("tui.select.confirm", "toggle"),
            ("app.models.enableAll", "all"),
            ("app.models.clearAll", "clear"),
            ("app.models.toggleProvider", "provider"),
        )
        up, down = (
            self._keymap.keys_for("app.models.reorderUp"),
            self._keymap.keys_for("app.models.reorderDown"),
        )
        if up and down:
            keys += f" · {key_label(up[0]).lower()}/{key_label(down[0]).lower()} reorder"
        save = _hint_text(self._keymap, ("app.models.save", "save"))
        fragments.append(("class:picker.hint", f" · {keys}" + (f" · {save}" if save else "")))
        return fragments

    def height(self) -> int:
        listed = min(len(self._items), self._max_visible) or 1
        more = 1 if len(self._items) > self._max_visible else 0
        return 4 + listed + more + (1 if self._items else 0) + 1
