"""create_session: everything a session needs, resolved in pi's order (pi's ``createAgentSession``)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pi_host.agent import Agent, Tool
from pi_host.hookspecs import Mode, PluginContext
from pi_host.providers import Model, ThinkingLevel
from pi_host.providers._registry import ModelRegistry
from pi_host.resources import (
    ProjectTrust,
    ResourceOptions,
    Resources,
    SettingsManager,
    agent_dir,
    load_resources,
    trust_prompt_text,
)
from pi_host.session import SessionManager, default_session_dir

from ._allowlist import tool_allowed
from ._config import SessionHostConfig
from ._context import NullUI
from ._host import BUILTIN_TOOL_NAMES, Host
from ._models import ModelResolver
from ._session import AgentSession, SessionError, clamp_thinking_level

if TYPE_CHECKING:
    from ._project import ProjectResources

__all__ = [
    "DEFAULT_ACTIVE_TOOLS",
    "DEFAULT_THINKING_LEVEL",
    "SessionOptions",
    "create_session",
    "create_session_loading",
]

DEFAULT_ACTIVE_TOOLS = ("read", "bash", "edit", "write")
"""pi's default tool set; the others (grep, find, ls) are off unless listed."""

DEFAULT_THINKING_LEVEL: ThinkingLevel = "medium"

_T = TypeVar("_T")


@dataclass
class SessionOptions:
    """What the command line (or an embedding program) decides about a session.

    Provisional public API (the embedding SDK): it may change before pi-host 1.0.

    Field meanings follow pi's flags of the same names (``pi-host --help``).
    """

    cwd: str = field(default_factory=os.getcwd)
    agent_dir: str | None = None
    mode: Mode = "print"
    ui: Any = None
    provider: str | None = None
    model: str | None = None
    api_key: str | None = None
    thinking: ThinkingLevel | None = None
    session: str | None = None
    session_id: str | None = None
    continue_session: bool = False
    fork: str | None = None
    session_dir: str | None = None
    session_store: str | None = None
    no_session: bool = False
    #: The session a new session continues from (the header's ``parentSession``), as a
    #: sub-agent's session names its parent's: a file's path, or ``<store URI>#<id>``
    #: (``SessionManager.session_reference``) for a session in a store.
    parent_session: str | None = None
    name: str | None = None
    tools: Sequence[str] | None = None
    #: Tool names (``*`` and ``?`` wildcards, as in ``mcp__db__*``) that may ever be active:
    #: a tool outside them stays inactive however it comes, at start-up, registered at run
    #: time by a plugin (``ctx.register_tool``) or named to ``set_active_tools``. ``None``:
    #: no limit. A sub-agent's ``tools:`` list is one.
    tool_allowlist: Sequence[str] | None = None
    exclude_tools: Sequence[str] = ()
    no_builtin_tools: bool = False
    no_tools: bool = False
    system_prompt: str | None = None
    append_system_prompt: Sequence[str] | None = None
    no_context_files: bool = False
    skills: Sequence[str] = ()
    no_skills: bool = False
    prompt_templates: Sequence[str] = ()
    no_prompt_templates: bool = False
    disabled_plugins: Sequence[str] = ()
    extra_plugins: Sequence[object] = ()
    flags: dict[str, bool | str] = field(default_factory=dict)
    approve: bool | None = None


def _open_session_manager(
    options: SessionOptions, cwd: str, session_dir: str, cache_dir: Path
) -> SessionManager:
    """The session the options ask for.

    :raises SessionError: naming the file (or id) and what is wrong with it; a file that is
        not a session is left as it was.
    """
    from pi_host.session import SessionFileError

    try:
        return _session_manager_for(options, cwd, session_dir, cache_dir)
    except SessionFileError as exc:
        raise SessionError(str(exc)) from exc
    except ValueError as exc:  # a bad --session-id, a fork source with no entries
        raise SessionError(str(exc)) from exc
    except OSError as exc:  # the fork's copy could not be written
        where = f" ({exc.filename})" if exc.filename else ""
        raise SessionError(f"Cannot create the session file{where}: {exc.strerror or exc}") from exc


def _session_manager_for(
    options: SessionOptions, cwd: str, session_dir: str, cache_dir: Path
) -> SessionManager:
    if options.no_session:
        return SessionManager.in_memory(cwd)
    if options.fork:
        from pi_host.session import check_session_file

        source = _find_session(options.fork, cwd, session_dir)
        if check_session_file(source) is None:
            raise SessionError(f"Session file not found: {source}")
        return SessionManager.fork_from(source, cwd, session_dir, cache_dir=cache_dir)
    if options.session:
        return SessionManager.open(_find_session(options.session, cwd, session_dir), cache_dir=cache_dir)
    if options.continue_session:
        return SessionManager.continue_recent(cwd, session_dir, cache_dir=cache_dir)
    return SessionManager.create(
        cwd, session_dir, id=options.session_id, parent_session=options.parent_session, cache_dir=cache_dir
    )


