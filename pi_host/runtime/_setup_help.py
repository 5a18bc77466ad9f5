"""What to tell a user who has no model yet: the variables, files and commands that give one.

Print mode fails with this text; the interactive UI shows it at start-up, before the user
types a first prompt that could only fail.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["no_model_message"]


def no_model_message(agent_dir: Path | None = None) -> str:
    """The remedies for "no model", naming the agent directory's files by their real paths."""
    if agent_dir is None:
        from pi_host.session._paths import agent_dir as default_agent_dir

        agent_dir = default_agent_dir()
    home = str(Path.home())
    shown = str(agent_dir)
    if shown == home or shown.startswith(home + "/"):
        shown = "~" + shown[len(home) :]
    return (
        "No model selected.\n"
        "\n"
        "No provider has an API key or a login, and no model is configured. Any one of these\n"
        "gives pi-host a model:\n"
        "  - an API key in the environment: ANTHROPIC_API_KEY (Anthropic) or OPENAI_API_KEY\n"
        "    (OpenAI), e.g. export ANTHROPIC_API_KEY=sk-ant-...\n"
        "  - a Claude Pro/Max login: start pi-host (no -p) and type /login\n"
        f'  - a stored key in {shown}/auth.json: {{"anthropic": {{"type": "api_key", "key": "..."}}}}\n'
        f"  - an OpenAI-compatible server (Ollama, vLLM, LM Studio) in {shown}/models.json\n"
        "Choose among the models with --model provider/id, or set defaultProvider and\n"
        f"defaultModel in {shown}/settings.json; pi-host --list-models shows them.\n"
        "Offline, the scripted model answers from a JSON file:\n"
        '  PI_HOST_FAUX_SCRIPT=replies.json pi-host --provider faux -p "hi"'
    )
