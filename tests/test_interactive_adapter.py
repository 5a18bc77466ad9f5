"""The bridge from AgentSession to the terminal UI: start-up UI calls are not lost."""

from __future__ import annotations

from typing import Any

import anyio

from pi_host.modes._interactive_session import DeferredUI


class FakeUI:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def notify(self, message: str, level: str = "info") -> None:
        self.calls.append(("notify", message))

    def set_status(self, key: str, text: str | None) -> None:
        self.calls.append(("status", (key, text)))

    async def select(self, title: str, options: list[str], *, timeout: float | None = None) -> str | None:
        self.calls.append(("select", title))
        return options[-1]

    def get_editor_text(self) -> str:
        return "draft"


async def test_calls_made_before_the_ui_is_up_are_replayed_in_order() -> None:
    deferred = DeferredUI()
    deferred.notify("settings problem", "warning")
    deferred.set_status("guard", "default")
    assert deferred.get_editor_text() == ""
    ui = FakeUI()
    deferred.attach(ui)  # type: ignore[arg-type]
    assert ui.calls == [("notify", "settings problem"), ("status", ("guard", "default"))]
    deferred.notify("later")
    assert ui.calls[-1] == ("notify", "later")
    assert deferred.get_editor_text() == "draft"


async def test_a_dialog_waits_for_the_ui() -> None:
    deferred = DeferredUI()
    ui = FakeUI()
    answers: list[str | None] = []

    async def ask() -> None:
        answers.append(await deferred.select("Trust?", ["no", "yes"]))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await anyio.wait_all_tasks_blocked()
            assert answers == []
            deferred.attach(ui)  # type: ignore[arg-type]
    assert answers == ["yes"]