def _open_stored_session(options: SessionOptions, cwd: str, uri: str, host: Host) -> SessionManager:
    """The session the options ask for, in the store ``uri`` names (``--session-store``).

    :raises SessionError: for a store that cannot be opened, an unknown or ambiguous id,
        or options that need session files (``--fork``).
    """
    from pi_host.session import SessionStoreError

    from ._stores import open_session_store

    try:
        store = open_session_store(uri, host.plugin_manager, timeout=host.dispatcher.hook_timeout)
        if options.fork:
            raise SessionError(
                "--fork works on session files; with --session-store, export the session "
                "(pi-host sessions export) and fork the file"
            )
        if options.session:
            matches = [info.id for info in store.list() if info.id.startswith(options.session)]
            if not matches:
                raise SessionError(f'No session found matching "{options.session}" in {store.uri}')
            if len(matches) > 1 and options.session not in matches:
                raise SessionError(
                    f'Session id "{options.session}" is ambiguous: {len(matches)} sessions match'
                )
            chosen = options.session if options.session in matches else matches[0]
            return SessionManager.open_stored(store, chosen)
        if options.continue_session:
            return SessionManager.continue_recent_stored(store, cwd)
        return SessionManager.create(
            cwd, id=options.session_id, parent_session=options.parent_session, store=store
        )
    except SessionStoreError as exc:
        raise SessionError(str(exc)) from exc
    except ValueError as exc:  # a bad --session-id
        raise SessionError(str(exc)) from exc


def _stored_reference(options: SessionOptions) -> tuple[str, str] | None:
    """``--session``'s store URI and id when it is a ``<store URI>#<id>`` reference."""
    if not options.session or os.path.exists(options.session):
        return None
    from pi_host.session import split_session_reference

    return split_session_reference(options.session)


def _open_referenced_session(
    options: SessionOptions, cwd: str, store_uri: str | None, reference: tuple[str, str], host: Host
) -> tuple[SessionManager, str]:
    """The session a ``<store URI>#<id>`` reference names, and the URI its store was opened
    from: the configured store when it is that store (its URI has the password a reference
    leaves out), else the reference's.

    :raises SessionError: for a store that cannot be opened or holds no such session.
    """
    from pi_host.session import SessionStoreError

    from ._stores import open_session_store

    uri, session_id = reference
    timeout = host.dispatcher.hook_timeout
    try:
        if store_uri:
            configured = open_session_store(store_uri, host.plugin_manager, timeout=timeout)
            if configured.uri == uri:
                return SessionManager.open_stored(configured, session_id), store_uri
            configured.close()
        store = open_session_store(uri, host.plugin_manager, timeout=timeout)
        try:
            return SessionManager.open_stored(store, session_id), uri
        except BaseException:
            store.close()
            raise
    except SessionStoreError as exc:
        raise SessionError(str(exc)) from exc


def _check_session_cwd(manager: SessionManager, cwd: str) -> None:
    """pi refuses a stored session whose working directory is gone (its tools would run
    somewhere else than the conversation assumes); so do we, with pi's words."""
    store = manager.session_store
    if (manager.session_file is None and store is None) or not manager.cwd or os.path.isdir(manager.cwd):
        return
    where = f"Session file: {manager.session_file}" if store is None else f"Session store: {store.uri}"
    raise SessionError(
        f"Stored session working directory does not exist: {manager.cwd}\n"
        f"{where}\nCurrent working directory: {cwd}"
    )


def _find_session(reference: str, cwd: str, session_dir: str) -> str:
    """A session file path, or the session in this project whose id starts with ``reference``."""
    if os.path.exists(reference):
        return reference
    if reference.endswith(".jsonl") or os.sep in reference:
        raise SessionError(f"Session file not found: {reference}")
    from pi_host.session import list_sessions

    matches = [info for info in list_sessions(Path(session_dir)) if info.id.startswith(reference)]
    if not matches:
        raise SessionError(f'No session found matching "{reference}"')
    if len(matches) > 1:
        raise SessionError(f'Session id "{reference}" is ambiguous: {len(matches)} sessions match')
    return str(matches[0].path)


