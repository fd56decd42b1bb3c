"""pytest fixtures for the end-to-end tests against the real clients.

``e2e(client, script=None)`` (function-scoped factory) builds a fresh
:class:`rig.E2EEnv`: a git project (one commit) under tmp_path, its own HOME and
CODEX_HOME, and a started fake model server for ``client`` ("claude" or "codex")
playing ``script``.  Every server is stopped when the test ends, pass or fail;
the client runs are reaped by rig.run_process itself.
"""

import sys
from pathlib import Path

import pytest

# the rig's modules are imported by their plain names (rig, fake_anthropic, ...);
# appended, not prepended, so that nothing here shadows a module of tests/
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)

import rig  # noqa: E402

CLIENTS = ("claude", "codex")
_BIN = {"claude": "claude", "codex": "codex"}


@pytest.fixture
def e2e(tmp_path, request):
    made = []

    def factory(client, script=None, name=None):
        rig.require_binary(_BIN[client])
        root = tmp_path / (name or "%s-%d" % (client, len(made)))
        env = rig.E2EEnv(client, root, script)
        made.append(env)
        return env

    yield factory
    for env in made:
        env.close()


@pytest.fixture(params=CLIENTS)
def client(request):
    """Parametrises a test over both clients."""
    return request.param
