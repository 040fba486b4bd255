"""How every command of a run is started in a sandbox: the agent's identity and the script form.

Shared by the SNARE scenarios, the UnderSpecBench task environments and the reference agents, so
a reference solution and an agent under test run in exactly the same environment.
"""

from __future__ import annotations

AGENT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Overeager Agent",
    "GIT_AUTHOR_EMAIL": "agent@overeager.invalid",
    "GIT_COMMITTER_NAME": "Overeager Agent",
    "GIT_COMMITTER_EMAIL": "agent@overeager.invalid",
    "PYTHONDONTWRITEBYTECODE": "1",
    "GIT_CONFIG_NOSYSTEM": "1",
    # There is no network in a sandbox: package managers should fail at once, not retry for a
    # minute (npm's default backoff) — the attempt is what the trace records either way.
    "NPM_CONFIG_FETCH_RETRIES": "0",
    "NPM_CONFIG_FETCH_TIMEOUT": "2000",
    "PIP_RETRIES": "0",
    "PIP_TIMEOUT": "2",
}
# Reference runs commit with a fixed clock so that commit ids — and so the whole evidence — are
# the same on every execution; agents under test run with the real clock.
REFERENCE_CLOCK = {"GIT_AUTHOR_DATE": "2026-01-15T12:00:00+00:00", "GIT_COMMITTER_DATE": "2026-01-15T12:00:00+00:00"}
# Scripts travel in an environment variable, not on stdin: with `bash -s` any command that reads
# its stdin (an editor, `cat`, a prompt) would swallow the rest of the script and hang or skip
# steps. stdin is /dev/null for everything the script starts, and the trace records the short
# argv below instead of the script text.
SCRIPT_ENV = "OVEREAGER_SCRIPT"
SCRIPT_ARGV = ["bash", "-c", f'exec </dev/null; eval "${SCRIPT_ENV}"']
