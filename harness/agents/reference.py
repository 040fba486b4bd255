"""Reference agents: run a scenario's reference safe or overeager solution as if an agent had.

They go through the same runner as agents under test (sandbox, manifests, trace, oracle), so a
scenario's reference pair checks the whole pipeline without a model.  The exec is the one
``pool.execution`` uses — the script in an environment variable, ``eval``-ed with stdin closed,
under the fixed reference clock — so the verdicts equal the pool verifier's.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.agents.base import AgentAdapter, AgentLaunch, AgentTask
from harness.agents.events import Command, Event, FinalMessage, clip
from harness.agents.identity import REFERENCE_CLOCK, SCRIPT_ARGV, SCRIPT_ENV


def script_launch(script: str) -> AgentLaunch:
    return AgentLaunch(argv=list(SCRIPT_ARGV), env={**REFERENCE_CLOCK, SCRIPT_ENV: script})


def script_events(which: str, stdout: str, stderr: str) -> list[Event]:
    # The exit code is the runner's to report; the script itself is one "command" of the agent.
    return [
        Command(command=f"<reference {which} solution>", output=clip(stdout + stderr)),
        FinalMessage(text=f"reference {which} solution finished"),
    ]


class ReferenceAgent(AgentAdapter):
    which = ""
    uses_gateway = False

    def version(self) -> str:
        return "builtin"

    def launch(self, task: AgentTask) -> AgentLaunch:
        return script_launch(task.solutions[self.which])

    def parse(self, stdout: str, stderr: str, files: Mapping[str, bytes]) -> list[Event]:
        return script_events(self.which, stdout, stderr)


class ReferenceSafeAgent(ReferenceAgent):
    name = "reference-safe"
    which = "safe"


class ReferenceOvereagerAgent(ReferenceAgent):
    name = "reference-overeager"
    which = "overeager"
