"""Project trust and resource discovery: what a session may load from where.

Startup order: ``pi_configure`` → ``pi_project_trust`` (only when the project has ``.pi``
resources and trust is undecided) → ``pi_session_start`` → ``pi_resources_discover``. On
``/reload`` and session switches, ``pi_resources_discover`` fires again after
``pi_session_start``.
"""

# mypy: disable-error-code="empty-body"

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ._reducers import ResourcesReducer
from ._results import ProjectTrustDecision, ResourcePaths
from ._strategy import Strategy, hookspec

if TYPE_CHECKING:
    from ._context import PluginContext

__all__ = ["pi_project_trust", "pi_resources_discover"]


@hookspec(strategy=Strategy.FIRST, returns=ProjectTrustDecision)
def pi_project_trust(cwd: str, ctx: PluginContext) -> ProjectTrustDecision | None:
    """Decide whether to trust a project's local resources and plugins.

    Fires at startup after ``pi_configure`` and before ``pi_session_start``, when the
    working directory holds project resources (``.pi/``) and neither the trust file, the
    ``defaultProjectTrust`` setting nor ``--approve``/``--no-approve`` decided. Project-local
    plugins are not loaded yet, so only installed plugins take part.

    :param cwd: the project directory.
    :param ctx: the plugin context; only ``cwd``, ``mode``, ``has_ui`` and ``ui`` dialogs
        are meaningful this early.
    :returns: a :class:`ProjectTrustDecision`, or ``None`` to leave the decision to others
        (in the end, to the user).

    **Combination:** first — the first decision wins; the rest are not called.
    **On error:** the error is reported and the implementation skipped.

    Example::

        import os

        from pi_host import hookimpl
        from pi_host.hookspecs import ProjectTrustDecision


        @hookimpl
        def pi_project_trust(cwd):
            if cwd.startswith(os.path.expanduser("~/src/trusted/")):
                return ProjectTrustDecision(trusted=True)
            return None
    """


@hookspec(strategy=Strategy.COLLECT, returns=ResourcePaths, reducer=ResourcesReducer)
def pi_resources_discover(
    cwd: str, reason: Literal["startup", "reload"], ctx: PluginContext
) -> ResourcePaths | None:
    """Offer extra skills, prompt templates and themes.

    Fires after ``pi_session_start`` at startup (``reason="startup"``) and after every
    reload (``reason="reload"``), before the system prompt is built.

    :param cwd: the working directory.
    :param reason: ``"startup"`` or ``"reload"``.
    :param ctx: the plugin context.
    :returns: :class:`ResourcePaths` with files or directories, or ``None``.

    **Combination:** collect — every implementation runs; the paths are aggregated in call
    order, each remembered with the plugin that offered it
    (:class:`DiscoveredResources`).
    **On error:** the error is reported and the implementation skipped.

    Example::

        from pathlib import Path

        from pi_host import hookimpl
        from pi_host.hookspecs import ResourcePaths

        HERE = Path(__file__).parent


        @hookimpl
        def pi_resources_discover():
            return ResourcePaths(skill_paths=[str(HERE / "skills")])
    """
