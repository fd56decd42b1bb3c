"""End-to-end tests against the real Claude Code and Codex CLIs (see rig.py).

A package so that pytest imports tests/e2e/conftest.py as ``e2e.conftest`` and
leaves the top-level ``conftest`` module (tests/conftest.py) alone.
"""
