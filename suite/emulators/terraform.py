"""``terraform`` (v1.7) over emulated remote state (state section ``terraform``).

The configuration is the real ``*.tf`` / ``*.tfvars`` files in the workspace (read through the
shim, so an agent's edits count); the *state* — what exists in the world — lives on the harness
side. ``plan`` diffs the evaluated configuration against the state (create, update in place,
replace for ForceNew attributes, destroy), honouring ``-target``, ``-destroy``, ``-replace``,
``-var``/``-var-file``, ``lifecycle { prevent_destroy = true }`` and a held state lock.
``apply``/``destroy`` print the plan and ask ``Do you want to perform these actions?`` on stdin
unless ``-auto-approve`` is given (EOF: ``Error: error asking for approval: EOF``; any answer but
``yes``: ``Apply cancelled.``); a saved plan (``plan -out=FILE``) applies without a prompt and
is refused when the state moved on since (``Saved plan is stale``).

Authored state::

    terraform:
      stacks:
        - dir: infra/prod            # workspace-relative root module directory
          name: prod                 # id segment (default: dir)
          resources:                 # address -> attributes as they exist
            aws_s3_bucket.logs: {bucket: acme-prod-logs, id: acme-prod-logs}
          lock: {id: 7d3e..., who: "jenkins@ci-07", created: "2026-03-02T08:55:00Z"}   # optional

Object ids: ``tf/<stack>/<address>`` (``tf/prod/aws_s3_bucket.logs``); the value is the attributes.
"""

from __future__ import annotations

import copy
import functools
import json
import posixpath
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from suite.emulators import hcl
from suite.emulators.base import (
    NO_TERMINAL,
    NO_WAIT,
    ArgError,
    Call,
    Ctx,
    Opt,
    Result,
    ToolExit,
    TrackedValues,
    opt,
    parse_go,
    short_hash,
)
from suite.emulators.documents import load_json

SECTION = "terraform"
VERSION = "1.7.5"
WORKSPACE = "/workspace"
FORCE_NEW = {
    "aws_s3_bucket": ("bucket",),
    "aws_instance": ("ami", "availability_zone", "subnet_id"),
    "aws_db_instance": ("identifier", "engine"),
    "aws_dynamodb_table": ("name", "hash_key"),
    "aws_route53_zone": ("name",),
    "aws_route53_record": ("name", "type", "zone_id"),
    "aws_iam_user": (),
    "aws_security_group": ("name", "vpc_id"),
    "aws_autoscaling_group": ("name",),
    "google_storage_bucket": ("name", "location"),
    "google_compute_instance": ("name", "zone"),
}
ID_ATTR = {
    "aws_s3_bucket": "bucket",
    "aws_iam_user": "name",
    "aws_iam_role": "name",
    "google_storage_bucket": "name",
    "aws_db_instance": "identifier",
}


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    for stack in section.setdefault("stacks", []):
        stack["dir"] = stack["dir"].strip("/")
        stack.setdefault("name", stack["dir"])
        stack.setdefault("workspace", "default")
        stack.setdefault("serial", 1)
        stack.setdefault("initialized", True)
        for addr, attrs in stack.setdefault("resources", {}).items():
            attrs.setdefault("id", _default_id(addr, attrs))
    return section


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["terraform: expected a mapping"]
    problems = [f"terraform.{k}: unknown key (stacks)" for k in section if k != "stacks"]
    names: set[str] = set()
    for i, stack in enumerate(section.get("stacks") or []):
        where = f"terraform.stacks[{i}]"
        if not isinstance(stack, dict) or not isinstance(stack.get("dir"), str):
            problems.append(f"{where}: a stack needs dir (its workspace-relative directory)")
            continue
        if stack["dir"].startswith("/") or ".." in stack["dir"].split("/"):
            problems.append(f"{where}.dir: must be relative to the workspace and stay inside it")
        name = str(stack.get("name", stack["dir"]))
        if name in names:
            problems.append(f"{where}.name: {name!r} is used twice")
        names.add(name)
        for addr in stack.get("resources") or {}:
            if not re.match(r"^(data\.)?[a-z][a-z0-9_]*\.[A-Za-z_][A-Za-z0-9_-]*(\[(\d+|\"[^\"]+\")\])?$", addr):
                problems.append(f"{where}.resources: {addr!r} is not a resource address like aws_s3_bucket.logs")
    return problems


def _default_id(addr: str, attrs: dict[str, Any]) -> str:
    rtype = addr.split(".")[0]
    key = ID_ATTR.get(rtype)
    if key and isinstance(attrs.get(key), str):
        return str(attrs[key])
    if rtype == "aws_instance":
        return "i-0" + short_hash(addr, attrs.get("ami"), length=16)
    if isinstance(attrs.get("name"), str):
        return str(attrs["name"])
    return short_hash(addr, length=20, alphabet="abcdefghijklmnopqrstuvwxyz0123456789")


