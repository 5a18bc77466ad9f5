"""Command-line parsing with pi's flags and pi's quirks (``-p "prompt"``, ``@file``, unknown ``--flags``).

Hand-written rather than argparse because pi's grammar is not argparse's: ``-p`` takes an
optional message, unknown long flags are kept for plugins (``--plan``), and ``@file`` arguments
sit among the messages. ``-p`` always means print mode, with the next argument as its prompt
(``-p "no:idea"`` included); plugins are disabled with ``--no-plugin NAME`` or pytest's
attached form ``-pno:NAME``, which can never be a prompt. Nothing here imports more than the
standard library, so ``--version`` and ``--help`` stay fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "SUBCOMMANDS",
    "THINKING_LEVELS",
    "CliArgs",
    "Diagnostic",
    "known_flags",
    "parse_args",
    "render_help",
    "unknown_flag_error",
]

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")

Mode = Literal["text", "json", "rpc"]


@dataclass(frozen=True)
class Diagnostic:
    """A parse problem: ``error`` stops the program, ``warning`` is printed and ignored."""

    level: Literal["error", "warning"]
    message: str


@dataclass
class CliArgs:
    """The parsed command line. Field names follow pi's ``Args``."""

    messages: list[str] = field(default_factory=list)
    file_args: list[str] = field(default_factory=list)
    unknown_flags: dict[str, str | bool] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    help: bool = False
    version: bool = False
    mode: Mode | None = None
    print: bool = False
    continue_session: bool = False
    resume: bool = False
    provider: str | None = None
    model: str | None = None
    api_key: str | None = None
    thinking: str | None = None
    models: list[str] | None = None
    system_prompt: str | None = None
    append_system_prompt: list[str] = field(default_factory=list)
    session: str | None = None
    session_id: str | None = None
    fork: str | None = None
    session_dir: str | None = None
    session_store: str | None = None
    no_session: bool = False
    name: str | None = None
    tools: list[str] | None = None
    exclude_tools: list[str] = field(default_factory=list)
    no_builtin_tools: bool = False
    no_tools: bool = False
    skills: list[str] = field(default_factory=list)
    no_skills: bool = False
    prompt_templates: list[str] = field(default_factory=list)
    no_prompt_templates: bool = False
    no_context_files: bool = False
    export: str | None = None
    list_models: str | bool | None = None
    verbose: bool = False
    approve: bool | None = None
    disabled_plugins: list[str] = field(default_factory=list)
    enabled_plugins: list[str] = field(default_factory=list)
    extensions: list[str] = field(default_factory=list)
    subcommand: list[str] | None = None


# flag -> (attribute, kind). kind: "bool", "str", "list" (repeatable), "csv".
_FLAGS: dict[str, tuple[str, str]] = {
    "--help": ("help", "bool"),
    "-h": ("help", "bool"),
    "--version": ("version", "bool"),
    "-v": ("version", "bool"),
    "--continue": ("continue_session", "bool"),
    "-c": ("continue_session", "bool"),
    "--resume": ("resume", "bool"),
    "-r": ("resume", "bool"),
    "--provider": ("provider", "str"),
    "--model": ("model", "str"),
    "--api-key": ("api_key", "str"),
    "--system-prompt": ("system_prompt", "str"),
    "--append-system-prompt": ("append_system_prompt", "list"),
    "--no-session": ("no_session", "bool"),
    "--session": ("session", "str"),
    "--session-id": ("session_id", "str"),
    "--fork": ("fork", "str"),
    "--session-dir": ("session_dir", "str"),
    "--session-store": ("session_store", "str"),
    "--name": ("name", "str"),
    "-n": ("name", "str"),
    "--models": ("models", "csv"),
    "--no-tools": ("no_tools", "bool"),
    "-nt": ("no_tools", "bool"),
    "--no-builtin-tools": ("no_builtin_tools", "bool"),
    "-nbt": ("no_builtin_tools", "bool"),
    "--tools": ("tools", "csv"),
    "-t": ("tools", "csv"),
    "--exclude-tools": ("exclude_tools", "csv"),
    "-xt": ("exclude_tools", "csv"),
    "--skill": ("skills", "list"),
    "--no-skills": ("no_skills", "bool"),
    "-ns": ("no_skills", "bool"),
    "--prompt-template": ("prompt_templates", "list"),
    "--no-prompt-templates": ("no_prompt_templates", "bool"),
    "-np": ("no_prompt_templates", "bool"),
    "--no-context-files": ("no_context_files", "bool"),
    "-nc": ("no_context_files", "bool"),
    "--export": ("export", "str"),
    "--extension": ("extensions", "list"),
    "-e": ("extensions", "list"),
    "--verbose": ("verbose", "bool"),
    "--no-plugin": ("disabled_plugins", "list"),
}
# Flags handled by hand below, listed so that "did you mean" knows them.
_SPECIAL = (
    "--mode",
    "--print",
    "-p",
    "--thinking",
    "--list-models",
    "--approve",
    "-a",
    "--no-approve",
    "-na",
    "-pno:",
)

