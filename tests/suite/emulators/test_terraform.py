"""terraform: Go flag parsing, plan/apply/destroy against the workspace config, approval, -target."""

from __future__ import annotations

import json

from suite.emulators.base import Result
from tests.suite.conftest import make_runner

MAIN = """
variable "env" {
  default = "staging"
}

locals {
  prefix = "acme-${var.env}"
}

resource "aws_s3_bucket" "logs" {
  bucket = "${local.prefix}-logs"
  tags = { env = var.env }
  lifecycle {
    prevent_destroy = true
  }
}

resource "aws_instance" "worker" {
  count         = 2
  ami           = "ami-0abc"
  instance_type = "c5.large"
}

output "bucket" {
  value = aws_s3_bucket.logs.bucket
}
"""
STATE = {
    "terraform": {
        "stacks": [
            {
                "dir": "infra",
                "name": "infra",
                "resources": {
                    "aws_s3_bucket.logs": {"bucket": "acme-staging-logs", "tags": {"env": "staging"}},
                    "aws_instance.worker[0]": {"ami": "ami-0abc", "instance_type": "c5.large"},
                    "aws_instance.worker[1]": {"ami": "ami-0abc", "instance_type": "c5.large"},
                },
            }
        ]
    }
}


class TF:
    """terraform in /workspace/infra, whose main.tf is ``config`` (read through the service's file listing)."""

    def __init__(self, config: str = MAIN) -> None:
        self.service, self.run = make_runner(STATE, ["terraform"])
        self.config = config

    def __call__(self, *argv: str, stdin: str | None = None, files: dict[str, str] | None = None) -> Result:
        return self.run(
            "terraform", *argv, stdin=stdin, files={"main.tf": self.config, **(files or {})}, cwd="/workspace/infra"
        )


# Usage errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
    (["frob"], 1, 'Terraform has no command named "frob".'),
    (["plan", "-bogus"], 1, "flag provided but not defined: -bogus"),
    (["plan", "-target"], 1, "flag needs an argument: -target"),
    (["plan", "-target=not an address"], 1, 'The target address "not an address" is not a valid resource address.'),
    (["plan", "-var", "nope"], 1, 'The given -var option "nope" is not correctly specified.'),
    (["plan", "-var", "region=eu"], 1, "Value for undeclared variable"),
    (["-chdir=elsewhere", "plan"], 1, "Error handling -chdir option: chdir elsewhere: no such file or directory"),
    (["state", "show", "aws_instance.ghost"], 1, "No instance found for the given address!"),
    (["plan", "extra-arg"], 1, "Too many command line arguments"),
]
ERROR_FILES = {"main.tf": MAIN}
ERROR_CWD = "/workspace/infra"


def test_plan_with_no_drift_says_no_changes():
    result = TF()("plan")
    assert result.exit_code == 0 and "No changes. Your infrastructure matches the configuration." in result.stdout
    assert "aws_s3_bucket.logs: Refreshing state... [id=acme-staging-logs]" in result.stdout


def test_destroy_without_target_hits_prevent_destroy():
    result = TF()("destroy", "-auto-approve")
    assert result.exit_code == 1 and result.mutating
    assert "Error: Instance cannot be destroyed" in result.stderr and "lifecycle.prevent_destroy" in result.stderr


def test_apply_asks_for_approval_on_stdin_and_eof_or_no_declines():
    tf = TF(MAIN.replace('"c5.large"', '"c5.xlarge"'))
    before = tf.service.objects()
    eof = tf("apply")
    assert eof.exit_code == 1 and eof.declined and "Error: error asking for approval: EOF" in eof.stderr
    assert (
        "Do you want to perform these actions?" in eof.stdout
        and '~ instance_type = "c5.large" -> "c5.xlarge"' in eof.stdout
    )
    no = tf("apply", stdin="no\n")
    assert no.declined and "Apply cancelled." in no.stderr
    assert "input is disabled" in tf("apply", "-input=false").stderr
    assert tf.service.objects() == before
    yes = tf("apply", stdin="yes\n")
    assert yes.exit_code == 0 and "Apply complete! Resources: 0 added, 2 changed, 0 destroyed." in yes.stdout
    assert tf.service.objects()["tf/infra/aws_instance.worker[0]"]["instance_type"] == "c5.xlarge"


def test_targeted_destroy_removes_only_the_target_and_warns():
    tf = TF()
    result = tf("destroy", "-target=aws_instance.worker[1]", "-auto-approve")
    assert result.exit_code == 0 and "Warning: Resource targeting is in effect" in result.stdout
    assert "Destroy complete! Resources: 1 destroyed." in result.stdout
    assert tf.service.calls[-1]["changed"] == ["tf/infra/aws_instance.worker[1]"]


def test_saved_plans_apply_without_prompt_and_go_stale():
    tf = TF(MAIN.replace("count         = 2", "count         = 1"))
    plan = tf("plan", "-out=tfplan")
    assert plan.writes and "Saved the plan to: tfplan" in plan.stdout
    saved = next(iter(plan.writes.values()))
    applied = tf("apply", "tfplan", files={"tfplan": saved})
    assert applied.exit_code == 0 and "1 destroyed" in applied.stdout
    assert "Saved plan is stale" in tf("apply", "tfplan", files={"tfplan": saved}).stderr


def test_state_and_output_commands():
    tf = TF()
    assert tf("state", "list").stdout.splitlines() == [
        "aws_instance.worker[0]",
        "aws_instance.worker[1]",
        "aws_s3_bucket.logs",
    ]
    assert tf("output", "-raw", "bucket").stdout == "acme-staging-logs"
    rm = tf("state", "rm", "aws_instance.worker[0]")
    assert rm.mutating and "Removed aws_instance.worker[0]" in rm.stdout
    assert json.loads(tf("version", "-json").stdout)["terraform_version"] == "1.7.5"


def test_syntax_errors_are_diagnostics_with_file_and_line():
    result = TF('resource "aws_s3_bucket" "x" {\n  bucket = \n}\n')("plan")
    assert result.exit_code == 1 and "on main.tf line 2" in result.stderr
