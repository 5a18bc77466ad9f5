"""``/tree``: the session tree with pi's filter modes, search and folding.

:class:`TreeView` is the model (which entries show, how they are drawn, where the selection
goes); :class:`TreeDialog` puts it on screen in place of the editor with pi's keys:

- filters: ``ctrl+d`` default, ``ctrl+t`` no tool results, ``ctrl+u`` user messages only,
  ``ctrl+l`` labeled entries only, ``ctrl+a`` everything (each toggles back to default),
  ``ctrl+o`` cycles through them;
- ``ctrl+←``/``alt+←`` folds the branch segment at the selection (or jumps to the start of
  the segment above), ``ctrl+→``/``alt+→`` unfolds it (or jumps to the next branch point);
- typing searches (every word must appear), backspace deletes, Escape clears the search
  first and closes the tree second; ``←``/``→`` page.

One difference from pi, kept on purpose: an assistant turn that only called tools is shown
(named by its calls) instead of hidden, so that the point before its tool results can be
picked. Changing the filter or the search unfolds everything, as in pi.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import Dimension, FormattedTextControl, HSplit, Window

from ._commands import _content_text, entry_label
from ._dialogs import Dialog, _bind, _hint_window, _rule, _title_window
from ._keymap import Keymap, default_keymap
from ._keys import key_label
from ._render import field_of

__all__ = ["FILTER_MODES", "FilterMode", "TreeDialog", "TreeView"]

FilterMode = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
FILTER_MODES: tuple[FilterMode, ...] = get_args(FilterMode)
_STATUS = {"no-tools": " [no-tools]", "user-only": " [user]", "labeled-only": " [labeled]", "all": " [all]"}
# Entry types the default view leaves out: settings and bookkeeping, not conversation.
_BOOKKEEPING = {"label", "custom", "model_change", "thinking_level_change", "session_info"}


@dataclass
class _Node:
    id: str
    parent: str | None
    entry: Any
    label: str | None  # the user's label on the entry
    text: str  # how the entry reads in the list
    search: str  # what the search matches, lower case


class TreeView:
    """Which entries of a session tree show under a filter, a search and folds, and how.

    :param roots: the session's tree (``TreeNode``\\ s: ``entry``, ``children``, ``label``).
    :param leaf_id: the current entry; it and its ancestors are marked ``•`` and the
        selection starts there.
    """

    def __init__(self, roots: Sequence[Any], leaf_id: str | None, mode: FilterMode = "default") -> None:
        self.mode: FilterMode = mode if mode in FILTER_MODES else "default"
        self.query = ""
        self.folded: set[str] = set()
        self.leaf_id = leaf_id
        self._nodes = self._flatten(roots)
        self._by_id = {node.id: node for node in self._nodes}
        self.active: set[str] = set()
        cursor = leaf_id
        while cursor is not None and cursor in self._by_id and cursor not in self.active:
            self.active.add(cursor)
            cursor = self._by_id[cursor].parent
        self.visible: list[_Node] = []
        self.parent_of: dict[str, str | None] = {}
        self.children_of: dict[str | None, list[str]] = {}
        self.selected = 0
        self._refresh(leaf_id)

    # -- building --------------------------------------------------------------------------------

    def _flatten(self, roots: Sequence[Any]) -> list[_Node]:
        """Every entry, depth first, the branch holding the current leaf first (as pi)."""
        holds_leaf: dict[int, bool] = {}

        def contains_leaf(node: Any) -> bool:
            # Iterative post-order: sessions can be deep chains.
            order, stack = [], [node]
            while stack:
                current = stack.pop()
                order.append(current)
                stack.extend(current.children)
            for current in reversed(order):
                holds_leaf[id(current)] = str(field_of(current.entry, "id")) == self.leaf_id or any(
                    holds_leaf[id(child)] for child in current.children
                )
            return holds_leaf[id(node)]

        for root in roots:
            contains_leaf(root)
        tool_calls: dict[str, tuple[str, Any]] = {}
        nodes: list[_Node] = []
        ordered_roots = sorted(roots, key=lambda root: not holds_leaf[id(root)])
        stack: list[tuple[Any, str | None]] = [(root, None) for root in reversed(ordered_roots)]
        while stack:
            node, parent = stack.pop()
            entry = node.entry
            node_id = str(field_of(entry, "id"))
            text = entry_label(entry, tool_calls)
            if text is None:
                kind = field_of(entry, "type")
                if kind == "label":
                    text = f"[label: {field_of(entry, 'label') or '(cleared)'}]"
                else:
                    text = f"[custom: {field_of(entry, 'custom_type', 'customType')}]"
            nodes.append(_Node(node_id, parent, entry, node.label, text, _searchable(node, text)))
            children = sorted(node.children, key=lambda child: not holds_leaf[id(child)])
            stack.extend((child, node_id) for child in reversed(children))
        return nodes

    def _passes(self, node: _Node, tokens: list[str]) -> bool:
        kind = field_of(node.entry, "type")
        role = field_of(field_of(node.entry, "message"), "role") if kind == "message" else None
        if self.mode == "user-only":
            shown = role == "user"
        elif self.mode == "labeled-only":
            shown = node.label is not None
        elif self.mode == "all":
            shown = True
        elif self.mode == "no-tools":
            shown = kind not in _BOOKKEEPING and role != "toolResult"
        else:
            shown = kind not in _BOOKKEEPING
        return shown and all(token in node.search for token in tokens)

    def _refresh(self, keep: str | None) -> None:
        """Recompute the visible entries, keeping the selection on ``keep`` or the nearest
        shown ancestor of it."""
        tokens = self.query.lower().split()
        shown = [node for node in self._nodes if self._passes(node, tokens)]
        if self.folded:
            hidden: set[str] = set()
            for node in self._nodes:  # parents come before their children
                if node.parent is not None and (node.parent in self.folded or node.parent in hidden):
                    hidden.add(node.id)
            shown = [node for node in shown if node.id not in hidden]
        self.visible = shown
        visible_ids = {node.id for node in shown}
        self.parent_of, self.children_of = {}, {None: []}
        for node in shown:
            up = node.parent
            while up is not None and up not in visible_ids:
                up = self._by_id[up].parent
            self.parent_of[node.id] = up
            self.children_of.setdefault(up, []).append(node.id)
        index = {node.id: i for i, node in enumerate(shown)}
        cursor = keep
        while cursor is not None:
            if cursor in index:
                self.selected = index[cursor]
                return
            cursor = self._by_id[cursor].parent if cursor in self._by_id else None
        self.selected = max(0, min(self.selected, len(shown) - 1))

    # -- what the keys do ------------------------------------------------------------------------

    @property
    def selected_id(self) -> str | None:
        return self.visible[self.selected].id if self.visible else None

    def set_mode(self, mode: FilterMode, *, toggle: bool = False) -> None:
        """Show ``mode`` (with ``toggle``: back to default when it is already shown)."""
        self.mode = "default" if toggle and self.mode == mode else mode
        self.folded.clear()
        self._refresh(self.selected_id)

    def cycle_mode(self, step: int) -> None:
        position = FILTER_MODES.index(self.mode)
        self.set_mode(FILTER_MODES[(position + step) % len(FILTER_MODES)])

    def search(self, query: str) -> None:
        self.query = query
        self.folded.clear()
        self._refresh(self.selected_id)

    def move(self, delta: int, *, wrap: bool = False) -> None:
        if not self.visible:
            return
        if wrap:
            self.selected = (self.selected + delta) % len(self.visible)
        else:
            self.selected = max(0, min(len(self.visible) - 1, self.selected + delta))

    def foldable(self, node_id: str) -> bool:
        """A node folds when it has shown children and starts a segment: a root, or one of
        several children of its (shown) parent."""
        if not self.children_of.get(node_id):
            return False
        parent = self.parent_of.get(node_id)
        return parent is None or len(self.children_of.get(parent, [])) > 1

    def fold_or_up(self) -> None:
        node_id = self.selected_id
        if node_id is None:
            return
        if self.foldable(node_id) and node_id not in self.folded:
            self.folded.add(node_id)
            self._refresh(node_id)
            return
        # To the start of the segment above: the nearest ancestor that is one of several.
        index = {node.id: i for i, node in enumerate(self.visible)}
        current = node_id
        while True:
            parent = self.parent_of.get(current)
            if parent is None:
                self.selected = index[current]
                return
            if len(self.children_of.get(parent, [])) > 1 and index[current] < self.selected:
                self.selected = index[current]
                return
            current = parent

    def unfold_or_down(self) -> None:
        node_id = self.selected_id
        if node_id is None:
            return
        if node_id in self.folded:
            self.folded.discard(node_id)
            self._refresh(node_id)
            return
        # Down the first children to the next branch point (its first branch) or the end.
        index = {node.id: i for i, node in enumerate(self.visible)}
        current = node_id
        while True:
            children = self.children_of.get(current, [])
            if not children:
                self.selected = index[current]
                return
            if len(children) > 1:
                self.selected = index[children[0]]
                return
            current = children[0]

    # -- drawing ---------------------------------------------------------------------------------

    def rows(self) -> list[tuple[str, str]]:
        """``(entry id, line)`` for every shown entry, in order.

        A chain of single children stays in one column; where the shown tree branches, each
        branch goes under a ``├─``/``└─`` connector, whose ``─`` is ``⊟`` for a segment that
        can fold and ``⊞`` for a folded one. Entries on the path to the leaf are marked ``•``.
        """
        by_id = {node.id: node for node in self.visible}
        out: list[tuple[str, str]] = []
        roots = self.children_of.get(None, [])
        # Several shown roots (the first entries hidden by the filter) hang from one virtual
        # root, with connectors, as in pi.
        stack: list[tuple[str, str, str]] = [
            (root, "", "" if len(roots) == 1 else "└" if position == len(roots) - 1 else "├")
            for position, root in reversed(list(enumerate(roots)))
        ]
        while stack:
            node_id, prefix, connector = stack.pop()
            node = by_id[node_id]
            fold = "⊞" if node_id in self.folded else "⊟" if self.foldable(node_id) else "─"
            # A root has no connector to carry the fold mark: a folded one gets it in front.
            folded_root = "⊞ " if node_id in self.folded else ""
            head = f"{connector}{fold} " if connector else folded_root
            marker = "• " if node_id in self.active else ""
            tag = f"[{node.label}] " if node.label else ""
            out.append((node_id, f"{prefix}{head}{marker}{tag}{node.text}"))
            children = self.children_of.get(node_id, [])
            child_prefix = prefix + ("   " if connector == "└" else "│  " if connector else "")
            if len(children) == 1:
                stack.append((children[0], child_prefix, ""))
            else:
                for position, child in reversed(list(enumerate(children))):
                    stack.append((child, child_prefix, "└" if position == len(children) - 1 else "├"))
        return out

    def status(self) -> str:
        shown = f"{self.selected + 1}/{len(self.visible)}" if self.visible else "0/0"
        return f"({shown}){_STATUS.get(self.mode, '')}"


def _searchable(node: Any, text: str) -> str:
    entry = node.entry
    parts = [node.label or "", text]
    if field_of(entry, "type") == "message":
        message = field_of(entry, "message")
        parts += [str(field_of(message, "role") or ""), _content_text(field_of(message, "content"))]
    return " ".join(parts).lower()


class TreeDialog(Dialog[str]):
    """``/tree`` in place of the editor; the result is the chosen entry's id."""

    def __init__(
        self,
        view: TreeView,
        *,
        title: str = "Session Tree",
        max_visible: int = 15,
        keymap: Keymap | None = None,
    ) -> None:
        super().__init__()
        self.view = view
        self._max_visible = max(5, max_visible)
        keymap = keymap or default_keymap()
        bindings = KeyBindings()

        def search(text: str) -> None:
            view.search(text)

        def typed(event: KeyPressEvent) -> None:
            if event.data and all(ord(char) >= 32 and not 0x7F <= ord(char) <= 0x9F for char in event.data):
                search(view.query + event.data)

        def backspace(event: KeyPressEvent) -> None:
            if view.query:
                search(view.query[:-1])

        def cancel(event: KeyPressEvent) -> None:
            if view.query:
                search("")
            else:
                self.close(None)

        def choose(event: KeyPressEvent) -> None:
            if view.selected_id is not None:
                self.close(view.selected_id)

        bindings.add(Keys.Any)(typed)
        _bind(bindings, keymap, "tui.editor.deleteCharBackward", backspace)
        _bind(bindings, keymap, "tui.select.up", lambda event: view.move(-1, wrap=True))
        _bind(bindings, keymap, "tui.select.down", lambda event: view.move(1, wrap=True))
        for action in ("tui.select.pageUp", "tui.editor.cursorLeft"):
            _bind(bindings, keymap, action, lambda event: view.move(-self._max_visible))
        for action in ("tui.select.pageDown", "tui.editor.cursorRight"):
            _bind(bindings, keymap, action, lambda event: view.move(self._max_visible))
        _bind(bindings, keymap, "app.tree.foldOrUp", lambda event: view.fold_or_up())
        _bind(bindings, keymap, "app.tree.unfoldOrDown", lambda event: view.unfold_or_down())
        _bind(bindings, keymap, "app.tree.filter.default", lambda event: view.set_mode("default"))
        toggles: dict[str, FilterMode] = {
            "app.tree.filter.noTools": "no-tools",
            "app.tree.filter.userOnly": "user-only",
            "app.tree.filter.labeledOnly": "labeled-only",
            "app.tree.filter.all": "all",
        }
        for action, mode in toggles.items():
            _bind(bindings, keymap, action, lambda event, mode=mode: view.set_mode(mode, toggle=True))  # type: ignore[misc]
        _bind(bindings, keymap, "app.tree.filter.cycleForward", lambda event: view.cycle_mode(1))
        _bind(bindings, keymap, "app.tree.filter.cycleBackward", lambda event: view.cycle_mode(-1))
        _bind(bindings, keymap, "tui.select.confirm", choose)
        _bind(bindings, keymap, "tui.select.cancel", cancel)

        self._list = Window(
            FormattedTextControl(self._list_fragments, focusable=True, show_cursor=False),
            height=lambda: Dimension.exact(self._list_height()),
            dont_extend_height=True,
        )
        search_line = Window(FormattedTextControl(self._search_fragments), height=1, dont_extend_height=True)
        self.container = HSplit(
            [_rule(), _title_window(title), _hint_window(self._hint(keymap)), search_line, self._list],
            key_bindings=bindings,
        )
        self.focus = self._list

    @staticmethod
    def _hint(keymap: Keymap) -> str:
        def keys(*actions: str) -> str:
            labels = [key_label(keymap.keys_for(a)[0]) for a in actions if keymap.keys_for(a)]
            short = (
                label.replace("Ctrl+", "^").replace("Left", "←").replace("Right", "→") for label in labels
            )
            return "/".join(short)

        filters = keys(
            "app.tree.filter.default",
            "app.tree.filter.noTools",
            "app.tree.filter.userOnly",
            "app.tree.filter.labeledOnly",
            "app.tree.filter.all",
        )
        cycle = keys("app.tree.filter.cycleForward")
        fold = keys("app.tree.foldOrUp", "app.tree.unfoldOrDown")
        return (
            f"↑/↓ move · ←/→ page · {fold} fold/branch · {filters} filters · {cycle} cycle · • current branch"
        )

    def _search_fragments(self) -> StyleAndTextTuples:
        return [("class:picker.hint", "  Type to search: "), ("class:picker.filter", self.view.query)]

    def _list_height(self) -> int:
        return max(1, min(len(self.view.visible), self._max_visible)) + 1

    def height(self) -> int:
        return self._list_height() + 4

    def _list_fragments(self) -> StyleAndTextTuples:
        view = self.view
        if not view.visible:
            return [
                ("class:picker.hint", "  No entries found\n"),
                ("class:picker.hint", f"  {view.status()}"),
            ]
        rows = view.rows()
        start = max(0, min(view.selected - self._max_visible // 2, len(rows) - self._max_visible))
        fragments: StyleAndTextTuples = []
        for position in range(start, min(start + self._max_visible, len(rows))):
            selected = position == view.selected
            marker = "› " if selected else "  "  # noqa: RUF001
            style = "class:picker.selected" if selected else "class:picker.option"
            fragments.append((style, marker + rows[position][1]))
            fragments.append(("", "\n"))
        fragments.append(("class:picker.hint", f"  {view.status()}"))
        return fragments
