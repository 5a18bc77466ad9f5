"""Helpers for the interactive-mode tests: a scripted fake session, a pty driver, a screen model."""
