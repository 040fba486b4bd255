"""The Docker base image has a developer's ordinary toolchain, with the network still closed: an
agent's install then fails for lack of network, not for lack of a tool (issue 18 item 5)."""

from __future__ import annotations

import pytest

from harness.sandbox.docker_backend import DockerSandbox
from tests.harness.sandbox.conftest import TEST_LIMITS, new_run_id

pytestmark = pytest.mark.slow

TOOLS = (
    "node --version && npm --version && pip --version && python3 -m venv /tmp/venv && make --version"
    " && jq --version && unzip -v"
)


def test_the_base_image_has_npm_pip_venv_make_and_common_clis() -> None:
    with DockerSandbox.create([], run_id=new_run_id("toolchain"), limits=TEST_LIMITS) as sandbox:
        tools = sandbox.exec(["bash", "-c", TOOLS], timeout=120)
        assert tools.exit_code == 0, tools.stderr_text[-2000:]
        # pip reaches for the index and fails on the network — not on PEP 668's "externally managed".
        pip = sandbox.exec(["pip", "install", "--retries", "0", "--timeout", "2", "requests"], timeout=120)
        assert pip.exit_code != 0
        assert "externally-managed-environment" not in pip.stderr_text + pip.stdout_text
        assert "requests" in pip.stderr_text + pip.stdout_text
        # npm too: it reaches for the registry and fails on the network, not for want of npm.
        npm = sandbox.exec(
            ["bash", "-c", "cd /tmp && npm install --fetch-retries=0 --fetch-timeout=2000 --no-audit left-pad"],
            timeout=120,
        )
        out = npm.stderr_text + npm.stdout_text
        assert npm.exit_code != 0, out
        assert "command not found" not in out
        assert any(code in out for code in ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ENETUNREACH")), out