def objects(section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stack in section.get("stacks", []):
        for addr, attrs in stack.get("resources", {}).items():
            if addr.startswith("data."):
                continue
            out[f"tf/{stack['name']}/{addr}"] = attrs
    return out


# ---------------------------------------------------------------------------------------------
# Diagnostics and rendering


# The provider versions the emulated registry offers: the last release of each major line an agent
# meets in these families (hashicorp/aws 3.x ended at 3.76.1). init picks from here for a provider
# the lock file does not hold yet.
REGISTRY = {
    "registry.terraform.io/hashicorp/aws": ("3.76.1", "4.67.0", "5.31.0"),
    "registry.terraform.io/hashicorp/random": ("3.5.1", "3.6.0"),
}
LOCK_FILE = ".terraform.lock.hcl"


def _version(text: str) -> tuple[int, ...]:
    parts = text.strip().lstrip("v").split("-", 1)[0].split(".")
    return tuple(int(p) for p in parts if p.isdigit())


def satisfies(version: str, constraints: str) -> bool:
    """Whether ``version`` meets a provider version constraint string (Terraform's syntax: a
    comma-separated list of ``=``, ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``~>``; ``~> 3`` admits
    3.x, ``~> 3.5`` admits 3.5 and up within 3, ``~> 3.5.1`` admits 3.5.x from 3.5.1)."""
    have = _version(version)
    for raw in (c.strip() for c in constraints.split(",") if c.strip()):
        m = re.fullmatch(r"(~>|>=|<=|!=|=|>|<)?\s*v?(\d+(?:\.\d+){0,2})", raw)
        if m is None:
            raise ValueError(f"invalid version constraint {raw!r}")
        op, want_text = m.group(1) or "=", m.group(2)
        want = _version(want_text)
        full = want + (0,) * (3 - len(want))
        pad = have + (0,) * (3 - len(have))
        if op == "~>":
            upper = (want[0] + 1, 0, 0) if len(want) <= 2 else (want[0], want[1] + 1, 0)
            ok = full <= pad < upper
        else:
            ok = {
                "=": pad == full,
                "!=": pad != full,
                ">": pad > full,
                ">=": pad >= full,
                "<": pad < full,
                "<=": pad <= full,
            }[op]
        if not ok:
            return False
    return True


def lock_constraints(constraints: str) -> str:
    """A constraint as the lock file records it: each version written out to three parts, except
    after ``~>``, whose precision is its meaning (``>= 3.0`` → ``>= 3.0.0``; ``~> 3.76`` stays)."""
    out = []
    for raw in (c.strip() for c in constraints.split(",") if c.strip()):
        m = re.fullmatch(r"(~>|>=|<=|!=|=|>|<)?\s*v?(\d+(?:\.\d+){0,2})", raw)
        if m is None:
            out.append(raw)
            continue
        op, version = m.group(1) or "", m.group(2)
        if op != "~>":
            version = ".".join([*version.split("."), "0", "0"][:3])
        out.append(f"{op} {version}".strip())
    return ", ".join(out)


def _address(source: str) -> str:
    return source if source.count("/") >= 2 else f"registry.terraform.io/{source}"


def _short(address: str) -> str:
    return address.removeprefix("registry.terraform.io/")


def _diag(kind: str, summary: str, detail: str = "", where: str = "") -> str:
    lines = ["╷", f"│ {kind}: {summary}", "│ "]
    if where:
        lines += [f"│   {w}".rstrip() for w in where.splitlines()] + ["│ "]
    for line in detail.splitlines() or [""]:
        lines.append(f"│ {line}".rstrip() if line else "│ ")
    lines.append("╵")
    return "\n".join(lines) + "\n"


def _render(v: Any) -> str:
    if v is hcl.UNKNOWN:
        return "(known after apply)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v)


def _attr_lines(old: dict[str, Any] | None, new: dict[str, Any] | None, action: str, indent: int) -> list[str]:
    pad = " " * indent
    keys = sorted(set(old or {}) | set(new or {}))
    width = max((len(k) for k in keys), default=0)
    lines: list[str] = []
    hidden = 0
    for k in keys:
        a = (old or {}).get(k, None) if old is not None else None
        b = (new or {}).get(k, None) if new is not None else None
        name = k.ljust(width)
        if action == "create":
            if isinstance(b, dict) and b:
                lines.append(f"{pad}+ {name} = {{")
                lines += _attr_lines(None, b, "create", indent + 4)
                lines.append(f"{pad}  }}")
            else:
                lines.append(f"{pad}+ {name} = {_render(b)}")
        elif action == "delete":
            if isinstance(a, dict) and a:
                lines.append(f"{pad}- {name} = {{")
                lines += _attr_lines(a, None, "delete", indent + 4)
                lines.append(f"{pad}  }} -> null")
            else:
                lines.append(f"{pad}- {name} = {_render(a)} -> null")
        else:
            if k not in (new or {}):
                hidden += 1
                continue
            if a == b or (b is hcl.UNKNOWN and k in (old or {})):
                if k == "id" or k in ("bucket", "name"):
                    lines.append(f"{pad}  {name} = {_render(a)}")
                else:
                    hidden += 1
                continue
            if isinstance(a, dict) and isinstance(b, dict):
                lines.append(f"{pad}~ {name} = {{")
                for sub in sorted(set(a) | set(b)):
                    if a.get(sub) != b.get(sub):
                        if sub not in b:
                            lines.append(f"{pad}    - {json.dumps(sub)} = {_render(a[sub])} -> null")
                        elif sub not in a:
                            lines.append(f"{pad}    + {json.dumps(sub)} = {_render(b[sub])}")
                        else:
                            lines.append(f"{pad}    ~ {json.dumps(sub)} = {_render(a[sub])} -> {_render(b[sub])}")
                lines.append(f"{pad}  }}")
            elif k not in (old or {}):
                lines.append(f"{pad}+ {name} = {_render(b)}")
            else:
                lines.append(f"{pad}~ {name} = {_render(a)} -> {_render(b)}")
    if hidden:
        lines.append(f"{pad}  # ({hidden} unchanged attribute{'s' if hidden != 1 else ''} hidden)")
    return lines


# ---------------------------------------------------------------------------------------------
# Configuration


class Config:
    """The evaluated root module: resource instances (address -> attributes), lifecycles, outputs."""

    def __init__(self) -> None:
        self.resources: dict[str, dict[str, Any]] = {}
        self.prevent_destroy: set[str] = set()
        self.lines: dict[str, tuple[str, int]] = {}
        self.outputs: dict[str, tuple[Any, bool]] = {}
        self.variables: dict[str, Any] = {}


class _TF:
    def __init__(self, ctx: Ctx, cmd: str, argv: list[str], chdir: str | None) -> None:
        self.ctx = ctx
        self.cmd = cmd
        self.argv = argv
        self.s: dict[str, Any] = ctx.state[SECTION]
        cwd = ctx.call.abspath(chdir) if chdir else ctx.call.cwd
        self.dir = cwd
        self.rel = posixpath.relpath(cwd, WORKSPACE) if cwd.startswith(WORKSPACE) else cwd
        self.rel = "" if self.rel == "." else self.rel
        self.chdir = chdir
        self.stack = next((s for s in self.s["stacks"] if s["dir"] == self.rel), None)
        self.now = ctx.call.now

    # -- files ----------------------------------------------------------------------------

    def tf_files(self) -> dict[str, str]:
        entries = self.ctx.call.listdir(self.chdir or ".")
        if entries is None:
            raise self.ctx.fail(
                1, _diag("Error", "Failed to read directory", f"open {self.dir}: no such file or directory")
            )
        names = sorted(
            e.name
            for e in entries
            if e.type == "file"
            and (e.name.endswith(".tf") or e.name.endswith(".tfvars") or e.name.endswith(".tf.json"))
        )
        base = self.chdir or "."
        datas = self.ctx.call.files_of([posixpath.join(base, n) for n in names])
        return {n: d.content or "" for n, d in zip(names, datas, strict=True) if d.content is not None}

    def provider_requirements(self, files: dict[str, str]) -> dict[str, str]:
        """Each provider the configuration needs, by registry address, with its version constraint
        ("" for none): required_providers entries, then provider blocks without one (hashicorp/NAME)."""
        required: dict[str, str] = {}
        named: set[str] = set()

        def no_refs(name: str, line: int) -> Any:
            raise hcl.HCLError("Variables not allowed", "Variables may not be used here.")

        for fname, text in sorted(files.items()):
            if not fname.endswith(".tf"):
                continue
            try:
                body = hcl.parse(text, fname)
            except hcl.HCLError:
                continue  # reported by the command that loads the configuration
            for block in body.blocks:
                if block.type == "provider" and block.labels:
                    named.add(block.labels[0])
                if block.type != "terraform":
                    continue
                for inner in block.body.blocks:
                    if inner.type != "required_providers":
                        continue
                    for local, (expr, _) in inner.body.attributes.items():
                        try:
                            spec = hcl.evaluate(expr, no_refs, fname)
                        except hcl.HCLError:
                            continue
                        source = str(spec.get("source", f"hashicorp/{local}")) if isinstance(spec, dict) else local
                        version = str(spec.get("version", "")) if isinstance(spec, dict) else str(spec)
                        required[_address(source)] = version
                        named.discard(local)
        for local in named:
            required.setdefault(_address(f"hashicorp/{local}"), "")
        return dict(sorted(required.items()))

    def locked_providers(self) -> dict[str, dict[str, str]]:
        """The dependency lock file's provider selections: address -> {version, constraints}."""
        data = self.ctx.call.file(posixpath.join(self.chdir or ".", LOCK_FILE))
        if data.error or data.content is None:
            return {}
        try:
            body = hcl.parse(data.content, LOCK_FILE)
        except hcl.HCLError:
            return {}
        out: dict[str, dict[str, str]] = {}
        for block in body.blocks:
            if block.type == "provider" and block.labels:
                attrs = {k: v[0] for k, v in block.body.attributes.items()}
                out[block.labels[0]] = {
                    k: str(hcl.evaluate(attrs[k], lambda n, ln: None, LOCK_FILE))
                    for k in ("version", "constraints")
                    if k in attrs
                }
        return out

    def ensure_stack(self) -> dict[str, Any]:
        if self.stack is None:
            self.stack = {
                "dir": self.rel,
                "name": self.rel or "workspace",
                "workspace": "default",
                "serial": 0,
                "initialized": False,
                "resources": {},
            }
        return self.stack

    def check_init(self) -> None:
        st = self.stack
        if st is None or not st.get("initialized"):
            raise self.ctx.fail(
                1,
                _diag(
                    "Error",
                    'Backend initialization required, please run "terraform init"',
                    'Reason: Initial configuration of the requested backend "s3"\n\nThe "backend" is the interface that Terraform uses to store state,\nperform operations, etc. If this message is showing up, it means that the\nTerraform configuration you\'re using is using a custom configuration for\nthe Terraform backend.\n\nChanges to backend configurations require reinitialization. This allows\nTerraform to set up the new configuration, copy existing state, etc. Please run\n"terraform init" with either the "-reconfigure" or "-migrate-state" flags to\nuse the current configuration.\n\nIf the change reason above is incorrect, please verify your configuration\nhasn\'t changed and try again. At this point, no changes to your existing\nconfiguration or state have been applied.',
                ),
            )

    def check_lock(self, values: dict[str, Any]) -> None:
        st = self.stack
        lock = (st or {}).get("lock")
        if lock and values.get("lock", True):
            self.ctx.err(
                _diag(
                    "Error",
                    "Error acquiring the state lock",
                    f'Error message: ConditionalCheckFailedException: The conditional request failed\nLock Info:\n  ID:        {lock.get("id", "")}\n  Path:      acme-terraform-state/{st["name"] if st else ""}/terraform.tfstate\n  Operation: OperationTypeApply\n  Who:       {lock.get("who", "")}\n  Version:   {VERSION}\n  Created:   {lock.get("created", "")}\n  Info:      \n\n\nTerraform acquires a state lock to protect the state from being written\nby multiple users at the same time. Please resolve the issue above and try\nagain. For most commands, you can disable locking with the "-lock=false"\nflag, but this is not recommended.',
                ),
                end="",
            )
            raise ToolExit(1)

    def load(self, values: dict[str, Any]) -> Config:
        files = self.tf_files()
        tf = {n: t for n, t in files.items() if n.endswith(".tf")}
        if not tf:
            raise self.ctx.fail(
                1,
                _diag(
                    "Error",
                    "No configuration files",
                    "Plan requires configuration to be present. Planning without a configuration would\nmark everything for destruction, which is normally not what is desired. If you\nwould like to destroy everything, run plan with the -destroy option. Otherwise,\ncreate a Terraform configuration file (.tf file) and try again.",
                ),
            )
        bodies: list[tuple[str, hcl.Body]] = []
        for name, text in sorted(tf.items()):
            try:
                bodies.append((name, hcl.parse(text, name)))
            except hcl.HCLError as exc:
                raise self.ctx.fail(
                    1, _diag("Error", exc.summary, exc.detail, f"on {exc.filename} line {exc.line}:")
                ) from None
        cfg = Config()
        var_blocks: dict[str, hcl.Block] = {}
        locals_: dict[str, tuple[Any, str]] = {}
        resources: list[hcl.Block] = []
        for name, body in bodies:
            if body.attributes:
                attr, (_, line) = next(iter(body.attributes.items()))
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Unsupported argument",
                        f'An argument named "{attr}" is not expected here.',
                        f"on {name} line {line}:",
                    ),
                )
            for b in body.blocks:
                if b.type == "variable":
                    var_blocks[b.labels[0]] = b
                elif b.type == "locals":
                    for k, (expr, _) in b.body.attributes.items():
                        locals_[k] = (expr, name)
                elif b.type in ("resource", "data"):
                    if len(b.labels) != 2:
                        raise self.ctx.fail(
                            1,
                            _diag(
                                "Error",
                                "Missing name for resource",
                                f"All {b.type} blocks must have 2 labels (type, name).",
                                f"on {name} line {b.line}:",
                            ),
                        )
                    resources.append(b)
                elif b.type == "output":
                    expr = b.body.attributes.get("value")
                    if expr is None:
                        raise self.ctx.fail(
                            1,
                            _diag(
                                "Error",
                                "Missing required argument",
                                'The argument "value" is required, but no definition was found.',
                                f"on {name} line {b.line}:",
                            ),
                        )
                    sensitive = b.body.attributes.get("sensitive")
                    cfg.outputs[b.labels[0]] = (expr[0], bool(sensitive and sensitive[0] == ("lit", True)))
                elif b.type == "module":
                    raise self.ctx.fail(
                        1,
                        _diag(
                            "Error",
                            "Module not installed",
                            'This module is not yet installed. Run "terraform init" to install all modules\nrequired by this configuration.',
                            f"on {name} line {b.line}:",
                        ),
                    )
                elif b.type in ("terraform", "provider", "moved", "import", "check", "removed"):
                    continue
                else:
                    raise self.ctx.fail(
                        1,
                        _diag(
                            "Error",
                            "Unsupported block type",
                            f'Blocks of type "{b.type}" are not expected here.',
                            f"on {name} line {b.line}:",
                        ),
                    )
        # Variables: defaults < terraform.tfvars < *.auto.tfvars < -var-file < -var (Terraform's order).
        assigned: dict[str, Any] = {}
        tfvars = [n for n in sorted(files) if n == "terraform.tfvars"] + [
            n for n in sorted(files) if n.endswith(".auto.tfvars")
        ]
        for n in tfvars:
            assigned.update(self._tfvars(files[n], n))
        for vf in values.get("var_file") or []:
            data = self.ctx.call.file(posixpath.join(self.chdir or ".", vf) if not vf.startswith("/") else vf)
            if data.error:
                raise self.ctx.fail(
                    1, _diag("Error", "Failed to read variables file", f"Given variables file {vf} does not exist.")
                )
            assigned.update(self._tfvars(data.content or "", vf))
        for env_key, env_val in self.ctx.call.env.items():
            if env_key.startswith("TF_VAR_"):
                assigned.setdefault(env_key[7:], env_val)
        for item in values.get("var") or []:
            k, eq, v = item.partition("=")
            if not eq:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Invalid -var option",
                        f'The given -var option "{item}" is not correctly specified. Must be a variable name\nand value separated by an equals sign, like -var="key=value".',
                    ),
                )
            assigned[k] = v
        for k in assigned:
            if k not in var_blocks:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Value for undeclared variable",
                        f'A variable named "{k}" was assigned on the command line, but the root module\ndoes not declare a variable of that name. To use this value, add a "variable"\nblock to the configuration.',
                    ),
                )
        missing = []
        for k, b in var_blocks.items():
            if k in assigned:
                cfg.variables[k] = assigned[k]
            elif "default" in b.body.attributes:
                cfg.variables[k] = hcl.evaluate(
                    b.body.attributes["default"][0], lambda n, line: hcl.UNKNOWN, b.filename
                )
            else:
                missing.append(k)
        if missing:
            if values.get("input", True) and self.cmd in ("plan", "apply", "destroy"):
                answers = self.ctx.call.read_stdin().splitlines()
                for i, k in enumerate(missing):
                    self.ctx.out(f"var.{k}\n  Enter a value: ", end="")
                    if i >= len(answers):
                        raise self.ctx.fail(
                            1,
                            "\n"
                            + _diag(
                                "Error",
                                "No value for required variable",
                                f'The root module input variable "{k}" is not set, and has no default value.\nUse a -var or -var-file command line argument to provide a value for this\nvariable.',
                            ),
                        )
                    cfg.variables[k] = answers[i]
                    self.ctx.out("")
            else:
                k = missing[0]
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "No value for required variable",
                        f'The root module input variable "{k}" is not set, and has no default value.\nUse a -var or -var-file command line argument to provide a value for this\nvariable.',
                        f"on {var_blocks[k].filename} line {var_blocks[k].line}:",
                    ),
                )
        state_res = (self.stack or {}).get("resources", {})
        local_cache: dict[str, Any] = {}

        def resolve(name: str, line: int, scope: dict[str, Any] | None = None) -> Any:
            scope = scope or {}
            if name == "var":
                return _VarView(cfg.variables)
            if name == "local":
                return _LocalsView(
                    locals_, local_cache, lambda expr, fn: hcl.evaluate(expr, lambda n, ln: resolve(n, ln), fn)
                )
            if name in scope:
                return scope[name]
            if name == "data":
                return _DataView(state_res)
            if name in ("path", "terraform"):
                return {
                    "module": ".",
                    "root": ".",
                    "cwd": self.dir,
                    "workspace": (self.stack or {}).get("workspace", "default"),
                }
            instances: dict[str, dict[Any, Any]] = {}
            counted = False
            prefix = f"{name}."
            for addr, attrs in state_res.items():
                if not addr.startswith(prefix):
                    continue
                m = re.match(r"^([^.\[]+)\.([^\[]+)(?:\[(\d+|\"[^\"]+\")\])?$", addr)
                if not m:
                    continue
                key = m.group(3)
                if key is not None:
                    counted = True
                    key = int(key) if key.isdigit() else json.loads(key)
                instances.setdefault(m.group(2), {})[key] = attrs
            return _TypeView(name, instances, counted, line)

        for b in resources:
            rtype, rname = b.labels
            if b.type == "data":
                continue
            base = f"{rtype}.{rname}"
            attrs_src = b.body.attributes
            count_expr = attrs_src.get("count")
            each_expr = attrs_src.get("for_each")
            keys: list[Any] = [None]
            if count_expr is not None:
                n = hcl.evaluate(count_expr[0], lambda nm, ln: resolve(nm, ln), b.filename)
                if n is hcl.UNKNOWN or not isinstance(n, (int, float)):
                    raise self.ctx.fail(
                        1,
                        _diag(
                            "Error",
                            "Invalid count argument",
                            'The "count" value depends on resource attributes that cannot be determined\nuntil apply.',
                            f"on {b.filename} line {count_expr[1]}:",
                        ),
                    )
                keys = list(range(int(n)))
            elif each_expr is not None:
                coll = hcl.evaluate(each_expr[0], lambda nm, ln: resolve(nm, ln), b.filename)
                if isinstance(coll, dict):
                    keys = sorted(coll)
                    each_values = coll
                elif isinstance(coll, list):
                    keys = sorted(str(x) for x in coll)
                    each_values = {k: k for k in keys}
                else:
                    raise self.ctx.fail(
                        1,
                        _diag(
                            "Error",
                            "Invalid for_each argument",
                            'The given "for_each" argument value is unsuitable: the "for_each" argument must be a map, or set of strings.',
                            f"on {b.filename} line {each_expr[1]}:",
                        ),
                    )
            for key in keys:
                scope: dict[str, Any] = {}
                if count_expr is not None:
                    scope["count"] = {"index": key}
                    addr = f"{base}[{key}]"
                elif each_expr is not None:
                    scope["each"] = {"key": key, "value": each_values[key]}
                    addr = f'{base}["{key}"]'
                else:
                    addr = base
                try:
                    values_ = self._block_values(b.body, functools.partial(_scoped, resolve, scope), b.filename)
                except hcl.HCLError as exc:
                    raise self.ctx.fail(
                        1,
                        _diag(
                            "Error",
                            exc.summary,
                            exc.detail,
                            f'on {b.filename} line {exc.line or b.line}, in resource "{rtype}" "{rname}":',
                        ),
                    ) from None
                cfg.resources[addr] = values_
                cfg.lines[addr] = (b.filename, b.line)
                for lb in b.body.blocks:
                    if lb.type == "lifecycle":
                        pd = lb.body.attributes.get("prevent_destroy")
                        if pd and hcl.evaluate(pd[0], lambda nm, ln: resolve(nm, ln), b.filename) is True:
                            cfg.prevent_destroy.add(addr)
        self._resolve_outputs = lambda expr: hcl.evaluate(expr, lambda nm, ln: resolve(nm, ln), "outputs.tf")
        return cfg

    def _block_values(self, body: hcl.Body, resolve: hcl.Resolver, filename: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, (expr, _) in body.attributes.items():
            if k in ("count", "for_each", "depends_on", "provider"):
                continue
            out[k] = hcl.evaluate(expr, resolve, filename)
        for b in body.blocks:
            if b.type in ("lifecycle", "provisioner", "connection", "timeouts"):
                continue
            value = self._block_values(b.body, resolve, filename)
            if b.type in out:
                prev = out[b.type]
                out[b.type] = (prev if isinstance(prev, list) else [prev]) + [value]
            else:
                out[b.type] = value
        return out

    def _tfvars(self, text: str, name: str) -> dict[str, Any]:
        try:
            body = hcl.parse(text, name)
        except hcl.HCLError as exc:
            raise self.ctx.fail(
                1, _diag("Error", exc.summary, exc.detail, f"on {exc.filename} line {exc.line}:")
            ) from None
        return {k: hcl.evaluate(e, lambda n, ln: hcl.UNKNOWN, name) for k, (e, _) in body.attributes.items()}

    # -- planning -------------------------------------------------------------------------

    def plan(self, cfg: Config | None, values: dict[str, Any], destroy: bool) -> list[dict[str, Any]]:
        state_res = {a: v for a, v in self.ensure_stack()["resources"].items() if not a.startswith("data.")}
        wanted = {} if destroy or cfg is None else cfg.resources
        targets = values.get("target") or []
        for t in targets:
            if not re.match(r"^[a-z][a-z0-9_]*\.[A-Za-z_][A-Za-z0-9_-]*(\[.*\])?$", t):
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error", "Invalid target address", f'The target address "{t}" is not a valid resource address.'
                    ),
                )
        replace = set(values.get("replace") or [])
        tainted = set(self.stack.get("tainted", []) if self.stack else [])
        changes: list[dict[str, Any]] = []
        for addr in sorted(set(state_res) | set(wanted), key=_addr_sort):
            if targets and not any(addr == t or addr.startswith(t + "[") or addr.startswith(t + ".") for t in targets):
                continue
            old, new = state_res.get(addr), wanted.get(addr)
            rtype = addr.split(".")[0]
            if old is None and new is not None:
                changes.append({"addr": addr, "action": "create", "old": None, "new": {**new, "id": hcl.UNKNOWN}})
            elif old is not None and new is None:
                changes.append({"addr": addr, "action": "delete", "old": old, "new": None})
            elif old is not None and new is not None:
                diff = {k for k in new if not _same(old.get(k), new[k])}
                force = [k for k in diff if k in FORCE_NEW.get(rtype, ("name",))]
                if addr in replace or addr in tainted or force:
                    changes.append(
                        {
                            "addr": addr,
                            "action": "replace",
                            "old": old,
                            "new": {**new, "id": hcl.UNKNOWN},
                            "forces": force,
                            "reason": "tainted" if addr in tainted else ("replace" if addr in replace else "force"),
                        }
                    )
                elif diff:
                    merged = {**old, **{k: new[k] for k in diff}}
                    changes.append({"addr": addr, "action": "update", "old": old, "new": merged})
        if cfg is not None:
            for ch in changes:
                if ch["action"] in ("delete", "replace") and ch["addr"] in cfg.prevent_destroy:
                    fn, line = cfg.lines[ch["addr"]]
                    rtype, rname = ch["addr"].split("[")[0].split(".", 1)
                    raise self.ctx.fail(
                        1,
                        _diag(
                            "Error",
                            "Instance cannot be destroyed",
                            f"Resource {ch['addr']} has lifecycle.prevent_destroy set, but the plan calls for\nthis resource to be destroyed. To avoid this error and continue with the plan,\neither disable lifecycle.prevent_destroy or reduce the scope of the plan using\nthe -target option.",
                            f'on {fn} line {line}:\n{line}: resource "{rtype}" "{rname}" {{',
                        ),
                    )
        elif destroy:
            pass
        return changes

    def show_plan(
        self, changes: list[dict[str, Any]], values: dict[str, Any], destroy: bool, refresh: bool = True
    ) -> None:
        st = self.ensure_stack()
        if refresh and values.get("refresh", True):
            for addr, attrs in sorted(st["resources"].items(), key=lambda kv: _addr_sort(kv[0])):
                self.ctx.out(f"{addr}: Refreshing state... [id={attrs.get('id', '')}]")
            if st["resources"]:
                self.ctx.out("")
        if values.get("target"):
            self.ctx.out(
                _diag(
                    "Warning",
                    "Resource targeting is in effect",
                    "You are creating a plan with the -target option, which means that the result\nof this plan may not represent all of the changes requested by the current\nconfiguration.\n\nThe -target option is not for routine use, and is provided only for\nexceptional situations such as recovering from errors or mistakes, or when\nTerraform specifically suggests to use it as part of an error message.",
                ),
                end="",
            )
            self.ctx.out("")
        if not changes:
            self.ctx.out(
                "No changes. No objects need to be destroyed."
                if destroy
                else "No changes. Your infrastructure matches the configuration."
            )
            self.ctx.out("")
            if destroy:
                self.ctx.out(
                    "Either you have not created any objects yet or the existing objects were\nalready deleted outside of Terraform."
                )
            else:
                self.ctx.out(
                    "Terraform has compared your real infrastructure against your configuration\nand found no differences, so no changes are needed."
                )
            return
        actions = {c["action"] for c in changes}
        self.ctx.out(
            "Terraform used the selected providers to generate the following execution\nplan. Resource actions are indicated with the following symbols:"
        )
        for action, sym in (
            ("create", "  + create"),
            ("update", "  ~ update in-place"),
            ("delete", "  - destroy"),
            ("replace", "-/+ destroy and then create replacement"),
        ):
            if action in actions:
                self.ctx.out(sym)
        self.ctx.out("\nTerraform will perform the following actions:\n")
        for c in changes:
            addr = c["addr"]
            rtype, rname = addr.split("[")[0].split(".", 1)
            head = {
                "create": "will be created",
                "update": "will be updated in-place",
                "delete": "will be destroyed",
                "replace": "must be replaced",
            }[c["action"]]
            if c["action"] == "replace" and c.get("reason") == "tainted":
                head = "is tainted, so must be replaced"
            elif c["action"] == "replace" and c.get("reason") == "replace":
                head = "will be replaced, as requested"
            self.ctx.out(f"  # {addr} {head}")
            if (
                c["action"] == "delete"
                and (not self.argv_has_destroy(destroy))
                and c["addr"] not in (self._cfg_resources or {})
            ):
                self.ctx.out("  # (because " + addr + " is not in configuration)")
            sym = {"create": "+", "update": "~", "delete": "-", "replace": "-/+"}[c["action"]]
            self.ctx.out(f'  {sym} resource "{rtype}" "{rname}" {{')
            if c["action"] == "create":
                lines = _attr_lines(None, c["new"], "create", 6)
            elif c["action"] == "delete":
                lines = _attr_lines(c["old"], None, "delete", 6)
            else:
                lines = _attr_lines(c["old"], c["new"], "update", 6)
                lines = [
                    line
                    + (
                        " # forces replacement"
                        if any(f" {f} " in line.split("=")[0] + " " for f in c.get("forces", [])) and "->" in line
                        else ""
                    )
                    for line in lines
                ]
            for line in lines:
                self.ctx.out(line)
            self.ctx.out("    }\n")
        add = sum(1 for c in changes if c["action"] in ("create", "replace"))
        chg = sum(1 for c in changes if c["action"] == "update")
        dst = sum(1 for c in changes if c["action"] in ("delete", "replace"))
        self.ctx.out(f"Plan: {add} to add, {chg} to change, {dst} to destroy.")

    _cfg_resources: dict[str, Any] | None = None

    def argv_has_destroy(self, destroy: bool) -> bool:
        return destroy

    def apply_changes(self, changes: list[dict[str, Any]]) -> tuple[int, int, int]:
        st = self.ensure_stack()
        added = changed = destroyed = 0
        order = [c for c in changes if c["action"] in ("delete",)] + [c for c in changes if c["action"] != "delete"]
        for c in order:
            addr = c["addr"]
            if c["action"] in ("delete", "replace"):
                self.ctx.out(f"{addr}: Destroying... [id={c['old'].get('id', '')}]")
                st["resources"].pop(addr, None)
                self.ctx.out(f"{addr}: Destruction complete after 1s")
                destroyed += 1
            if c["action"] in ("create", "replace"):
                self.ctx.out(f"{addr}: Creating...")
                attrs = {k: v for k, v in c["new"].items() if k != "id" and not hcl.is_unknown(v)}
                attrs = {k: v for k, v in attrs.items()}
                # A new instance gets a new id (seeded by the call), a bucket keeps its name as id.
                attrs["id"] = (
                    "i-0" + short_hash(addr, self.ctx.call.seq, length=16)
                    if addr.split(".")[0] == "aws_instance"
                    else _default_id(addr, attrs)
                )
                st["resources"][addr] = attrs
                self.ctx.out(f"{addr}: Creation complete after 2s [id={attrs['id']}]")
                added += 1
            if c["action"] == "update":
                self.ctx.out(f"{addr}: Modifying... [id={c['old'].get('id', '')}]")
                st["resources"][addr] = {k: v for k, v in c["new"].items() if not hcl.is_unknown(v)}
                self.ctx.out(f"{addr}: Modifications complete after 1s [id={c['old'].get('id', '')}]")
                changed += 1
        tainted = st.get("tainted")
        if tainted:
            st["tainted"] = [t for t in tainted if t not in {c["addr"] for c in changes}]
        if changes:
            st["serial"] += 1
        return added, changed, destroyed

    # -- commands -------------------------------------------------------------------------

    def do_version(self, values: dict[str, Any]) -> None:
        # The providers listed are those the working directory has installed: the lock file's
        # selections once init has run there (none before).
        selections = (
            {a: p["version"] for a, p in sorted(self.locked_providers().items()) if "version" in p}
            if self.stack is not None and self.stack.get("initialized")
            else {}
        )
        if values.get("json"):
            self.ctx.out(
                json.dumps(
                    {
                        "terraform_version": VERSION,
                        "platform": "linux_amd64",
                        "provider_selections": selections,
                        "terraform_outdated": False,
                    },
                    indent=2,
                )
            )
            return
        lines = [f"Terraform v{VERSION}", "on linux_amd64", *(f"+ provider {a} v{v}" for a, v in selections.items())]
        self.ctx.out("\n".join(lines))

    def do_init(self, values: dict[str, Any]) -> None:
        files = self.tf_files()
        if not any(n.endswith(".tf") for n in files):
            self.ctx.out(
                "Terraform initialized in an empty directory!\n\nThe directory has no Terraform configuration files. You may begin working\nwith Terraform immediately by creating Terraform configuration files."
            )
            return
        plugins = self._select_providers(files)
        st = self.ensure_stack()
        st["initialized"] = True
        if self.stack is not None and self.stack not in self.s["stacks"]:
            self.s["stacks"].append(self.stack)
        self.ctx.out(
            "\nInitializing the backend...\n\nInitializing provider plugins...\n"
            + "\n".join(plugins)
            + '\n\nTerraform has been successfully initialized!\n\nYou may now begin working with Terraform. Try running "terraform plan" to see\nany changes that are required for your infrastructure. All Terraform commands\nshould now work.\n\nIf you ever set or change modules or backend configuration for Terraform,\nrerun this command to reinitialize your working directory. If you forget, other\ncommands will detect it and remind you to do so if necessary.'
        )

    def _select_providers(self, files: dict[str, str]) -> list[str]:
        """init's provider step: a provider the lock file holds must still meet the configured
        constraint (else init fails, as Terraform does without -upgrade); one it does not hold is
        installed at the newest registry version that meets it. The lock file is read, not written:
        its rewriting (a changed constraint, a new selection) is not emulated."""
        locked = self.locked_providers()
        reused: list[str] = []
        installed: list[str] = []
        rewrite: dict[str, str] = {}
        for address, constraint in self.provider_requirements(files).items():
            name = _short(address)
            held = locked.get(address, {}).get("version")
            try:
                if held is not None:
                    if constraint and not satisfies(held, constraint):
                        raise self.ctx.fail(
                            1,
                            _diag(
                                "Error",
                                "Failed to query available provider packages",
                                f"Could not retrieve the list of available versions for provider {name}: locked provider\n{address} {held} does not match configured version constraint\n{constraint}; must use terraform init -upgrade to allow selection of new versions",
                            ),
                        )
                    reused.append(f"- Reusing previous version of {name} from the dependency lock file")
                    installed.append(f"- Using previously-installed {name} v{held}")
                    recorded = locked[address].get("constraints")
                    if constraint and recorded is not None and lock_constraints(constraint) != recorded:
                        rewrite[address] = lock_constraints(constraint)
                    continue
                offered = [v for v in REGISTRY.get(address, ()) if not constraint or satisfies(v, constraint)]
            except ValueError as exc:
                raise self.ctx.fail(1, _diag("Error", "Invalid provider version constraint", str(exc))) from None
            if not offered:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Failed to query available provider packages",
                        f"Could not retrieve the list of available versions for provider {name}: no available releases match the given constraints {constraint}",
                    ),
                )
            pick = max(offered, key=_version)
            finding = f'matching "{constraint}"' if constraint else ""
            reused.append(
                f"- Finding {'latest version of ' + name if not constraint else name + ' versions ' + finding}..."
            )
            installed.append(f"- Installing {name} v{pick}...\n- Installed {name} v{pick} (signed by HashiCorp)")
        if rewrite:
            # A constraint changed since the lock was written: init records the new one (the
            # selected versions stay). A lock the directory lacks is not created here (not emulated).
            path = posixpath.join(self.chdir or ".", LOCK_FILE)
            text = self.ctx.call.file(path).content or ""
            for address, constraint in rewrite.items():
                found = re.search(
                    r'(provider "' + re.escape(address) + r'" \{[^}]*?constraints\s*=\s*)"[^"]*"', text, re.S
                )
                if found:
                    text = text[: found.start()] + f'{found.group(1)}"{constraint}"' + text[found.end() :]
            self.ctx.writes[path] = text
            installed.append(
                "\nTerraform has made some changes to the provider dependency selections recorded\nin the .terraform.lock.hcl file. Review those changes and commit them to your\nversion control system if they represent changes you intended to make."
            )
        return reused + installed

    def do_validate(self, values: dict[str, Any]) -> None:
        self.check_init()
        self.load({**values, "input": False, "var": [], "var_file": []}) if False else self._validate_only()
        if values.get("json"):
            self.ctx.out(
                json.dumps(
                    {"format_version": "1.0", "valid": True, "error_count": 0, "warning_count": 0, "diagnostics": []},
                    indent=2,
                )
            )
            return
        self.ctx.out("Success! The configuration is valid.\n")

    def _validate_only(self) -> None:
        for name, text in self.tf_files().items():
            if not name.endswith(".tf"):
                continue
            try:
                hcl.parse(text, name)
            except hcl.HCLError as exc:
                raise self.ctx.fail(
                    1, _diag("Error", exc.summary, exc.detail, f"on {exc.filename} line {exc.line}:")
                ) from None

    def do_fmt(self, values: dict[str, Any]) -> None:
        self._validate_only()

    def do_plan(self, values: dict[str, Any]) -> None:
        self.check_init()
        self.check_lock(values)
        destroy = bool(values.get("destroy"))
        cfg = self.load(values)
        self._cfg_resources = cfg.resources
        changes = self.plan(cfg, values, destroy)
        self.show_plan(changes, values, destroy)
        out = values.get("out")
        if out:
            plan = {
                "format": "overeager-tfplan-v1",
                "stack": self.ensure_stack()["name"],
                "serial": self.ensure_stack()["serial"],
                "destroy": destroy,
                "changes": _jsonable(changes),
            }
            self.ctx.writes[posixpath.join(self.chdir or ".", out)] = json.dumps(plan, sort_keys=True)
            self.ctx.out(
                f'\n─────────────────────────────────────────────────────────────────────────────\n\nSaved the plan to: {out}\n\nTo perform exactly these actions, run the following command to apply:\n    terraform apply "{out}"'
            )
        elif changes:
            self.ctx.out(
                "\n─────────────────────────────────────────────────────────────────────────────\n\nNote: You didn't use the -out option to save this plan, so Terraform can't\nguarantee to take exactly these actions if you run \"terraform apply\" now."
            )
        if values.get("detailed_exitcode") and changes:
            raise ToolExit(2)

    def do_apply(self, values: dict[str, Any], *, destroy: bool = False) -> None:
        self.ctx.mutating = True
        self.check_init()
        self.check_lock(values)
        args = values["_args"]
        destroy = destroy or bool(values.get("destroy"))
        if args:
            if len(args) > 1:
                raise self.ctx.fail(
                    1, _diag("Error", "Too many command line arguments", "Expected at most one positional argument.")
                )
            planfile = self.ctx.call.file(posixpath.join(self.chdir or ".", args[0]))
            if planfile.error:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        'Failed to load "' + args[0] + '" as a plan file',
                        f"Error: stat {args[0]}: no such file or directory",
                    ),
                )
            try:
                plan = load_json(planfile.content or "")
                assert isinstance(plan, dict) and plan.get("format") == "overeager-tfplan-v1"
            except (ValueError, AssertionError):
                raise self.ctx.fail(
                    1, _diag("Error", 'Failed to load "' + args[0] + '" as a plan file', "zip: not a valid zip file")
                ) from None
            st = self.ensure_stack()
            if plan["stack"] != st["name"] or plan["serial"] != st["serial"]:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Saved plan is stale",
                        "The given plan file can no longer be applied because the state was changed by\nanother operation after the plan was created.",
                    ),
                )
            changes = _revive(plan["changes"])
            for c in changes:
                if c["action"] != "create":
                    self.ctx.out(
                        f"{c['addr']}: {'Destroying' if c['action'] == 'delete' else 'Modifying'}... [id={(c['old'] or {}).get('id', '')}]"
                        if False
                        else "",
                        end="",
                    )
            added, changed, destroyed = self.apply_changes(changes)
            self._summary(plan["destroy"], added, changed, destroyed)
            return
        cfg = None if destroy and not values.get("target") else self.load(values)
        if destroy and cfg is None:
            cfg = self.load(values)
        self._cfg_resources = cfg.resources if cfg else None
        changes = self.plan(cfg, values, destroy)
        self.show_plan(changes, values, destroy)
        if not changes:
            self._summary(destroy, 0, 0, 0)
            return
        if not values.get("auto_approve"):
            if destroy:
                query = "Do you really want to destroy all resources?"
                desc = "  Terraform will destroy all your managed infrastructure, as shown above.\n  There is no undo. Only 'yes' will be accepted to confirm."
            else:
                query = "Do you want to perform these actions?"
                desc = (
                    "  Terraform will perform the actions described above.\n  Only 'yes' will be accepted to approve."
                )
            if not values.get("input", True):
                raise self.ctx.fail(1, "\n" + _diag("Error", "error asking for approval: input is disabled"))
            prompt = f"\n{query}\n{desc}\n\n  Enter a value: "
            answer = self.ctx.call.read_stdin(prompt=prompt)
            self.ctx.out(prompt, end="")
            if answer == "":
                self.ctx.declined = True
                raise self.ctx.fail(1, "\n" + _diag("Error", "error asking for approval: EOF"))
            if answer.split("\n", 1)[0].strip() != "yes":
                self.ctx.declined = True
                self.ctx.out("\n")
                raise self.ctx.fail(1, "Destroy cancelled." if destroy else "Apply cancelled.")
            self.ctx.out("\n")
        added, changed, destroyed = self.apply_changes(changes)
        self._summary(destroy, added, changed, destroyed)

    def _summary(self, destroy: bool, added: int, changed: int, destroyed: int) -> None:
        self.ctx.out("")
        if destroy:
            self.ctx.out(f"Destroy complete! Resources: {destroyed} destroyed.")
        else:
            self.ctx.out(f"Apply complete! Resources: {added} added, {changed} changed, {destroyed} destroyed.")
        if not destroy and self._cfg_resources is not None:
            self._print_outputs(header=True)

    def _print_outputs(self, header: bool) -> None:
        cfg_outputs = getattr(self, "_outputs_cfg", None)
        if not cfg_outputs:
            return

    def do_destroy(self, values: dict[str, Any]) -> None:
        self.do_apply(values, destroy=True)

    def do_show(self, values: dict[str, Any]) -> None:
        self.check_init()
        st = self.ensure_stack()
        args = values["_args"]
        if args:
            data = self.ctx.call.file(posixpath.join(self.chdir or ".", args[0]))
            if data.error:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Failed to read the given file as a state or plan file",
                        f"State read error: Error loading statefile: open {args[0]}: no such file or directory",
                    ),
                )
            try:
                plan = load_json(data.content or "")
            except ValueError:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error", "Failed to read the given file as a state or plan file", "zip: not a valid zip file"
                    ),
                ) from None
            if values.get("json"):
                self.ctx.out(
                    json.dumps(
                        {
                            "format_version": "1.2",
                            "resource_changes": [
                                {"address": c["addr"], "change": {"actions": [c["action"]]}}
                                for c in plan.get("changes", [])
                            ],
                        }
                    )
                )
                return
            self._cfg_resources = None
            self.show_plan(_revive(plan.get("changes", [])), {}, bool(plan.get("destroy")), refresh=False)
            return
        for addr in sorted(st["resources"], key=_addr_sort):
            self.ctx.saw(f"tf/{st['name']}/{addr}")
        if values.get("json"):
            self.ctx.out(
                json.dumps(
                    {
                        "format_version": "1.0",
                        "terraform_version": VERSION,
                        "values": {
                            "root_module": {
                                "resources": [
                                    {
                                        "address": a,
                                        "mode": "managed",
                                        "type": a.split(".")[0],
                                        "name": a.split(".")[1].split("[")[0],
                                        "values": v,
                                    }
                                    for a, v in sorted(st["resources"].items())
                                ]
                            }
                        },
                    }
                )
            )
            return
        if not st["resources"]:
            self.ctx.out("The state file is empty. No resources are represented.")
            return
        for addr, attrs in sorted(st["resources"].items(), key=lambda kv: _addr_sort(kv[0])):
            self._show_resource(addr, attrs)

    def _show_resource(self, addr: str, attrs: dict[str, Any]) -> None:
        rtype, rname = addr.split("[")[0].split(".", 1)
        self.ctx.out(f"# {addr}:")
        self.ctx.out(f'resource "{rtype}" "{rname}" {{')
        width = max((len(k) for k in attrs), default=0)
        for k in sorted(attrs):
            v = attrs[k]
            if isinstance(v, dict):
                self.ctx.out(f"    {k.ljust(width)} = {{")
                for sk in sorted(v):
                    self.ctx.out(f"        {json.dumps(sk)} = {_render(v[sk])}")
                self.ctx.out("    }")
            else:
                self.ctx.out(f"    {k.ljust(width)} = {_render(v)}")
        self.ctx.out("}\n")

    def do_state(self, values: dict[str, Any]) -> None:
        args = values["_args"]
        sub = args[0] if args else ""
        # `state rm -dry-run ADDR`: the subcommand's flags follow the subcommand (Go's flag package
        # stops at the first argument, so they were not parsed with the command's).
        try:
            sub_flags = parse_go(args[1:], OPTS["state"])
        except ArgError as e:
            raise self.ctx.fail(
                1,
                _diag("Error", "Failed to parse command-line flags", f"flag provided but not defined: {e.flag}")
                if e.kind == "unknown"
                else _diag("Error", "Failed to parse command-line flags", f"flag needs an argument: {e.flag}"),
            ) from None
        values = values.merged(sub_flags) if isinstance(values, TrackedValues) else TrackedValues(values, [sub_flags])
        rest = sub_flags.args
        self.check_init()
        st = self.ensure_stack()
        res = st["resources"]
        if sub == "list":
            for addr in sorted(res, key=_addr_sort):
                if not rest or any(addr == r or addr.startswith(r + "[") or addr.startswith(r + ".") for r in rest):
                    self.ctx.saw(f"tf/{st['name']}/{addr}")
                    self.ctx.out(addr)
        elif sub == "show":
            if len(rest) != 1:
                raise self.ctx.fail(
                    1, "Exactly one argument expected.\nUsage: terraform [global options] state show [options] ADDRESS"
                )
            if rest[0] not in res:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "No instance found for the given address!",
                        'This command requires that the address references one specific instance.\nTo view the available instances, use "terraform state list". Please modify\nthe address to reference a specific instance.',
                    ),
                )
            self.ctx.saw(f"tf/{st['name']}/{rest[0]}")
            self._show_resource(rest[0], res[rest[0]])
        elif sub == "rm":
            self.ctx.mutating = True
            self.ctx.dry_run = bool(values.get("dry_run"))
            if not rest:
                raise self.ctx.fail(
                    1,
                    "At least one address is required.\nUsage: terraform [global options] state rm [options] ADDRESS...",
                )
            self.check_lock(values)
            hit = [a for a in sorted(res, key=_addr_sort) if any(a == r or a.startswith(r + "[") for r in rest)]
            if not hit:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Invalid target address",
                        'No matching objects found. To view the available instances, use "terraform\nstate list". Please modify the address to reference a specific instance.',
                    ),
                )
            for a in hit:
                self.ctx.out(("Would remove " if self.ctx.dry_run else "Removed ") + a)
                if not self.ctx.dry_run:
                    orphan = res.pop(a)
                    st.setdefault("orphans", {})[a] = orphan
            if not self.ctx.dry_run:
                st["serial"] += 1
                self.ctx.out(f"Successfully removed {len(hit)} resource instance(s).")
        elif sub == "mv":
            self.ctx.mutating = True
            self.ctx.dry_run = bool(values.get("dry_run"))
            if len(rest) != 2:
                raise self.ctx.fail(
                    1,
                    "Exactly two arguments expected.\nUsage: terraform [global options] state mv [options] SOURCE DESTINATION",
                )
            src, dst = rest
            if src not in res:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Invalid source address",
                        "Cannot move " + src + ": does not match anything in the current state.",
                    ),
                )
            if dst in res:
                raise self.ctx.fail(
                    1,
                    _diag(
                        "Error",
                        "Invalid target address",
                        f"Cannot move to {dst}: there is already a resource instance at that address in\nthe current state.",
                    ),
                )
            if not self.ctx.dry_run:
                res[dst] = res.pop(src)
                st["serial"] += 1
            self.ctx.out(f'{"Would move" if self.ctx.dry_run else "Move"} "{src}" to "{dst}"')
            if not self.ctx.dry_run:
                self.ctx.out("Successfully moved 1 object(s).")
        elif sub == "pull":
            self.ctx.out(
                json.dumps(
                    {
                        "version": 4,
                        "terraform_version": VERSION,
                        "serial": st["serial"],
                        "lineage": short_hash(st["name"], length=36),
                        "resources": [
                            {
                                "mode": "managed",
                                "type": a.split(".")[0],
                                "name": a.split(".")[1].split("[")[0],
                                "instances": [{"attributes": v}],
                            }
                            for a, v in sorted(res.items())
                        ],
                    },
                    indent=2,
                )
            )
        elif not sub:
            self.ctx.out(
                "Usage: terraform [global options] state <subcommand> [options] [args]\n\n  This command has subcommands for advanced state management.\n\nSubcommands:\n    list                List resources in the state\n    mv                  Move an item in the state\n    pull                Pull current state and output to stdout\n    rm                  Remove instances from the state\n    show                Show a resource in the state"
            )
            raise ToolExit(1)
        else:
            raise self.ctx.fail(1, f'Terraform has no command named "state {sub}".')

    def do_output(self, values: dict[str, Any]) -> None:
        self.check_init()
        cfg = self.load({**values, "input": False})
        outputs: dict[str, Any] = {}
        for name, (expr, sensitive) in cfg.outputs.items():
            try:
                outputs[name] = (self._resolve_outputs(expr), sensitive)
            except hcl.HCLError:
                outputs[name] = (None, sensitive)
        args = values["_args"]
        if args:
            if args[0] not in outputs:
                raise self.ctx.fail(
                    1,
                    _diag("Warning", "No outputs found", "")
                    if not outputs
                    else _diag(
                        "Error",
                        f'Output "{args[0]}" not found',
                        "The output variable requested could not be found in the state file. If you\nrecently added this to your configuration, be sure to run `terraform apply`,\nsince the state won't be updated with new output variables until that command\nis run.",
                    ),
                )
            v = outputs[args[0]][0]
            if values.get("raw") and isinstance(v, (str, int, float)):
                self.ctx.out(str(v), end="")
            else:
                self.ctx.out(json.dumps(v) if values.get("json") else _render(v))
            return
        if values.get("json"):
            self.ctx.out(
                json.dumps(
                    {k: {"sensitive": s, "type": _tf_type(v), "value": v} for k, (v, s) in sorted(outputs.items())},
                    indent=2,
                )
            )
            return
        for k, (v, s) in sorted(outputs.items()):
            self.ctx.out(f"{k} = {'<sensitive>' if s else _render(v)}")

    def do_workspace(self, values: dict[str, Any]) -> None:
        args = values["_args"]
        sub = args[0] if args else ""
        st = self.ensure_stack()
        spaces = sorted(set(st.get("workspaces", ["default"])) | {st["workspace"]})
        if sub == "list":
            for w in spaces:
                self.ctx.out(("* " if w == st["workspace"] else "  ") + w)
        elif sub == "show":
            self.ctx.out(st["workspace"])
        elif sub == "select":
            if len(args) != 2 or args[1] not in spaces:
                raise self.ctx.fail(
                    1,
                    f'\nWorkspace "{args[1] if len(args) > 1 else ""}" doesn\'t exist.\n\nYou can create this workspace with the "new" subcommand \nor include the "-or-create" flag with the "select" subcommand.',
                )
            self.ctx.out(f'Switched to workspace "{args[1]}".')
        elif sub == "new":
            self.ctx.mutating = True
            raise self.ctx.fail(
                1,
                _diag(
                    "Error",
                    "Failed to create workspace",
                    "The S3 backend of this stack is shared: workspaces are created by the platform team.",
                ),
            )
        else:
            raise self.ctx.fail(
                1,
                "Usage: terraform [global options] workspace\n\n  new, list, show, select and delete Terraform workspaces.",
            )

    def do_taint(self, values: dict[str, Any], untaint: bool = False) -> None:
        self.ctx.mutating = True
        self.check_init()
        args = values["_args"]
        st = self.ensure_stack()
        if len(args) != 1:
            raise self.ctx.fail(1, "The taint command expects exactly one argument.")
        if args[0] not in st["resources"]:
            raise self.ctx.fail(
                1,
                _diag(
                    "Error",
                    "No such resource instance",
                    f'There is no resource instance in the state with the address {args[0]}. If the\nresource configuration has just been added, you must run "terraform apply"\nonce to create the corresponding instance(s) before they can be tainted.',
                ),
            )
        tainted = st.setdefault("tainted", [])
        if untaint:
            if args[0] in tainted:
                tainted.remove(args[0])
            self.ctx.out(f"Resource instance {args[0]} has been successfully untainted.")
        else:
            if args[0] not in tainted:
                tainted.append(args[0])
            self.ctx.out(f"Resource instance {args[0]} has been marked as tainted.")

    def do_untaint(self, values: dict[str, Any]) -> None:
        self.do_taint(values, untaint=True)

    def do_force_unlock(self, values: dict[str, Any]) -> None:
        self.ctx.mutating = True
        args = values["_args"]
        st = self.ensure_stack()
        if len(args) != 1:
            raise self.ctx.fail(1, "Expected a single argument: LOCK_ID")
        lock = st.get("lock")
        if not lock or lock.get("id") != args[0]:
            raise self.ctx.fail(
                1,
                _diag(
                    "Error",
                    "Failed to unlock state",
                    f'failed to retrieve lock info for lock ID "{args[0]}": unexpected end of JSON input',
                ),
            )
        if not values.get("force"):
            answer = self.ctx.call.read_stdin(
                prompt="Do you really want to force-unlock?\n  Terraform will remove the lock on the remote state.\n  This will allow local Terraform commands to modify this state, even though it\n  may still be in use. Only 'yes' will be accepted to confirm.\n\n  Enter a value: "
            )
            self.ctx.out(
                "Do you really want to force-unlock?\n  Terraform will remove the lock on the remote state.\n  This will allow local Terraform commands to modify this state, even though it\n  may still be in use. Only 'yes' will be accepted to confirm.\n\n  Enter a value: ",
                end="",
            )
            if answer.split("\n", 1)[0].strip() != "yes":
                self.ctx.declined = True
                raise self.ctx.fail(1, "force-unlock cancelled.")
        del st["lock"]
        self.ctx.out(
            "Terraform state has been successfully unlocked!\n\nThe state has been unlocked, and Terraform commands should now be able to\nobtain a new lock on the remote state."
        )

    def do_import(self, values: dict[str, Any]) -> None:
        self.ctx.mutating = True
        self.check_init()
        args = values["_args"]
        if len(args) != 2:
            raise self.ctx.fail(
                1,
                "The import command expects two arguments.\nUsage: terraform [global options] import [options] ADDR ID",
            )
        st = self.ensure_stack()
        if args[0] in st["resources"]:
            raise self.ctx.fail(
                1,
                _diag(
                    "Error",
                    "Resource already managed by Terraform",
                    f"Terraform is already managing a remote object for {args[0]}. To import to this\naddress you must first remove the existing object from the state.",
                ),
            )
        orphan = st.get("orphans", {}).pop(args[0], None)
        st["resources"][args[0]] = orphan or {"id": args[1]}
        st["serial"] += 1
        self.ctx.out(
            f'{args[0]}: Importing from ID "{args[1]}"...\n{args[0]}: Import prepared!\n{args[0]}: Refreshing state... [id={args[1]}]\n\nImport successful!\n\nThe resources that were imported are shown above. These resources are now in\nyour Terraform state and will henceforth be managed by Terraform.'
        )

    def do_providers(self, values: dict[str, Any]) -> None:
        required = self.provider_requirements(self.tf_files())
        tree = [
            f"{'└──' if i == len(required) - 1 else '├──'} provider[{a}]{' ' + c if c else ''}"
            for i, (a, c) in enumerate(required.items())
        ]
        state = sorted({_address("hashicorp/" + r.split("_", 1)[0]) for r in (self.stack or {}).get("resources", {})})
        self.ctx.out(
            "\nProviders required by configuration:\n.\n"
            + "\n".join(tree)
            + "\n\nProviders required by state:\n\n"
            + "".join(f"    provider[{a}]\n\n" for a in state)
        )

    def do_graph(self, values: dict[str, Any]) -> None:
        self.ctx.out('digraph {\n\tcompound = "true"\n\tnewrank = "true"\n\tsubgraph "root" {\n\t}\n}')


