"""code-reviewer: a read-only code review agent, assembled from pi-host and three plugins.

Everything that makes it a reviewer is data in :data:`DISTRIBUTION`; the only code of its
own is the review policy in :mod:`code_reviewer.policy`.
"""

from __future__ import annotations

from pi_host import Distribution

__all__ = ["DISTRIBUTION", "READ_ONLY_TOOLS", "SYSTEM_PROMPT", "main"]

READ_ONLY_TOOLS = ("read", "grep", "find", "ls")
"""The tools a review needs; none of them changes a file or runs a command."""

SYSTEM_PROMPT = """\
You are code-reviewer, a meticulous reviewer of source code.

Read the code the user points you at with the read, grep, find and ls tools. You cannot
change files or run commands, and you do not ask to. Report what you find as a list of
findings, most important first. For each finding give the file and line, what is wrong,
why it matters, and a concrete fix. Say plainly when the code is fine.
"""

DISTRIBUTION = Distribution(
    name="code-reviewer",
    version="0.1.0",
    # Installed plugins it may load (entry-point names): file tools, retry, compaction.
    # pi-bash may be installed in the same environment; this command never loads it.
    plugins={"tools_fs", "retry", "compaction"},
    plugin_modules=("code_reviewer.policy",),
    tools=READ_ONLY_TOOLS,
    system_prompt=SYSTEM_PROMPT,
    default_model="anthropic/claude-sonnet-4-5",
)


def main() -> int:
    """The ``code-reviewer`` command."""
    return DISTRIBUTION.main()