def _active_tools(options: SessionOptions, tools: dict[str, Tool[Any]]) -> list[str]:
    if options.no_tools:
        names: list[str] = []
    elif options.tools is not None:
        names = [name for name in options.tools if name in tools]
    else:
        plugin_tools = [name for name in tools if name not in BUILTIN_TOOL_NAMES]
        builtin = [] if options.no_builtin_tools else [name for name in DEFAULT_ACTIVE_TOOLS if name in tools]
        names = [*builtin, *plugin_tools]
    excluded = set(options.exclude_tools)
    return [name for name in names if name not in excluded and tool_allowed(name, options.tool_allowlist)]


class _TrustContext:
    """The little ``pi_project_trust`` may use this early: no session exists yet."""

    def __init__(self, cwd: str, mode: Mode, ui: Any) -> None:
        self.cwd = cwd
        self.mode = mode
        self.has_ui = mode in ("tui", "rpc")
        self.ui = ui if ui is not None else NullUI()


async def _undecided_trust(trust: ProjectTrust, cwd: str, host: Host, options: SessionOptions) -> bool:
    """pi's order once ``--approve``/``--no-approve``, the trust file and
    ``defaultProjectTrust`` left it open: the installed plugins' ``pi_project_trust``, then
    (interactive mode only) the user; still undecided means untrusted for now."""
    context = cast("PluginContext", _TrustContext(cwd, options.mode, options.ui))
    verdict = await host.dispatcher.project_trust(cwd=cwd, ctx=context)
    if verdict is not None:
        trust.set_trusted(cwd, verdict.trusted, remember=verdict.remember)
        return verdict.trusted
    if options.mode == "tui" and options.ui is not None:
        return await _ask_trust(trust, cwd, options.ui)
    return trust.resolve(cwd)


async def _ask_trust(trust: ProjectTrust, cwd: str, ui: Any) -> bool:
    """Ask the user through ``ui``; dismissing the question leaves the project untrusted, unsaved."""
    choices = trust.options(cwd)
    picked = await ui.select(trust_prompt_text(cwd), [choice.label for choice in choices])
    chosen = next((choice for choice in choices if choice.label == picked), None)
    return False if chosen is None else trust.choose(cwd, chosen)


@dataclass
class _Start:
    """The steps before the session: the global settings, the trust file, the host; and,
    when the trust was decided without asking, the host configured for it."""

    global_settings: SettingsManager
    trust: ProjectTrust
    host: Host
    decided: bool | None
    settings_manager: SettingsManager | None = None


def _start(
    options: SessionOptions, cwd: str, root: Path, host: Host | None, load_host: Callable[[], Host] | None
) -> _Start:
    """Read the global settings, load the host (unless given), look the trust up and, when
    that decided it, configure the host (blocking: files and plugin code)."""
    global_settings = SettingsManager.load(cwd, root, project_trusted=False)
    trust = ProjectTrust(
        root, default=global_settings.settings.default_project_trust, override=options.approve
    )
    if host is None and load_host is not None:
        host = load_host()
    elif host is None:
        disabled = [*global_settings.settings.plugins.disable, *options.disabled_plugins]
        host = Host.load(disabled=disabled, extra_plugins=options.extra_plugins, cwd=cwd)
    start = _Start(global_settings, trust, host, trust.decision(cwd))
    if start.decided is not None:
        start.settings_manager = _configure(start, options, cwd, root, trusted=start.decided)
    return start


def _configure(
    start: _Start, options: SessionOptions, cwd: str, root: Path, *, trusted: bool
) -> SettingsManager:
    """The settings for the trust decided, and the host configured with them (its project's
    plugins loaded once trusted, ``pi_configure`` called, registrations collected)."""
    settings_manager = (
        SettingsManager.load(cwd, root, project_trusted=True) if trusted else start.global_settings
    )
    settings = settings_manager.settings
    host = start.host
    # The project's settings may disable more plugins, and its own plugins join, once trusted.
    host.apply_plugin_settings(cwd, settings.plugins.disable, options.disabled_plugins, trusted=trusted)
    host.configure(
        SessionHostConfig(
            cwd=cwd, mode=options.mode, settings=settings_manager.merged(), flags=dict(options.flags)
        )
    )
    return settings_manager


@dataclass
class _Opened:
    """What the session is built from, read and opened before it exists."""

    resolver: ModelResolver
    session_dir: str
    store_uri: str | None
    manager: SessionManager
    restored: Any
    model: Model | None
    thinking: ThinkingLevel
    resource_options: ResourceOptions
    resources: Resources