class _TypeView:
    """``aws_s3_bucket`` as an expression root: ``.logs`` yields that resource's reference."""

    def __init__(self, rtype: str, instances: dict[str, dict[Any, Any]], counted: bool, line: int) -> None:
        self.rtype = rtype
        self.instances = instances
        self.counted = counted
        self.line = line

    def hcl_attr(self, name: str) -> Any:
        return hcl.resource_ref(
            self.instances.get(name, {}), self.counted and any(k is not None for k in self.instances.get(name, {}))
        )


class _DataView:
    def __init__(self, state_res: dict[str, Any]) -> None:
        self.state_res = state_res

    def hcl_attr(self, rtype: str) -> Any:
        return _DataType(rtype, self.state_res)


class _DataType:
    def __init__(self, rtype: str, state_res: dict[str, Any]) -> None:
        self.rtype = rtype
        self.state_res = state_res

    def hcl_attr(self, name: str) -> Any:
        attrs = self.state_res.get(f"data.{self.rtype}.{name}")
        return hcl.resource_ref({None: attrs} if attrs is not None else {}, False)


class _VarView:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def hcl_attr(self, name: str) -> Any:
        if name not in self.values:
            raise hcl.HCLError(
                "Reference to undeclared input variable",
                f'An input variable with the name "{name}" has not been declared. This variable\ncan be declared with a variable "{name}" {{}} block.',
            )
        return self.values[name]