SUBCOMMANDS = ("plugins", "install", "uninstall", "sessions", "batch")


def known_flags() -> list[str]:
    """Every built-in flag, long and short."""
    return sorted({*_FLAGS, *_SPECIAL})


def _takes_value(next_arg: str | None) -> bool:
    return next_arg is not None and not next_arg.startswith("-") and not next_arg.startswith("@")


def parse_args(argv: list[str]) -> CliArgs:
    """Parse ``argv`` (without the program name) the way pi does.

    Unknown long flags are kept in ``unknown_flags`` for plugin-registered flags; the caller
    reports the ones no plugin claimed (see :func:`unknown_flag_error`). Unknown short flags
    are errors at once.
    """
    args = CliArgs()
    # `--session-store URI` is global: it may come before a subcommand.
    while len(argv) >= 2 and argv[0] == "--session-store":
        args.session_store, argv = argv[1], argv[2:]
    if argv and argv[0] in SUBCOMMANDS:
        args.subcommand = list(argv)
        return args
    i = 0
    while i < len(argv):
        arg = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg in _FLAGS:
            attr, kind = _FLAGS[arg]
            if kind == "bool":
                setattr(args, attr, True)
            elif nxt is None:
                args.diagnostics.append(Diagnostic("error", f"Option {arg} needs a value"))
            else:
                i += 1
                if kind == "str":
                    setattr(args, attr, nxt)
                elif kind == "list":
                    getattr(args, attr).append(nxt)
                else:
                    values = [part.strip() for part in nxt.split(",") if part.strip()]
                    if attr == "exclude_tools":
                        args.exclude_tools.extend(values)
                    else:
                        setattr(args, attr, values)
        elif arg == "--mode":
            if nxt in ("text", "json", "rpc"):
                args.mode = nxt  # type: ignore[assignment]
                i += 1
            else:
                args.diagnostics.append(
                    Diagnostic("error", f'Invalid mode "{nxt}". Valid values: text, json, rpc')
                )
                i += nxt is not None
        elif arg in ("--print", "-p"):
            args.print = True
            if (
                nxt is not None
                and not nxt.startswith("@")
                and (not nxt.startswith("-") or nxt.startswith("---"))
            ):
                args.messages.append(nxt)
                i += 1
                if _looks_like_plugin_switch(nxt):
                    # `-p no:NAME` used to disable a plugin; it is a prompt now, as in pi.
                    args.diagnostics.append(
                        Diagnostic(
                            "warning",
                            f'"-p {nxt}" is sent to the model as a prompt; to run without the '
                            f"plugin {nxt[3:]}, use --no-plugin {nxt[3:]}",
                        )
                    )
        elif arg.startswith("-pno:"):
            # pytest's attached spelling: one argument, so it can never be a prompt.
            args.disabled_plugins.append(arg[5:])
        elif arg == "--thinking":
            if nxt is None:
                args.diagnostics.append(Diagnostic("error", "Option --thinking needs a value"))
            elif nxt in THINKING_LEVELS:
                args.thinking = nxt
                i += 1
            else:
                args.diagnostics.append(
                    Diagnostic(
                        "warning",
                        f'Invalid thinking level "{nxt}". Valid values: {", ".join(THINKING_LEVELS)}',
                    )
                )
                i += 1
        elif arg == "--list-models":
            if _takes_value(nxt):
                assert nxt is not None
                args.list_models = nxt
                i += 1
            else:
                args.list_models = True
        elif arg in ("--approve", "-a"):
            args.approve = True
        elif arg in ("--no-approve", "-na"):
            args.approve = False
        elif arg.startswith("@"):
            args.file_args.append(arg[1:])
        elif arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if eq:
                args.unknown_flags[name] = value
            elif _takes_value(nxt):
                assert nxt is not None
                args.unknown_flags[name] = nxt
                i += 1
            else:
                args.unknown_flags[name] = True
        elif arg.startswith("-") and arg != "-":
            args.diagnostics.append(Diagnostic("error", _unknown_message(arg)))
        else:
            args.messages.append(arg)
        i += 1
    return args


def _looks_like_plugin_switch(text: str) -> bool:
    """``no:NAME`` with a plugin-like name: what ``-p no:NAME`` was when it disabled a plugin."""
    name = text[3:]
    return text.startswith("no:") and bool(name) and all(c.isalnum() or c in "_.-" for c in name)


def _unknown_message(flag: str) -> str:
    import difflib  # only for a mistyped flag

    close = difflib.get_close_matches(flag, known_flags(), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else " Run pi-host --help for the list of options."
    return f"Unknown option: {flag}.{hint}"


def unknown_flag_error(name: str, plugin_flags: list[str] | None = None) -> str:
    """The error for ``--name`` that neither pi-host nor any plugin defines, with the closest match."""
    import difflib  # only for a mistyped flag

    candidates = known_flags() + [f"--{flag}" for flag in plugin_flags or []]
    close = difflib.get_close_matches(f"--{name}", candidates, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]}?" if close else " Run pi-host --help for the list of options."
    return f"Unknown option: --{name}.{hint}"