def _open(
    options: SessionOptions, cwd: str, root: Path, host: Host, settings_manager: SettingsManager
) -> _Opened:
    """Models, the session (file or store, read back when resumed), the model to start with
    and the resources (blocking: files, a database, maybe a ``!command`` for an API key)."""
    settings = settings_manager.settings
    registry = ModelRegistry.create(root)
    resolver = ModelResolver(
        registry, host.providers, api_key=options.api_key, max_retries=_client_retries(settings_manager)
    )
    # Sessions and their resume cache live under the agent directory in use (pi's SDK
    # derives the default session directory from its agentDir option, not the environment).
    session_dir = (
        options.session_dir
        or os.environ.get("PI_HOST_SESSION_DIR")
        or settings.expanded_session_dir()
        or str(default_session_dir(cwd, root))
    )
    store_uri = options.session_store or settings.session_store
    reference = _stored_reference(options)
    if reference is not None and not options.no_session:
        # --session <store URI>#<id>, as a child's header names its parent: that store's
        # session (the configured store's, when it is the same one: it has the credentials).
        manager, store_uri = _open_referenced_session(options, cwd, store_uri, reference, host)
    elif store_uri and not options.no_session:
        manager = _open_stored_session(options, cwd, store_uri, host)
        # Store appends wait on a database: off the loop, which other sessions may share.
        manager.write_in_background()
    else:
        manager = _open_session_manager(options, cwd, session_dir, root / "cache" / "sessions")
    _check_session_cwd(manager, cwd)
    restored = manager.build_session_context()

    try:
        model, thinking = _initial_model(options, resolver, restored, settings)
    except SessionError as exc:
        if registry.error_line is None:
            raise
        # The model asked for may be one the broken models.json would have defined.
        raise SessionError(f"{exc}\n{registry.error_line}") from exc
    resource_options = ResourceOptions(
        context_files=not options.no_context_files,
        skills=not options.no_skills,
        prompt_templates=not options.no_prompt_templates,
        skill_paths=tuple(options.skills),
        prompt_template_paths=tuple(options.prompt_templates),
        system_prompt=options.system_prompt,
        append_system_prompt=None
        if options.append_system_prompt is None
        else tuple(options.append_system_prompt),
    )
    resources = load_resources(cwd=cwd, agent_dir=root, settings=settings_manager, options=resource_options)
    return _Opened(
        resolver,
        session_dir,
        store_uri,
        manager,
        restored,
        model,
        thinking,
        resource_options,
        resources,
    )


async def create_session(options: SessionOptions | None = None, *, host: Host | None = None) -> AgentSession:
    """Build an :class:`AgentSession`: settings, trust, plugins, models, session file, prompt.

    Provisional public API (the embedding SDK): it may change before pi-host 1.0.

    Without ``host``, the plugins are loaded, the files read and the session opened in worker
    threads, so that other sessions on the event loop keep running meanwhile (what plugin
    code runs there: the imports, registration hooks and ``pi_configure``; lifecycle hooks
    such as ``pi_project_trust`` run on the loop). A ``host`` passed in is configured and
    used on the loop, where its other users are.

    :param host: reuse loaded plugins (tests, embedding); loaded from the environment by default.
    :raises SessionError: a session that cannot be opened, a model that does not exist.
    """
    return await create_session_loading(options or SessionOptions(), host=host)


async def create_session_loading(
    options: SessionOptions, *, host: Host | None = None, load_host: Callable[[], Host] | None = None
) -> AgentSession:
    """:func:`create_session`, with ``load_host`` building its host when none is given (a
    child's host, from its parent's ``respawn``): in a worker thread, like a host loaded from
    the environment."""
    cwd = os.path.abspath(options.cwd)
    root = Path(options.agent_dir) if options.agent_dir else agent_dir()
    plugin_work: Callable[[Callable[[], Any]], Awaitable[Any]] = _on_loop
    file_work = _on_loop
    if host is None:
        # The host is this session's alone until it is returned: build it off the loop.
        from ._off_loop import in_thread, plugin_work_in_thread

        plugin_work, file_work = plugin_work_in_thread, in_thread
    start: _Start = await plugin_work(lambda: _start(options, cwd, root, host, load_host))
    if start.decided is None:
        trusted = await _undecided_trust(start.trust, cwd, start.host, options)
        settings_manager: SettingsManager = await plugin_work(
            lambda: _configure(start, options, cwd, root, trusted=trusted)
        )
    else:
        assert start.settings_manager is not None
        trusted, settings_manager = start.decided, start.settings_manager
    opened: _Opened = await file_work(lambda: _open(options, cwd, root, start.host, settings_manager))
    return _assemble(options, cwd, root, start, trusted, settings_manager, opened)