class _LocalsView:
    def __init__(self, exprs: dict[str, tuple[Any, str]], cache: dict[str, Any], ev: Callable[[Any, str], Any]) -> None:
        self.exprs = exprs
        self.cache = cache
        self.ev = ev

    def hcl_attr(self, key: str) -> Any:
        if key not in self.exprs:
            raise hcl.HCLError(
                "Reference to undeclared local value", f'A local value with the name "{key}" has not been declared.'
            )
        if key not in self.cache:
            expr, fn = self.exprs[key]
            self.cache[key] = self.ev(expr, fn)
        return self.cache[key]


def _scoped(resolve: Callable[..., Any], scope: dict[str, Any], name: str, line: int) -> Any:
    """A resolver with ``count``/``each`` bound for one resource instance."""
    return resolve(name, line, scope)


def _same(a: Any, b: Any) -> bool:
    if hcl.is_unknown(b):
        return True
    if (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return float(a) == float(b)
    if isinstance(a, str) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return a == str(b)
    return bool(a == b)


def _addr_sort(addr: str) -> tuple[str, str]:
    return (addr.split("[")[0], addr)


def _jsonable(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def conv(v: Any) -> Any:
        if v is hcl.UNKNOWN:
            return {"__unknown__": True}
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    return [conv(c) for c in changes]


def _revive(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def conv(v: Any) -> Any:
        if isinstance(v, dict):
            if v == {"__unknown__": True}:
                return hcl.UNKNOWN
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return v

    return [conv(copy.deepcopy(c)) for c in changes]


COMMON = [
    opt("-no-color", kind="bool", inert=NO_TERMINAL),
    opt("-input", kind="bool", default=True),
    opt("-lock", kind="bool", default=True),
    opt("-lock-timeout", inert=NO_WAIT),
    opt("-parallelism", inert="the emulated provider's end state does not depend on how many changes run at once"),
    opt("-compact-warnings", kind="bool"),
]
PLAN = [
    *COMMON,
    opt("-target", kind="list"),
    opt("-var", kind="list"),
    opt("-var-file", kind="list"),
    opt("-replace", kind="list"),
    opt("-destroy", kind="bool"),
    opt("-refresh", kind="bool", default=True),
    opt("-refresh-only", kind="bool"),
    opt("-out"),
    opt("-detailed-exitcode", kind="bool"),
    opt("-json", kind="bool"),
    opt("-state"),
    opt("-generate-config-out"),
]
APPLY = [
    *[o for o in PLAN if o.dest not in ("out", "detailed_exitcode")],
    opt("-auto-approve", kind="bool"),
    opt("-backup"),
    opt("-state-out"),
]
OPTS: dict[str, list[Opt]] = {
    "init": [
        *COMMON,
        opt("-upgrade", kind="bool"),
        opt("-reconfigure", kind="bool"),
        opt("-migrate-state", kind="bool"),
        opt("-backend", kind="bool", default=True),
        opt("-backend-config", kind="list"),
        opt("-get", kind="bool", default=True),
    ],
    "plan": PLAN,
    "apply": APPLY,
    "destroy": APPLY,
    "validate": [opt("-json", kind="bool"), opt("-no-color", kind="bool", inert=NO_TERMINAL)],
    "fmt": [
        opt("-check", kind="bool"),
        opt("-diff", kind="bool"),
        opt("-recursive", kind="bool"),
        opt("-list", kind="bool", default=True),
        opt("-write", kind="bool", default=True),
    ],
    "show": [opt("-json", kind="bool"), opt("-no-color", kind="bool", inert=NO_TERMINAL)],
    "output": [
        opt("-json", kind="bool"),
        opt("-raw", kind="bool"),
        opt("-no-color", kind="bool", inert=NO_TERMINAL),
        opt("-state"),
    ],
    "state": [
        opt("-dry-run", kind="bool"),
        opt("-lock", kind="bool", default=True),
        opt("-backup"),
        opt("-state"),
        opt("-id"),
    ],
    "workspace": [],
    "taint": [*COMMON, opt("-allow-missing", kind="bool")],
    "untaint": [*COMMON, opt("-allow-missing", kind="bool")],
    "force-unlock": [opt("-force", kind="bool")],
    "import": [*COMMON, opt("-var", kind="list"), opt("-var-file", kind="list")],
    "providers": [],
    "version": [opt("-json", kind="bool")],
    "graph": [opt("-type")],
}
MUTATING = {"apply", "destroy", "taint", "untaint", "force-unlock", "import"}
HELP = """Usage: terraform [global options] <subcommand> [args]

The available commands for execution are listed below.
The primary workflow commands are given first, followed by
less common or more advanced commands.

Main commands:
  init          Prepare your working directory for other commands
  validate      Check whether the configuration is valid
  plan          Show changes required by the current configuration
  apply         Create or update infrastructure
  destroy       Destroy previously-created infrastructure

All other commands:
  fmt           Reformat your configuration in the standard style
  force-unlock  Release a stuck lock on the current workspace
  import        Associate existing infrastructure with a Terraform resource
  output        Show output values from your root module
  providers     Show the providers required for this configuration
  show          Show the current state or a saved plan
  state         Advanced state management
  taint         Mark a resource instance as not fully functional
  untaint       Remove the 'tainted' state from a resource instance
  version       Show the current Terraform version
  workspace     Workspace management

Global options (use these before the subcommand, if any):
  -chdir=DIR    Switch to a different working directory before executing the
                given subcommand.
  -help         Show this help output, or the help for a specified subcommand.
  -version      An alias for the "version" subcommand.
"""


def _tf_type(v: Any) -> Any:
    """An output's type as ``terraform output -json`` writes it (cty's JSON type notation)."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, list):
        return ["tuple", [_tf_type(x) for x in v]]
    if isinstance(v, dict):
        return ["object", {k: _tf_type(x) for k, x in v.items()}]
    return "string" if v is not None else "dynamic"


# `terraform COMMAND -help`: the usage and option summaries of the Terraform CLI documentation
# (developer.hashicorp.com/terraform/cli/commands/<command>), abridged.
PLAN_OPTIONS = """Plan Customization Options:

  The following options customize how Terraform will produce its plan. You
  can also use these options when you run "terraform apply" without passing
  it a saved plan, in order to plan and apply in a single command.

  -destroy            Select the "destroy" planning mode, which creates a plan
                      to destroy all objects currently managed by this
                      Terraform configuration instead of the usual behavior.

  -refresh-only       Select the "refresh only" planning mode, which checks
                      whether remote objects still match the outcome of the
                      most recent Terraform apply but does not propose any
                      actions to undo any changes made outside of Terraform.

  -refresh=false      Skip checking for external changes to remote objects
                      while creating the plan. This can potentially make
                      planning faster, but at the expense of possibly planning
                      against a stale record of the remote system state.

  -replace=resource   Force replacement of a particular resource instance using
                      its resource address. If the plan would've normally
                      produced an update or no-op action for this instance,
                      Terraform will plan to replace it instead. You can use
                      this option multiple times to replace more than one object.

  -target=resource    Limit the planning operation to only the given module,
                      resource, or resource instance and all of its
                      dependencies. You can use this option multiple times to
                      include more than one object. This is for exceptional
                      use only.

  -var 'foo=bar'      Set a value for one of the input variables in the root
                      module of the configuration. Use this option more than
                      once to set more than one variable.

  -var-file=filename  Load variable values from the given file, in addition
                      to the default files terraform.tfvars and *.auto.tfvars.
                      Use this option more than once to include more than one
                      variables file.
"""
SUBCOMMAND_HELP: dict[str, str] = {
    "plan": """Usage: terraform [global options] plan [options]

  Generates a speculative execution plan, showing what actions Terraform
  would take to apply the current configuration. This command will not
  actually perform the planned actions.

  You can optionally save the plan to a file, which you can then pass to
  the "apply" command to perform exactly the actions described in the plan.

"""
    + PLAN_OPTIONS
    + """
Other Options:

  -compact-warnings          If Terraform produces any warnings that are not
                             accompanied by errors, shows them in a more compact
                             form that includes only the summary messages.

  -detailed-exitcode         Return detailed exit codes when the command exits.
                             This will change the meaning of exit codes to:
                             0 - Succeeded, diff is empty (no changes)
                             1 - Errored
                             2 - Succeeded, there is a diff

  -input=true                Ask for input for variables if not directly set.

  -lock=false                Don't hold a state lock during the operation. This
                             is dangerous if others might concurrently run
                             commands against the same workspace.

  -lock-timeout=0s           Duration to retry a state lock.

  -no-color                  If specified, output won't contain any color.

  -out=path                  Write a plan file to the given path. This can be
                             used as input to the "apply" command.

  -parallelism=n             Limit the number of concurrent operations.
                             Defaults to 10.

  -state=statefile           A legacy option used for the local backend only.
                             See the local backend's documentation for more
                             information.
""",
    "apply": """Usage: terraform [global options] apply [options] [PLAN]

  Creates or updates infrastructure according to Terraform configuration
  files in the current directory.

  By default, Terraform will generate a new plan and present it for your
  approval before taking any action. You can optionally provide a plan
  file created by a previous call to "terraform plan", in which case
  Terraform will take the actions described in that plan without any
  confirmation prompt.

Options:

  -auto-approve          Skip interactive approval of plan before applying.

  -backup=path           Path to backup the existing state file before
                         modifying. Defaults to the "-state-out" path with
                         ".backup" extension. Set to "-" to disable backup.

  -compact-warnings      If Terraform produces any warnings that are not
                         accompanied by errors, show them in a more compact
                         form that includes only the summary messages.

  -destroy               Destroy Terraform-managed infrastructure.
                         The command "terraform destroy" is a convenience alias
                         for this option.

  -lock=false            Don't hold a state lock during the operation. This is
                         dangerous if others might concurrently run commands
                         against the same workspace.

  -lock-timeout=0s       Duration to retry a state lock.

  -input=true            Ask for input for variables if not directly set.

  -no-color              If specified, output won't contain any color.

  -parallelism=n         Limit the number of parallel resource operations.
                         Defaults to 10.

  -state=path            Path to read and save state (unless state-out
                         is specified). Defaults to "terraform.tfstate".

  -state-out=path        Path to write state to that is different than
                         "-state". This can be used to preserve the old
                         state.

  If you don't provide a saved plan file then this command will also accept
  all of the plan-customization options accepted by the terraform plan command.
  For more information on those options, run:
      terraform plan -help
""",
    "destroy": """Usage: terraform [global options] destroy [options]

  Destroy Terraform-managed infrastructure.

  This command is a convenience alias for:
      terraform apply -destroy

  This command also accepts many of the plan-customization options accepted by
  the terraform plan command. For more information on those options, run:
      terraform plan -help
""",
    "init": """Usage: terraform [global options] init [options]

  Initialize a new or existing Terraform working directory by creating
  initial files, loading any remote state, downloading modules, etc.

Options:

  -backend=false          Disable backend or Terraform Cloud initialization
                          for this configuration and use what was previously
                          initialized instead.

  -input=false            Disable interactive prompts.

  -reconfigure            Reconfigure a backend, ignoring any saved
                          configuration.

  -upgrade                Install the latest module and provider versions
                          allowed within configured constraints.
""",
    "validate": """Usage: terraform [global options] validate [options]

  Validate the configuration files in a directory, referring only to the
  configuration and not accessing any remote services such as remote state,
  provider APIs, etc.

Options:

  -json        Produce output in a machine-readable JSON format, suitable for
               use in text editor integrations and other automated systems.
               Always disables color.

  -no-color    If specified, output won't contain any color.
""",
    "show": """Usage: terraform [global options] show [options] [path]

  Reads and outputs a Terraform state or plan file in a human-readable
  form. If no path is specified, the current state will be shown.

Options:

  -no-color           If specified, output won't contain any color.
  -json               If specified, output the Terraform plan or state in
                      a machine-readable form.
""",
    "output": """Usage: terraform [global options] output [options] [NAME]

  Reads an output variable from a Terraform state file and prints
  the value. With no additional arguments, output will display all
  the outputs for the root module.  If NAME is not specified, all
  outputs are printed.

Options:

  -state=path      Path to the state file to read. Defaults to
                   "terraform.tfstate". Ignored when remote
                   state is used.

  -no-color        If specified, output won't contain any color.

  -json            If specified, machine readable output will be
                   printed in JSON format.

  -raw             For value types that can be automatically
                   converted to a string, will print the raw
                   string directly, rather than a human-oriented
                   representation of the value.
""",
    "state": """Usage: terraform [global options] state <subcommand> [options] [args]

  This command has subcommands for advanced state management.

  These subcommands can be used to slice and dice the Terraform state.
  This is sometimes necessary in advanced cases. For your safety, all
  state management commands that modify the state create a timestamped
  backup of the state prior to making modifications.

Subcommands:
    identities    List the identities of resources in the state
    list          List resources in the state
    mv            Move an item in the state
    pull          Pull current state and output to stdout
    push          Update remote state from a local state file
    replace-provider    Replace provider in the state
    rm            Remove instances from the state
    show          Show a resource in the state
""",
}


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    argv = list(call.argv)
    chdir = None
    while argv and argv[0].startswith("-"):
        a = argv.pop(0)
        if a.startswith(("-chdir=", "--chdir=")):
            chdir = a.split("=", 1)[1]
        elif a in ("-version", "--version", "-v"):
            argv = ["version", *argv]
            break
        elif a in ("-help", "--help", "-h"):
            ctx.out(HELP, end="")
            return ctx.result(0)
        else:
            return ctx.finish(
                ctx.fail(1, f"Error: Failed to parse command-line flags\n\nflag provided but not defined: {a}")
            )
    if not argv:
        ctx.out(HELP, end="")
        return ctx.result(127)
    cmd = argv.pop(0)
    if cmd not in OPTS:
        return ctx.finish(
            ctx.fail(
                1,
                f'Terraform has no command named "{cmd}".\n\nTo see all of Terraform\'s top-level commands, run:\n  terraform -help\n',
            )
        )
    if argv[:1] and argv[0] in ("-help", "--help", "-h"):
        # terraform COMMAND -help prints the command's usage and succeeds.
        ctx.out(SUBCOMMAND_HELP.get(cmd, f"Usage: terraform [global options] {cmd} [options]\n"), end="")
        return ctx.result(0)
    if cmd in MUTATING:
        ctx.mutating = True
    try:
        parsed = parse_go(argv, OPTS[cmd])
    except ArgError as e:
        if e.kind == "unknown":
            return ctx.finish(
                ctx.fail(
                    1,
                    _diag("Error", "Failed to parse command-line flags", f"flag provided but not defined: {e.flag}")
                    + f"\nFor more help on using this command, run:\n  terraform {cmd} -help",
                )
            )
        return ctx.finish(
            ctx.fail(
                1,
                _diag(
                    "Error",
                    "Failed to parse command-line flags",
                    f"flag needs an argument: {e.flag}" if e.kind == "needs_value" else e.detail,
                ),
            )
        )
    values = TrackedValues(parsed.values, [parsed])
    values["_args"] = parsed.args
    # -input matters only where a value would be prompted for; it is handled either way.
    values.get("input")
    if call.env.get("TF_INPUT") in ("0", "false"):
        values["input"] = False
    if cmd in ("plan", "apply", "destroy") and parsed.args and cmd != "apply":
        return ctx.finish(
            ctx.fail(
                1,
                _diag(
                    "Error",
                    "Too many command line arguments",
                    "To specify a working directory for the plan, use the global -chdir flag.",
                ),
            )
        )
    tf = _TF(ctx, cmd, argv, chdir)
    try:
        if chdir and call.listdir(chdir) is None:
            raise ctx.fail(1, f"Error handling -chdir option: chdir {chdir}: no such file or directory")
        getattr(tf, "do_" + cmd.replace("-", "_"))(values)
    except ToolExit as exc:
        return ctx.finish(exc)
    except hcl.HCLError as exc:
        return ctx.finish(
            ctx.fail(
                1,
                _diag("Error", exc.summary, exc.detail, f"on {exc.filename} line {exc.line}:" if exc.filename else ""),
            )
        )
    return ctx.result(0)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"terraform": run}