_HELP = """\
pi-host - AI coding agent with read, bash, edit, write tools, built from plugins

Usage:
  pi-host [options] [@files...] [messages...]
  pi-host plugins list [--json] [-e PATH]
                                    List plugins with tier, version, status, hooks and conflicts
  pi-host plugins info <name>       Show one plugin: distribution, version, status, hooks, where
  pi-host install [-U] [-e] <package|path|git+url>
                                    Install a plugin into the environment pi-host runs in
  pi-host uninstall <name>          Uninstall a plugin (by plugin or distribution name)
  pi-host batch TASKS.jsonl --out DIR [--executor local|ray] [--concurrency N] [--redo]
                                    Run every task line as its own agent; results in DIR
  pi-host <command> ...             A command an installed plugin adds (pi-host mcp list)

Options:
  --provider <name>              Provider name
  --model <pattern>              Model pattern or ID (supports "provider/id" and optional ":<thinking>")
  --api-key <key>                API key (defaults to env vars)
  --system-prompt <text>         System prompt (default: coding assistant prompt)
  --append-system-prompt <text>  Append text or file contents to the system prompt (repeatable)
  --mode <mode>                  Output mode: text (default), json, or rpc
  --print, -p                    Non-interactive mode: process prompt and exit
  --continue, -c                 Continue previous session
  --resume, -r                   Select a session to resume
  --session <path|id>            Use specific session file or partial id
  --session-id <id>              Start a new session with this id
  --fork <path|id>               Fork specific session file or partial id into a new session
  --session-dir <dir>            Directory for session storage and lookup
  --session-store <uri>          Keep sessions in a store: sqlite:///path.db, postgresql://...
  --no-session                   Don't save session (ephemeral)
  --name, -n <name>              Name the session
  --models <patterns>            Comma-separated model patterns for model cycling
  --no-tools, -nt                Disable all tools by default (built-in and plugin)
  --no-builtin-tools, -nbt       Disable built-in tools but keep plugin tools enabled
  --tools, -t <tools>            Comma-separated allowlist of tool names to enable
  --exclude-tools, -xt <tools>   Comma-separated tool names to disable
  --thinking <level>             Set thinking level: off, minimal, low, medium, high, xhigh
  --skill <path>                 Load a skill file or directory (repeatable)
  --no-skills, -ns               Disable skills discovery and loading
  --prompt-template <path>       Load a prompt template file or directory (repeatable)
  --no-prompt-templates, -np     Disable prompt template discovery and loading
  --no-context-files, -nc        Disable AGENTS.md and CLAUDE.md discovery and loading
  --export <file> [out.html]     Export session file to HTML and exit
  --list-models [search]         List available models (with optional fuzzy search)
  --approve, -a / --no-approve, -na
                                 Trust / don't trust this project's .pi resources and plugins
  --no-plugin <name>             Run without the plugin <name> (repeatable; also -pno:<name>;
                                 "-p no:<name>" is a prompt, as in pi)
  --extension, -e <path>         Load a plugin file or folder for this run only (repeatable)
  --verbose                      Show the start-up header even when quietStartup is set
  --help, -h                     Show this help
  --version, -v                  Show version number
{plugin_flags}
Environment:
  ANTHROPIC_API_KEY, OPENAI_API_KEY, ...   Provider API keys
  PI_HOST_DIR                    Agent directory (default: ~/.pi-host)
  PI_HOST_PLUGINS                Comma-separated allow-list of plugins ("" = safe mode)
  PI_HOST_DISABLE_PLUGINS        Comma-separated plugins to disable
  PI_HOST_TRACE_HOOKS=1          Trace every hook dispatch to stderr
  PI_HOST_HOOK_TIMEOUT           Seconds one hook implementation may take (default 60, 0 = none)
  PI_HOST_FAUX_SCRIPT            JSON script for the offline faux provider

Examples:
  pi-host "List all .py files in src/"
  pi-host @prompt.md @image.png "What color is the sky?"
  pi-host -p "Summarise README.md"
  pi-host --model anthropic/claude-sonnet-4-5:high "Solve this"
  pi-host --tools read,grep,find,ls -p "Review the code in src/"
  pi-host --export session.jsonl output.html
"""


def render_help(plugin_flags: list[tuple[str, str, str]] | None = None) -> str:
    """The ``--help`` text; ``plugin_flags`` are ``(name, type, description)`` triples."""
    extra = ""
    if plugin_flags:
        lines = []
        for name, kind, description in plugin_flags:
            value = " <value>" if kind == "string" else ""
            lines.append(f"  --{name}{value}".ljust(33) + description)
        extra = "\nPlugin flags:\n" + "\n".join(lines) + "\n"
    return _HELP.format(plugin_flags=extra)
