"""``/scoped-models``: the list operations, and Ctrl+P's cycle following the scope (in-process)."""

from __future__ import annotations

from pathlib import Path

import anyio

from pi_host.modes._interactive._scoped_models import (
    ScopedModelsDialog,
    clear_all,
    enable_all,
    move,
    ordered,
    saved_value,
    toggle,
)
from pi_host.providers import Model
from tests.interactive_support.fake_session import FAKE_MODEL, OTHER_MODEL
from tests.test_interactive_app import running, until

ALL = ["p/a", "p/b", "q/c"]


def test_toggle_starts_from_the_one_model_chosen() -> None:
    assert toggle(None, "p/b") == ["p/b"]
    assert toggle(["p/b"], "q/c") == ["p/b", "q/c"]
    assert toggle(["p/b", "q/c"], "p/b") == ["q/c"]


def test_enable_and_clear_all_or_some() -> None:
    assert enable_all(["p/b"], ALL) is None
    assert enable_all(["p/b"], ALL, ["q/c"]) == ["p/b", "q/c"]
    assert enable_all(None, ALL) is None
    assert clear_all(None, ALL) == []
    assert clear_all(None, ALL, ["p/a", "p/b"]) == ["q/c"]
    assert clear_all(["q/c", "p/a"], ALL, ["p/a"]) == ["q/c"]


def test_move_and_order() -> None:
    assert move(["p/a", "p/b", "q/c"], "q/c", -1) == ["p/a", "q/c", "p/b"]
    assert move(["p/a", "p/b"], "p/a", -1) == ["p/a", "p/b"]  # already first
    assert move(None, "p/a", 1) is None
    assert ordered(["q/c", "p/a"], ALL) == ["q/c", "p/a", "p/b"]
    assert ordered(None, ALL) == ALL
    assert ordered(["gone/x", "p/b"], ALL) == ["p/b", "p/a", "q/c"]  # a model no longer available


def test_saved_value_clears_the_key_when_nothing_filters() -> None:
    assert saved_value(None, ALL) is None
    assert saved_value([], ALL) is None
    assert saved_value(["q/c", "p/a", "p/b"], ALL) is None
    assert saved_value(["q/c", "p/a"], ALL) == ["q/c", "p/a"]


def test_dialog_keys_change_the_scope_and_save() -> None:
    models = [Model(id=ref.split("/")[1], provider=ref.split("/")[0], api="faux") for ref in ALL]
    changes: list[list[str] | None] = []
    saves: list[list[str] | None] = []
    dialog = ScopedModelsDialog(
        models, None, on_change=changes.append, on_save=lambda refs: saves.append(refs) is None
    )
    dialog._step(2)
    dialog._toggle()  # q/c alone
    assert dialog.enabled == ["q/c"] and dialog.items[0] == "q/c" and dialog.dirty
    assert dialog.selected_ref == "p/b"  # the cursor stayed on the third row
    dialog._toggle_provider()  # provider p joins: every model is enabled again
    assert dialog.enabled is None
    dialog._change_all(clear_all)
    assert dialog.enabled == []
    dialog._toggle()
    assert dialog.enabled is not None and len(dialog.enabled) == 1
    dialog._save()
    assert saves == [dialog.enabled] and not dialog.dirty
    assert changes[-1] == dialog.enabled


async def test_ctrl_p_cycles_within_enabled_models_from_the_settings(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        app, session = harness.app, harness.session
        session.settings["enabledModels"] = ["faux/fake-model:high", "faux/other-model"]
        third = Model(id="third-model", api="faux", provider="faux", reasoning=True)
        session.available_models = lambda: [FAKE_MODEL, OTHER_MODEL, third]  # type: ignore[method-assign]
        seen = []
        for _ in range(3):
            await app.commands.cycle_model()
            seen.append((session.model.id, session.thinking_level))
        # other-model does not think; the pattern's level comes back with fake-model.
        assert [model for model, _ in seen] == ["other-model", "fake-model", "other-model"]
        assert seen[1][1] == "high"

        # /scoped-models then changes the cycle at once.
        app.commands.set_model_scope(["faux/third-model", "faux/other-model"], session.available_models())
        await app.commands.cycle_model()
        assert session.model.id == "third-model"
        await app.commands.cycle_model()
        assert session.model.id == "other-model"


async def test_scope_patterns_that_match_nothing_are_reported(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        app, session = harness.app, harness.session
        session.settings["enabledModels"] = ["nowhere/*", "faux/fake-model"]
        await app.commands.cycle_model()
        await harness.committed('No models match pattern "nowhere/*"')
        await harness.committed("Only one model in scope")
        assert session.model.id == "fake-model"


async def test_scoped_models_dialog_opens_on_the_settings_scope(tmp_path: Path) -> None:
    async with running(tmp_path) as harness:
        app, session = harness.app, harness.session
        session.settings["enabledModels"] = ["faux/other-model"]
        app.spawn(app.commands.run, "/scoped-models")
        await until(lambda: app._dialog is not None)
        dialog = app._dialog
        assert isinstance(dialog, ScopedModelsDialog)
        assert dialog.enabled == ["faux/other-model"]
        assert dialog.items == ["faux/other-model", "faux/fake-model"]
        harness.keys.send_text("\x01")  # Ctrl+A: all enabled
        await until(lambda: dialog.enabled is None)
        harness.keys.send_text("\x13")  # Ctrl+S
        await harness.committed("Model selection saved to settings")
        assert session.saved_settings == [("enabledModels", None)]
        assert "enabledModels" not in session.settings
        harness.keys.send_text("\x1b")
        await until(lambda: app._dialog is None)
        with anyio.fail_after(5):
            await app.commands.cycle_model()
        assert session.model.id == "other-model"