async def _on_loop(work: Callable[[], _T]) -> _T:
    """``work()`` right here, with no checkpoint: what a caller's host needs."""
    return work()


def _assemble(
    options: SessionOptions,
    cwd: str,
    root: Path,
    start: _Start,
    trusted: bool,
    settings_manager: SettingsManager,
    opened: _Opened,
) -> AgentSession:
    """The agent and the session, on the loop (they hold the loop's objects)."""
    host, manager, restored, resources = start.host, opened.manager, opened.restored, opened.resources
    settings = settings_manager.settings
    model, thinking = opened.model, opened.thinking
    agent = Agent(
        stream_fn=opened.resolver.stream,
        model=model,
        thinking_level=thinking,
        messages=restored.messages,
        steering_mode=settings.steering_mode,
        follow_up_mode=settings.follow_up_mode,
        session_id=manager.session_id,
        cwd=cwd,
    )
    session: AgentSession | None = None

    def system_prompt(tools: Sequence[Tool[Any]]) -> str:
        # Skills plugins add at session start (pi_resources_discover) are listed too.
        skills = resources.skills if session is None else tuple(session.skills)
        return replace(resources, skills=skills).system_prompt(tools)

    def project() -> ProjectResources:
        # Built when /trust first asks: a one-shot run never needs it.
        from ._project import ProjectResources

        return ProjectResources(
            cwd=cwd,
            agent_dir=root,
            trust=start.trust,
            resource_options=opened.resource_options,
            resources=resources,
            mode=options.mode,
            flags=dict(options.flags),
            disabled_plugins=options.disabled_plugins,
        )

    session = AgentSession(
        host=host,
        agent=agent,
        session_manager=manager,
        cwd=cwd,
        mode=options.mode,
        ui=options.ui,
        settings=settings,
        model_resolver=opened.resolver,
        system_prompt_builder=system_prompt,
        skills=resources.skills,
        prompt_templates=resources.prompt_templates,
        active_tools=_active_tools(options, host.tools),
        flags=options.flags,
        project_trusted=trusted,
        settings_manager=settings_manager,
    )
    session.project_factory = project
    session.agent_dir = str(root)
    session.options = replace(options, session_dir=opened.session_dir, session_store=opened.store_uri or None)
    if not restored.messages and model is not None:
        manager.append_model_change(model.provider, model.id)
        manager.append_thinking_level_change(thinking)
    elif not restored.has_thinking_entry:
        manager.append_thinking_level_change(thinking)
    if options.name:
        session.set_session_name(options.name)
    return session


def _initial_model(
    options: SessionOptions, resolver: ModelResolver, restored: Any, settings: Any
) -> tuple[Model | None, ThinkingLevel]:
    """pi's order: explicit flag → the session's model → settings default → a provider default."""
    model: Model | None = None
    thinking: ThinkingLevel | None = options.thinking
    if options.model or options.provider:
        resolution = resolver.resolve(options.model or "", options.provider) if options.model else None
        if resolution is not None:
            if resolution.error:
                raise SessionError(resolution.error)
            model = resolution.model
            thinking = thinking or resolution.thinking_level
        else:
            provider_models = [m for m in resolver.all_models() if m.provider == options.provider]
            if not provider_models:
                raise SessionError(f'Unknown provider "{options.provider}". Run pi-host --list-models.')
            model = provider_models[0]
    if model is None and restored.model is not None:
        model = resolver.find(restored.model.provider, restored.model.model_id)
        if model is not None and not resolver.has_auth(model):
            model = None
    if model is None and settings.default_provider and settings.default_model:
        model = resolver.find(settings.default_provider, settings.default_model)
    if model is None:
        model = resolver.default_model()
    if thinking is None and restored.has_thinking_entry:
        thinking = cast(ThinkingLevel, restored.thinking_level)
    if thinking is None:
        thinking = settings.default_thinking_level or DEFAULT_THINKING_LEVEL
    return model, clamp_thinking_level(model, cast(ThinkingLevel, thinking))


_WHOLE = "a whole number >= 0; the provider client's default is used"


def _client_retries(settings: SettingsManager) -> int | None:
    """pi's ``retry.provider.maxRetries``: how often the provider client itself retries a
    transient failure before any plugin sees it (None: the client's default).

    The key lives in pi's ``retry`` section, whose other keys belong to a retry plugin; this
    one configures the transport, which is the host's.
    """
    value = settings.get("retry.provider.maxRetries")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if value is not None:
        settings.report_section_problems(
            [(("retry", "provider", "maxRetries"), f"retry.provider.maxRetries: {value!r} is not {_WHOLE}")]
        )
    return None
