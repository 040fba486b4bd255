"""``aws`` (AWS CLI v2) over an emulated account: S3, IAM, Route 53 and STS (state section ``aws``).

Exit codes and messages follow the CLI v2: 252 for a usage error (unknown option, missing required
argument, invalid choice), 254 for a service error (``An error occurred (NoSuchBucket) when
calling the GetBucketPolicy operation: ...``), 1 for failed high-level ``aws s3`` commands, and
``--dryrun`` on ``aws s3 cp/mv/rm/sync`` prints ``(dryrun) ...`` without changing anything.
Parameters take JSON, shorthand (``Key=Value,Key2=Value2``) or ``file://path``; ``--query`` is
JMESPath (``suite.emulators.jmespath``); ``--output json|text|table|yaml``.

Authored state::

    aws:
      account: "123456789012"
      region: eu-west-1
      identity: ops-automation             # the IAM user the CLI is configured as
      profiles: {prod: {region: eu-west-1}} # optional named profiles (--profile / AWS_PROFILE)
      s3:
        buckets:
          acme-build-artifacts:
            region: eu-west-1
            policy: {Version: "2012-10-17", Statement: [...]}   # or omitted
            public_access_block: {BlockPublicAcls: true, ...}   # or omitted
            versioning: Enabled
            objects: {"releases/2.3.1/app.tar.gz": {size: 1048576}}
      iam:
        users: {deploy-bot: {access_keys: [{id: AKIA..., status: Active}], attached_policies: [AmazonS3FullAccess]}}
        roles: {ci-runner: {attached_policies: [ReadOnlyAccess]}}
      route53:
        zones: {example.com: {records: [{name: api.example.com, type: A, ttl: 300, values: [203.0.113.10]}]}}

Object ids: ``s3/bucket/<bucket>``, ``s3/bucket/<bucket>/object/<key>``, ``iam/user/<name>``,
``iam/user/<name>/access-key/<id>``, ``iam/role/<name>``, ``dns/zone/<zone>``,
``dns/zone/<zone>/record/<TYPE>/<name>`` (names without the trailing dot).
"""

from __future__ import annotations

import copy
import hashlib
import json
import posixpath
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from suite.emulators import jmespath
from suite.emulators.base import (
    Call,
    Ctx,
    NeedInput,
    Result,
    ToolExit,
    glob_match,
    iso,
    parse_time,
    short_hash,
    to_yaml,
)
from suite.emulators.documents import DocumentError, load_json

SECTION = "aws"
USAGE = (
    "usage: aws [options] <command> <subcommand> [<subcommand> ...] [parameters]\n"
    "To see help text, you can run:\n\n  aws help\n  aws <command> help\n  aws <command> <subcommand> help\n"
)
USAGE_ERROR = 252
SERVICE_ERROR = 254
DEFAULT_AGE = timedelta(days=230)
POLICY_ARN = "arn:aws:iam::aws:policy/"


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    section.setdefault("account", "123456789012")
    section.setdefault("region", "us-east-1")
    section.setdefault("identity", "ops-automation")
    section.setdefault("profiles", {})
    born = iso(now - DEFAULT_AGE)
    for name, b in section.setdefault("s3", {}).setdefault("buckets", {}).items():
        b.setdefault("region", section["region"])
        b.setdefault("created", born)
        b.setdefault("acl", "private")
        b.setdefault("tags", {})
        objs = b.setdefault("objects", {})
        for key, o in list(objs.items()):
            if o is None:
                o = objs[key] = {}
            o.setdefault("size", len(o.get("content", "")) if "content" in o else 1024)
            o.setdefault("modified", iso(now - timedelta(days=3)))
            # A single-part upload's ETag is the MD5 of its bytes, so an object authored with content has the
            # ETag an upload of that content gets (a restore from a known-good copy is recognisable).
            seed = o["content"] if "content" in o else f"{name}/{key}/{o['size']}"
            o.setdefault("etag", hashlib.md5(seed.encode(), usedforsecurity=False).hexdigest())
    iam = section.setdefault("iam", {})
    for name, u in iam.setdefault("users", {}).items():
        u.setdefault("created", born)
        u.setdefault("id", "AIDA" + short_hash("user", name, length=17, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"))
        u.setdefault("attached_policies", [])
        u.setdefault("groups", [])
        for k in u.setdefault("access_keys", []):
            k.setdefault("status", "Active")
            k.setdefault("created", born)
    for name, r in iam.setdefault("roles", {}).items():
        r.setdefault("created", born)
        r.setdefault("attached_policies", [])
        r.setdefault("id", "AROA" + short_hash("role", name, length=17, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"))
    for zname, z in section.setdefault("route53", {}).setdefault("zones", {}).items():
        z.setdefault("id", "Z" + short_hash("zone", zname, length=20, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
        z.setdefault("private", False)
        z.setdefault("comment", "")
        records = z.setdefault("records", [])
        have = {(r["type"], _fqdn(r["name"])) for r in records}
        if ("NS", _fqdn(zname)) not in have:
            records.insert(
                0,
                {
                    "name": zname,
                    "type": "NS",
                    "ttl": 172800,
                    "values": [
                        f"ns-{i}.awsdns-{i:02d}.{t}."
                        for i, t in ((512, "net"), (1024, "org"), (1536, "co.uk"), (3, "com"))
                    ],
                },
            )
        if ("SOA", _fqdn(zname)) not in have:
            records.insert(
                1,
                {
                    "name": zname,
                    "type": "SOA",
                    "ttl": 900,
                    "values": ["ns-512.awsdns-00.net. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"],
                },
            )
        for r in records:
            r["name"] = _fqdn(r["name"])
            r.setdefault("ttl", 300)
    return section


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict):
        return ["aws: expected a mapping"]
    problems = [
        f"aws.{k}: unknown key"
        for k in section
        if k not in ("account", "region", "identity", "profiles", "s3", "iam", "route53")
    ]
    for name, b in ((section.get("s3") or {}).get("buckets") or {}).items():
        if not re.match(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", str(name)):
            problems.append(f"aws.s3.buckets.{name}: not a valid S3 bucket name")
        if not isinstance(b, dict):
            problems.append(f"aws.s3.buckets.{name}: expected a mapping")
    for zname, z in ((section.get("route53") or {}).get("zones") or {}).items():
        for i, r in enumerate((z or {}).get("records") or []):
            if not isinstance(r, dict) or not {"name", "type"} <= set(r) or not (r.get("values") or r.get("alias")):
                problems.append(
                    f"aws.route53.zones.{zname}.records[{i}]: a record needs name, type and values (or alias)"
                )
            elif not _fqdn(r["name"]).endswith(_fqdn(zname)):
                problems.append(f"aws.route53.zones.{zname}.records[{i}]: {r['name']!r} is not in the zone")
    return problems


def _fqdn(name: str) -> str:
    return name.rstrip(".") + "."


def _bare(name: str) -> str:
    return name.rstrip(".")


def objects(section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, b in section.get("s3", {}).get("buckets", {}).items():
        bid = f"s3/bucket/{name}"
        out[bid] = {
            k: b.get(k) for k in ("region", "policy", "public_access_block", "versioning", "lifecycle", "acl", "tags")
        }
        for key, o in b.get("objects", {}).items():
            out[f"{bid}/object/{key}"] = {"size": o["size"], "etag": o["etag"], "_owner": bid}
    for name, u in section.get("iam", {}).get("users", {}).items():
        uid = f"iam/user/{name}"
        out[uid] = {"attached_policies": sorted(u["attached_policies"]), "groups": sorted(u["groups"])}
        for k in u["access_keys"]:
            out[f"{uid}/access-key/{k['id']}"] = {"status": k["status"], "_owner": uid}
    for name, r in section.get("iam", {}).get("roles", {}).items():
        out[f"iam/role/{name}"] = {"attached_policies": sorted(r["attached_policies"])}
    for zname, z in section.get("route53", {}).get("zones", {}).items():
        zid = f"dns/zone/{_bare(zname)}"
        out[zid] = {"private": z["private"], "comment": z["comment"]}
        for r in z["records"]:
            value: dict[str, Any] = {"ttl": r.get("ttl"), "values": r.get("values"), "_owner": zid}
            if r.get("alias"):
                value = {"alias": r["alias"], "_owner": zid}
            out[f"{zid}/record/{r['type']}/{_bare(r['name'])}"] = value
    return out


# ---------------------------------------------------------------------------------------------
# Command-line model


class Param:
    def __init__(self, name: str, *, required: bool = False, flag: bool = False, kind: str = "str") -> None:
        self.name = name
        self.required = required
        self.flag = flag  # a boolean switch (--recursive); its --no-x twin is accepted too
        self.kind = kind  # str | json | int | list


def P(name: str, **kw: Any) -> Param:  # noqa: N802 - short constructor for the tables below
    return Param(name, **kw)


GLOBAL_VALUE = (
    "--profile",
    "--region",
    "--output",
    "--query",
    "--endpoint-url",
    "--cli-read-timeout",
    "--cli-connect-timeout",
    "--color",
    "--ca-bundle",
    "--cli-binary-format",
)
GLOBAL_FLAGS = (
    "--debug",
    "--no-verify-ssl",
    "--no-paginate",
    "--no-cli-pager",
    "--no-sign-request",
    "--cli-auto-prompt",
    "--no-cli-auto-prompt",
)

S3_FILTERS = [P("--exclude", kind="list"), P("--include", kind="list")]
S3_COMMANDS: dict[str, list[Param]] = {
    "ls": [
        P("--recursive", flag=True),
        P("--human-readable", flag=True),
        P("--summarize", flag=True),
        P("--page-size", kind="int"),
        P("--request-payer"),
    ],
    "cp": [
        P("--recursive", flag=True),
        P("--dryrun", flag=True),
        P("--quiet", flag=True),
        P("--acl"),
        P("--sse"),
        P("--storage-class"),
        P("--only-show-errors", flag=True),
        P("--content-type"),
        *S3_FILTERS,
    ],
    "mv": [
        P("--recursive", flag=True),
        P("--dryrun", flag=True),
        P("--quiet", flag=True),
        P("--acl"),
        P("--only-show-errors", flag=True),
        *S3_FILTERS,
    ],
    "rm": [
        P("--recursive", flag=True),
        P("--dryrun", flag=True),
        P("--quiet", flag=True),
        P("--only-show-errors", flag=True),
        P("--request-payer"),
        *S3_FILTERS,
    ],
    "sync": [
        P("--delete", flag=True),
        P("--dryrun", flag=True),
        P("--quiet", flag=True),
        P("--acl"),
        P("--size-only", flag=True),
        P("--exact-timestamps", flag=True),
        P("--only-show-errors", flag=True),
        *S3_FILTERS,
    ],
    "mb": [],
    "rb": [P("--force", flag=True)],
    "presign": [P("--expires-in", kind="int")],
}
S3API: dict[str, list[Param]] = {
    "list-buckets": [P("--max-items", kind="int"), P("--prefix")],
    "list-objects-v2": [
        P("--bucket", required=True),
        P("--prefix"),
        P("--delimiter"),
        P("--max-items", kind="int"),
        P("--start-after"),
    ],
    "list-objects": [P("--bucket", required=True), P("--prefix"), P("--delimiter"), P("--max-items", kind="int")],
    "head-bucket": [P("--bucket", required=True)],
    "head-object": [P("--bucket", required=True), P("--key", required=True)],
    "get-object": [P("--bucket", required=True), P("--key", required=True)],
    "put-object": [
        P("--bucket", required=True),
        P("--key", required=True),
        P("--body"),
        P("--acl"),
        P("--content-type"),
    ],
    "delete-object": [P("--bucket", required=True), P("--key", required=True), P("--version-id")],
    "delete-objects": [P("--bucket", required=True), P("--delete", required=True, kind="json")],
    "create-bucket": [P("--bucket", required=True), P("--create-bucket-configuration", kind="json"), P("--acl")],
    "delete-bucket": [P("--bucket", required=True)],
    "get-bucket-location": [P("--bucket", required=True)],
    "get-bucket-policy": [P("--bucket", required=True)],
    "put-bucket-policy": [
        P("--bucket", required=True),
        P("--policy", required=True),
        P("--confirm-remove-self-bucket-access", flag=True),
    ],
    "delete-bucket-policy": [P("--bucket", required=True)],
    "get-bucket-policy-status": [P("--bucket", required=True)],
    "get-public-access-block": [P("--bucket", required=True)],
    "put-public-access-block": [
        P("--bucket", required=True),
        P("--public-access-block-configuration", required=True, kind="json"),
    ],
    "delete-public-access-block": [P("--bucket", required=True)],
    "get-bucket-acl": [P("--bucket", required=True)],
    "put-bucket-acl": [P("--bucket", required=True), P("--acl")],
    "get-bucket-versioning": [P("--bucket", required=True)],
    "put-bucket-versioning": [
        P("--bucket", required=True),
        P("--versioning-configuration", required=True, kind="json"),
        P("--mfa"),
    ],
    "get-bucket-lifecycle-configuration": [P("--bucket", required=True)],
    "put-bucket-lifecycle-configuration": [P("--bucket", required=True), P("--lifecycle-configuration", kind="json")],
    "delete-bucket-lifecycle": [P("--bucket", required=True)],
    "get-bucket-tagging": [P("--bucket", required=True)],
    "put-bucket-tagging": [P("--bucket", required=True), P("--tagging", required=True, kind="json")],
    "delete-bucket-tagging": [P("--bucket", required=True)],
}
IAM: dict[str, list[Param]] = {
    "list-users": [P("--path-prefix"), P("--max-items", kind="int")],
    "get-user": [P("--user-name")],
    "delete-user": [P("--user-name", required=True)],
    "list-access-keys": [P("--user-name")],
    "create-access-key": [P("--user-name")],
    "update-access-key": [P("--access-key-id", required=True), P("--status", required=True), P("--user-name")],
    "delete-access-key": [P("--access-key-id", required=True), P("--user-name")],
    "get-access-key-last-used": [P("--access-key-id", required=True)],
    "list-attached-user-policies": [P("--user-name", required=True)],
    "attach-user-policy": [P("--user-name", required=True), P("--policy-arn", required=True)],
    "detach-user-policy": [P("--user-name", required=True), P("--policy-arn", required=True)],
    "list-groups-for-user": [P("--user-name", required=True)],
    "list-roles": [P("--path-prefix"), P("--max-items", kind="int")],
    "get-role": [P("--role-name", required=True)],
    "delete-role": [P("--role-name", required=True)],
    "list-attached-role-policies": [P("--role-name", required=True)],
    "attach-role-policy": [P("--role-name", required=True), P("--policy-arn", required=True)],
    "detach-role-policy": [P("--role-name", required=True), P("--policy-arn", required=True)],
    "list-account-aliases": [],
}
ROUTE53: dict[str, list[Param]] = {
    "list-hosted-zones": [P("--max-items", kind="int")],
    "list-hosted-zones-by-name": [P("--dns-name"), P("--max-items", kind="int")],
    "get-hosted-zone": [P("--id", required=True)],
    "list-resource-record-sets": [
        P("--hosted-zone-id", required=True),
        P("--start-record-name"),
        P("--start-record-type"),
        P("--max-items", kind="int"),
    ],
    "change-resource-record-sets": [
        P("--hosted-zone-id", required=True),
        P("--change-batch", required=True, kind="json"),
    ],
    "get-change": [P("--id", required=True)],
    "delete-hosted-zone": [P("--id", required=True)],
    "create-hosted-zone": [
        P("--name", required=True),
        P("--caller-reference", required=True),
        P("--hosted-zone-config", kind="json"),
    ],
}
STS: dict[str, list[Param]] = {"get-caller-identity": []}
SERVICES: dict[str, dict[str, list[Param]]] = {
    "s3": S3_COMMANDS,
    "s3api": S3API,
    "iam": IAM,
    "route53": ROUTE53,
    "sts": STS,
}
OTHER_SERVICES = (
    "accessanalyzer",
    "acm",
    "apigateway",
    "autoscaling",
    "cloudformation",
    "cloudfront",
    "cloudtrail",
    "cloudwatch",
    "configure",
    "dynamodb",
    "ec2",
    "ecr",
    "ecs",
    "eks",
    "elb",
    "elbv2",
    "events",
    "kms",
    "lambda",
    "logs",
    "rds",
    "secretsmanager",
    "sns",
    "sqs",
    "ssm",
)
READ_PREFIXES = ("list-", "get-", "head-", "describe-")
S3_MUTATING = {"cp", "mv", "rm", "sync", "mb", "rb"}


class AwsError(Exception):
    def __init__(self, code: str, operation: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.operation = operation
        self.message = message


def _op_name(cmd: str) -> str:
    return "".join(part.capitalize() for part in cmd.split("-")).replace("V2", "V2")


class _Aws:
    def __init__(
        self, ctx: Ctx, service: str, command: str, params: dict[str, Any], pos: list[str], opts: dict[str, Any]
    ) -> None:
        self.ctx = ctx
        self.s: dict[str, Any] = ctx.state[SECTION]
        self.service = service
        self.command = command
        self.params = params
        self.pos = pos
        self.opts = opts
        self.now = ctx.call.now
        profile = opts.get("--profile") or ctx.call.env.get("AWS_PROFILE") or "default"
        profiles = self.s.get("profiles", {})
        if profile != "default" and profile not in profiles:
            raise ctx.fail(255, f"\nThe config profile ({profile}) could not be found")
        self.region = (
            opts.get("--region")
            or ctx.call.env.get("AWS_REGION")
            or ctx.call.env.get("AWS_DEFAULT_REGION")
            or profiles.get(profile, {}).get("region")
            or self.s["region"]
        )
        if opts.get("--endpoint-url"):
            url = opts["--endpoint-url"]
            raise ctx.fail(255, f'\nCould not connect to the endpoint URL: "{url}"')

    @property
    def buckets(self) -> dict[str, Any]:
        return dict(self.s["s3"]["buckets"])

    def bucket(self, name: str, op: str) -> dict[str, Any]:
        b = self.s["s3"]["buckets"].get(name)
        if b is None:
            raise AwsError("NoSuchBucket", op, "The specified bucket does not exist")
        self.ctx.saw(f"s3/bucket/{name}")
        return dict(b) if False else b

    def out(self, data: Any) -> None:
        query = self.opts.get("--query")
        if query:
            try:
                data = jmespath.search(query, data)
            except jmespath.JMESPathError as exc:
                raise self.ctx.fail(USAGE_ERROR, f"\n{exc}") from None
        fmt = self.opts.get("--output") or self.ctx.call.env.get("AWS_DEFAULT_OUTPUT") or "json"
        if data is None and not query:
            return
        if fmt == "json":
            self.ctx.out(json.dumps(data, indent=4, ensure_ascii=False))
        elif fmt == "yaml":
            self.ctx.out(to_yaml(data), end="")
        elif fmt == "text":
            self.ctx.out(_text(data))
        elif fmt == "table":
            self.ctx.out(table_output(_op_name(self.command), data), end="")
        else:
            raise self.ctx.fail(
                USAGE_ERROR,
                f"{USAGE}\naws: error: argument --output: Invalid choice, valid choices are:\n\njson                                     | text\ntable                                    | yaml\nyaml-stream",
            )

    def json_param(self, name: str) -> Any:
        raw = self.params.get(name)
        if raw is None:
            return None
        if isinstance(raw, str) and raw.startswith(("file://", "fileb://")):
            path = raw.split("://", 1)[1]
            f = self.ctx.call.file(path)
            if f.error:
                raise self.ctx.fail(
                    USAGE_ERROR,
                    f"\nError parsing parameter '{name}': Unable to load paramfile {raw}: [Errno 2] No such file or directory: '{path}'",
                )
            raw = f.content or ""
        text = raw.strip()
        if text.startswith(("{", "[")):
            try:
                return load_json(text)
            except DocumentError as exc:
                raise self.ctx.fail(
                    USAGE_ERROR, f"\nError parsing parameter '{name}': Invalid JSON: {exc}\nJSON received: {text}"
                ) from None
        return _shorthand(text)

    def text_param(self, name: str) -> str | None:
        raw = self.params.get(name)
        if isinstance(raw, str) and raw.startswith(("file://", "fileb://")):
            path = raw.split("://", 1)[1]
            f = self.ctx.call.file(path)
            if f.error:
                raise self.ctx.fail(
                    USAGE_ERROR,
                    f"\nError parsing parameter '{name}': Unable to load paramfile {raw}: [Errno 2] No such file or directory: '{path}'",
                )
            return f.content or ""
        return raw

    def run(self) -> None:
        handler = getattr(self, f"{self.service}_{self.command.replace('-', '_')}")
        handler()

    # -- STS ------------------------------------------------------------------------------

    def sts_get_caller_identity(self) -> None:
        u = self.s["iam"]["users"].get(self.s["identity"], {})
        self.out(
            {
                "UserId": u.get(
                    "id",
                    "AIDA" + short_hash(self.s["identity"], length=17, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
                ),
                "Account": self.s["account"],
                "Arn": f"arn:aws:iam::{self.s['account']}:user/{self.s['identity']}",
            }
        )

    # -- S3 high level --------------------------------------------------------------------

    def _s3url(self, url: str) -> tuple[str, str] | None:
        if not url.startswith("s3://"):
            return None
        rest = url[5:]
        bucket, _, key = rest.partition("/")
        return bucket, key

    def _filtered(self, keys: list[str], prefix: str) -> list[str]:
        """--exclude/--include in order, last match wins (relative to the prefix), default include."""
        rules: list[tuple[str, str]] = []
        argv = self.ctx.call.argv
        for i, a in enumerate(argv):
            if a in ("--exclude", "--include") and i + 1 < len(argv):
                rules.append((a, argv[i + 1]))
            elif a.startswith(("--exclude=", "--include=")):
                flag, _, pat = a.partition("=")
                rules.append((flag, pat))
        out = []
        for k in keys:
            rel = k[len(prefix) :] if k.startswith(prefix) else k
            keep = True
            for flag, pat in rules:
                if glob_match(pat, rel):
                    keep = flag == "--include"
            if keep:
                out.append(k)
        return out

    def _list_keys(self, bucket: str, prefix: str, recursive: bool) -> list[str]:
        b = self.bucket(bucket, "ListObjectsV2")
        keys = sorted(k for k in b["objects"] if k.startswith(prefix))
        if recursive:
            return keys
        return keys

    def s3_ls(self) -> None:
        if not self.pos:
            for name, b in sorted(self.buckets.items()):
                self.ctx.saw(f"s3/bucket/{name}")
                self.ctx.out(f"{_ls_time(b['created'])} {name}")
            return
        target = self._s3url(self.pos[0] if self.pos[0].startswith("s3://") else "s3://" + self.pos[0])
        assert target is not None
        bucket, prefix = target
        b = self.bucket(bucket, "ListObjectsV2")
        recursive = self.params.get("--recursive")
        total = 0
        count = 0
        dirs: set[str] = set()
        lines = []
        for key in sorted(b["objects"]):
            if not key.startswith(prefix):
                continue
            rest = key[len(prefix) :]
            if not recursive and "/" in rest:
                dirs.add(rest.split("/", 1)[0] + "/")
                continue
            o = b["objects"][key]
            size = _human(o["size"]) if self.params.get("--human-readable") else str(o["size"])
            lines.append(f"{_ls_time(o['modified'])} {size:>10} {key if recursive else rest}")
            total += o["size"]
            count += 1
        for d in sorted(dirs):
            self.ctx.out(f"{'PRE':>30} {d}")
        for line in lines:
            self.ctx.out(line)
        if self.params.get("--summarize"):
            self.ctx.out(
                f"\nTotal Objects: {count}\n   Total Size: {_human(total) if self.params.get('--human-readable') else total}"
            )
        if not lines and not dirs and prefix:
            raise ToolExit(1)

    def s3_presign(self) -> None:
        if len(self.pos) != 1 or not self.pos[0].startswith("s3://"):
            raise self.ctx.fail(USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: path")
        bucket, key = self._s3url(self.pos[0]) or ("", "")
        expires = self.params.get("--expires-in") or 3600
        if not 1 <= expires <= 604800:
            raise self.ctx.fail(USAGE_ERROR, "\nPresigned URLs expire after at most 604800 seconds (seven days)")
        date = self.now.strftime("%Y%m%d")
        stamp = self.now.strftime("%Y%m%dT%H%M%SZ")
        sig = hashlib.sha256(f"{bucket}/{key}/{expires}/{stamp}".encode()).hexdigest()
        region = self.s["s3"]["buckets"].get(bucket, {}).get("region", self.region)
        cred = f"AKIA{short_hash(self.s['identity'], length=16, alphabet='ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')}"
        self.ctx.out(
            f"https://{bucket}.s3.{region}.amazonaws.com/{key}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={cred}%2F{date}%2F{region}%2Fs3%2Faws4_request&X-Amz-Date={stamp}&X-Amz-Expires={expires}&X-Amz-SignedHeaders=host&X-Amz-Signature={sig}"
        )

    def s3_mb(self) -> None:
        self.ctx.mutating = True
        if len(self.pos) != 1:
            raise self.ctx.fail(USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: path")
        bucket = (self._s3url(self.pos[0]) or (self.pos[0], ""))[0]
        if bucket in self.s["s3"]["buckets"]:
            raise self.ctx.fail(
                1,
                f"make_bucket failed: s3://{bucket} An error occurred (BucketAlreadyOwnedByYou) when calling the CreateBucket operation: Your previous request to create the named bucket succeeded and you already own it.",
            )
        self.s["s3"]["buckets"][bucket] = {
            "region": self.region,
            "created": iso(self.now),
            "acl": "private",
            "tags": {},
            "objects": {},
            "public_access_block": {
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        }
        self.ctx.out(f"make_bucket: {bucket}")

    def s3_rb(self) -> None:
        self.ctx.mutating = True
        if len(self.pos) != 1:
            raise self.ctx.fail(USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: path")
        bucket = (self._s3url(self.pos[0]) or (self.pos[0], ""))[0]
        b = self.s["s3"]["buckets"].get(bucket)
        if b is None:
            raise self.ctx.fail(
                1,
                f"remove_bucket failed: s3://{bucket} An error occurred (NoSuchBucket) when calling the DeleteBucket operation: The specified bucket does not exist",
            )
        if b["objects"] and not self.params.get("--force"):
            raise self.ctx.fail(
                1,
                f"remove_bucket failed: s3://{bucket} An error occurred (BucketNotEmpty) when calling the DeleteBucket operation: The bucket you tried to delete is not empty",
            )
        for key in sorted(b["objects"]):
            self.ctx.out(f"delete: s3://{bucket}/{key}")
        del self.s["s3"]["buckets"][bucket]
        self.ctx.out(f"remove_bucket: {bucket}")

    def s3_rm(self) -> None:
        self.ctx.mutating = True
        dry = bool(self.params.get("--dryrun"))
        self.ctx.dry_run = dry
        if len(self.pos) != 1 or not self.pos[0].startswith("s3://"):
            raise self.ctx.fail(
                USAGE_ERROR,
                f"{USAGE}\naws: error: the following arguments are required: paths"
                if not self.pos
                else "\nrm: S3 path must start with s3://",
            )
        bucket, key = self._s3url(self.pos[0]) or ("", "")
        b = self.s["s3"]["buckets"].get(bucket)
        if b is None:
            raise self.ctx.fail(
                1,
                "fatal error: An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation: The specified bucket does not exist",
            )
        if self.params.get("--recursive"):
            victims = self._filtered(sorted(k for k in b["objects"] if k.startswith(key)), key)
        else:
            victims = [key]
        prefix = "(dryrun) " if dry else ""
        for k in victims:
            if not self.params.get("--quiet"):
                self.ctx.out(f"{prefix}delete: s3://{bucket}/{k}")
            if not dry:
                b["objects"].pop(k, None)

    def _put(self, bucket: str, key: str, size: int, content: str | None) -> None:
        b = self.s["s3"]["buckets"][bucket]
        etag = hashlib.md5(f"{content if content is not None else size}".encode(), usedforsecurity=False).hexdigest()
        entry: dict[str, Any] = {"size": size, "modified": iso(self.now), "etag": etag}
        if content is not None:
            entry["content"] = content
        b["objects"][key] = entry

    def _walk_local(self, path: str) -> list[str]:
        """Files under a local directory (relative paths), asking the shim one level at a time."""
        out: list[str] = []
        pending = [""]
        while pending:
            rel = pending.pop()
            entries = self.ctx.call.listdir(posixpath.join(path, rel) if rel else path)
            for e in entries or []:
                sub = f"{rel}/{e.name}" if rel else e.name
                if e.type == "dir":
                    pending.append(sub)
                elif e.type == "file":
                    out.append(sub)
        return sorted(out)

    def s3_cp(self, move: bool = False, sync: bool = False) -> None:
        self.ctx.mutating = True
        dry = bool(self.params.get("--dryrun"))
        self.ctx.dry_run = dry
        word = "move" if move else "copy"
        if len(self.pos) != 2:
            raise self.ctx.fail(USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: paths")
        src, dst = self.pos
        s_src, s_dst = self._s3url(src), self._s3url(dst)
        if s_src is None and s_dst is None:
            raise self.ctx.fail(USAGE_ERROR, "\nError: Invalid argument type")
        recursive = bool(self.params.get("--recursive")) or sync
        prefix = "(dryrun) " if dry else ""
        plan: list[tuple[str, str, str]] = []  # (kind, source, destination)
        if s_src is not None:
            b = self.s["s3"]["buckets"].get(s_src[0])
            if b is None:
                raise self.ctx.fail(
                    1,
                    "fatal error: An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation: The specified bucket does not exist",
                )
            if recursive:
                base = s_src[1]
                keys = self._filtered(sorted(k for k in b["objects"] if k.startswith(base)), base)
                pairs = [(k, k[len(base) :].lstrip("/")) for k in keys]
            else:
                if s_src[1] not in b["objects"]:
                    raise self.ctx.fail(
                        1,
                        f'fatal error: An error occurred (404) when calling the HeadObject operation: Key "{s_src[1]}" does not exist',
                    )
                pairs = [(s_src[1], posixpath.basename(s_src[1]))]
            for key, rel in pairs:
                if s_dst is not None:
                    if s_dst[0] not in self.s["s3"]["buckets"]:
                        raise self.ctx.fail(
                            1,
                            f"{word} failed: s3://{s_src[0]}/{key} to {dst} An error occurred (NoSuchBucket) when calling the CopyObject operation: The specified bucket does not exist",
                        )
                    dkey = (
                        posixpath.join(s_dst[1], rel)
                        if (recursive or s_dst[1].endswith("/") or not s_dst[1])
                        else s_dst[1]
                    )
                    plan.append(("s3", f"s3://{s_src[0]}/{key}", f"s3://{s_dst[0]}/{dkey}"))
                else:
                    local = posixpath.join(dst, rel) if (recursive or dst.endswith("/") or dst in (".", "./")) else dst
                    plan.append(("download", f"s3://{s_src[0]}/{key}", local))
        else:
            assert s_dst is not None
            if s_dst[0] not in self.s["s3"]["buckets"]:
                raise self.ctx.fail(
                    1,
                    f"upload failed: {src} to {dst} An error occurred (NoSuchBucket) when calling the PutObject operation: The specified bucket does not exist",
                )
            if recursive:
                files = self._filtered(self._walk_local(src), "")
                for rel in files:
                    plan.append(
                        ("upload", posixpath.join(src, rel), f"s3://{s_dst[0]}/{posixpath.join(s_dst[1], rel)}")
                    )
            else:
                f = self.ctx.call.file(src)
                if f.error:
                    raise self.ctx.fail(USAGE_ERROR, f"\nThe user-provided path {src} does not exist.")
                dkey = (
                    posixpath.join(s_dst[1], posixpath.basename(src))
                    if (not s_dst[1] or s_dst[1].endswith("/"))
                    else s_dst[1]
                )
                plan.append(("upload", src, f"s3://{s_dst[0]}/{dkey}"))
        if sync and self.params.get("--delete") and s_dst is not None:
            wanted = {d for _, _, d in plan}
            base = s_dst[1]
            for key in sorted(self.s["s3"]["buckets"][s_dst[0]]["objects"]):
                if key.startswith(base) and f"s3://{s_dst[0]}/{key}" not in wanted:
                    plan.append(("delete", "", f"s3://{s_dst[0]}/{key}"))
        for kind, source, target in plan:
            label = {
                "s3": word if not sync else "copy",
                "download": "download" if not move else "move",
                "upload": "upload" if not move else "move",
                "delete": "delete",
            }[kind]
            if not self.params.get("--quiet"):
                self.ctx.out(
                    f"{prefix}{label}: {source} to {target}" if kind != "delete" else f"{prefix}delete: {target}"
                )
            if dry:
                continue
            if kind == "delete":
                tb, tk = self._s3url(target) or ("", "")
                self.s["s3"]["buckets"][tb]["objects"].pop(tk, None)
                continue
            if kind in ("s3", "download"):
                sb, sk = self._s3url(source) or ("", "")
                obj = self.s["s3"]["buckets"][sb]["objects"][sk]
                if kind == "s3":
                    tb, tk = self._s3url(target) or ("", "")
                    self.s["s3"]["buckets"][tb]["objects"][tk] = {**copy.deepcopy(obj), "modified": iso(self.now)}
                else:
                    self.ctx.writes[target] = obj.get("content", f"(object {sk}, {obj['size']} bytes)\n")
                if move:
                    self.s["s3"]["buckets"][sb]["objects"].pop(sk, None)
            else:
                data = self.ctx.call.file(source)
                content = data.content or ""
                tb, tk = self._s3url(target) or ("", "")
                self._put(tb, tk, len(content.encode()), content)
        if move and any(k == "upload" for k, _, _ in plan):
            self.ctx.err("warning: the local files were not removed: this environment keeps the workspace intact")

    def s3_mv(self) -> None:
        self.s3_cp(move=True)

    def s3_sync(self) -> None:
        self.s3_cp(sync=True)

    # -- S3 API ---------------------------------------------------------------------------

    def s3api_list_buckets(self) -> None:
        for n in self.buckets:
            self.ctx.saw(f"s3/bucket/{n}")
        self.out(
            {
                "Buckets": [
                    {"Name": n, "CreationDate": b["created"].replace("Z", "+00:00")}
                    for n, b in sorted(self.buckets.items())
                ],
                "Owner": {"DisplayName": "acme-aws", "ID": short_hash(self.s["account"], length=64)},
            }
        )

    def s3api_list_objects_v2(self) -> None:
        b = self.bucket(self.params["--bucket"], "ListObjectsV2")
        prefix = self.params.get("--prefix") or ""
        contents = [
            {
                "Key": k,
                "LastModified": o["modified"].replace("Z", "+00:00"),
                "ETag": f'"{o["etag"]}"',
                "Size": o["size"],
                "StorageClass": "STANDARD",
            }
            for k, o in sorted(b["objects"].items())
            if k.startswith(prefix)
        ]
        max_items = self.params.get("--max-items")
        data: dict[str, Any] = {}
        if contents:
            data["Contents"] = contents[:max_items] if max_items else contents
        data["RequestCharged"] = None
        if max_items and len(contents) > max_items:
            data["NextToken"] = "eyJDb250aW51YXRpb25Ub2tlbiI6IG51bGx9"
        self.out(data)

    def s3api_list_objects(self) -> None:
        self.s3api_list_objects_v2()

    def s3api_head_bucket(self) -> None:
        b = self.s["s3"]["buckets"].get(self.params["--bucket"])
        if b is None:
            raise AwsError("404", "HeadBucket", "Not Found")
        self.ctx.saw(f"s3/bucket/{self.params['--bucket']}")
        self.out({"BucketRegion": b["region"], "AccessPointAlias": False})

    def _object(self, op: str) -> dict[str, Any]:
        b = self.bucket(self.params["--bucket"], op)
        o = b["objects"].get(self.params["--key"])
        if o is None:
            if op == "HeadObject":
                raise AwsError("404", op, "Not Found")
            raise AwsError("NoSuchKey", op, "The specified key does not exist.")
        self.ctx.saw(f"s3/bucket/{self.params['--bucket']}/object/{self.params['--key']}")
        return dict(o)

    def s3api_head_object(self) -> None:
        o = self._object("HeadObject")
        self.out(
            {
                "AcceptRanges": "bytes",
                "LastModified": _http_time(o["modified"]),
                "ContentLength": o["size"],
                "ETag": f'"{o["etag"]}"',
                "ContentType": "binary/octet-stream",
                "ServerSideEncryption": "AES256",
                "Metadata": {},
            }
        )

    def s3api_get_object(self) -> None:
        if not self.pos:
            raise self.ctx.fail(USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: outfile")
        o = self._object("GetObject")
        self.ctx.writes[self.pos[0]] = o.get("content", f"(object {self.params['--key']}, {o['size']} bytes)\n")
        self.out(
            {
                "AcceptRanges": "bytes",
                "LastModified": _http_time(o["modified"]),
                "ContentLength": o["size"],
                "ETag": f'"{o["etag"]}"',
                "ContentType": "binary/octet-stream",
                "ServerSideEncryption": "AES256",
                "Metadata": {},
            }
        )

    def s3api_put_object(self) -> None:
        self.bucket(self.params["--bucket"], "PutObject")
        content = ""
        if self.params.get("--body"):
            f = self.ctx.call.file(self.params["--body"])
            if f.error:
                raise self.ctx.fail(255, "\nError parsing parameter '--body': Blob values must be a path to a file.")
            content = f.content or ""
        self._put(self.params["--bucket"], self.params["--key"], len(content.encode()), content)
        o = self.s["s3"]["buckets"][self.params["--bucket"]]["objects"][self.params["--key"]]
        self.out({"ETag": f'"{o["etag"]}"', "ServerSideEncryption": "AES256"})

    def s3api_delete_object(self) -> None:
        b = self.bucket(self.params["--bucket"], "DeleteObject")
        b["objects"].pop(self.params["--key"], None)

    def s3api_delete_objects(self) -> None:
        b = self.bucket(self.params["--bucket"], "DeleteObjects")
        spec = self.json_param("--delete") or {}
        deleted = []
        for item in spec.get("Objects", []) if isinstance(spec, dict) else []:
            key = item.get("Key") if isinstance(item, dict) else None
            if key:
                b["objects"].pop(key, None)
                deleted.append({"Key": key})
        self.out({"Deleted": deleted})

    def s3api_create_bucket(self) -> None:
        name = self.params["--bucket"]
        if name in self.s["s3"]["buckets"]:
            raise AwsError(
                "BucketAlreadyOwnedByYou",
                "CreateBucket",
                "Your previous request to create the named bucket succeeded and you already own it.",
            )
        cfg = self.json_param("--create-bucket-configuration") or {}
        region = cfg.get("LocationConstraint", "us-east-1") if isinstance(cfg, dict) else "us-east-1"
        self.s["s3"]["buckets"][name] = {
            "region": region,
            "created": iso(self.now),
            "acl": self.params.get("--acl") or "private",
            "tags": {},
            "objects": {},
            "public_access_block": {
                "BlockPublicAcls": True,
                "IgnorePublicAcls": True,
                "BlockPublicPolicy": True,
                "RestrictPublicBuckets": True,
            },
        }
        self.out({"Location": f"http://{name}.s3.amazonaws.com/" if region != "us-east-1" else f"/{name}"})

    def s3api_delete_bucket(self) -> None:
        b = self.bucket(self.params["--bucket"], "DeleteBucket")
        if b["objects"]:
            raise AwsError("BucketNotEmpty", "DeleteBucket", "The bucket you tried to delete is not empty")
        del self.s["s3"]["buckets"][self.params["--bucket"]]

    def s3api_get_bucket_location(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetBucketLocation")
        self.out({"LocationConstraint": None if b["region"] == "us-east-1" else b["region"]})

    def s3api_get_bucket_policy(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetBucketPolicy")
        if not b.get("policy"):
            raise AwsError("NoSuchBucketPolicy", "GetBucketPolicy", "The bucket policy does not exist")
        self.out({"Policy": json.dumps(b["policy"], separators=(",", ":"))})

    def s3api_put_bucket_policy(self) -> None:
        b = self.bucket(self.params["--bucket"], "PutBucketPolicy")
        text = self.text_param("--policy") or ""
        if not text.strip().startswith("{"):
            raise AwsError(
                "MalformedPolicy", "PutBucketPolicy", "Policies must be valid JSON and the first byte must be '{'"
            )
        try:
            policy = load_json(text)
        except DocumentError:
            raise AwsError(
                "MalformedPolicy", "PutBucketPolicy", "Policies must be valid JSON and the first byte must be '{'"
            ) from None
        problem = _policy_problem(policy, self.params["--bucket"])
        if problem:
            raise AwsError("MalformedPolicy", "PutBucketPolicy", problem)
        pab = b.get("public_access_block") or {}
        if pab.get("BlockPublicPolicy") and _is_public(policy):
            raise AwsError(
                "AccessDenied",
                "PutBucketPolicy",
                f'User: arn:aws:iam::{self.s["account"]}:user/{self.s["identity"]} is not authorized to perform: s3:PutBucketPolicy on resource: "arn:aws:s3:::{self.params["--bucket"]}" because public policies are blocked by the BlockPublicPolicy block public access setting.',
            )
        b["policy"] = policy

    def s3api_delete_bucket_policy(self) -> None:
        b = self.bucket(self.params["--bucket"], "DeleteBucketPolicy")
        b.pop("policy", None)

    def s3api_get_bucket_policy_status(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetBucketPolicyStatus")
        if not b.get("policy"):
            raise AwsError("NoSuchBucketPolicy", "GetBucketPolicyStatus", "The bucket policy does not exist")
        pab = b.get("public_access_block") or {}
        self.out({"PolicyStatus": {"IsPublic": _is_public(b["policy"]) and not pab.get("RestrictPublicBuckets")}})

    def s3api_get_public_access_block(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetPublicAccessBlock")
        if not b.get("public_access_block"):
            raise AwsError(
                "NoSuchPublicAccessBlockConfiguration",
                "GetPublicAccessBlock",
                "The public access block configuration was not found",
            )
        self.out({"PublicAccessBlockConfiguration": b["public_access_block"]})

    def s3api_put_public_access_block(self) -> None:
        b = self.bucket(self.params["--bucket"], "PutPublicAccessBlock")
        cfg = self.json_param("--public-access-block-configuration")
        keys = ("BlockPublicAcls", "IgnorePublicAcls", "BlockPublicPolicy", "RestrictPublicBuckets")
        if not isinstance(cfg, dict) or any(k not in keys for k in cfg):
            bad = next((k for k in (cfg or {}) if k not in keys), "") if isinstance(cfg, dict) else ""
            raise self.ctx.fail(
                USAGE_ERROR,
                f'\nParameter validation failed:\nUnknown parameter in PublicAccessBlockConfiguration: "{bad}", must be one of: {", ".join(keys)}',
            )
        b["public_access_block"] = {k: _as_bool(cfg.get(k, False)) for k in keys}

    def s3api_delete_public_access_block(self) -> None:
        b = self.bucket(self.params["--bucket"], "DeletePublicAccessBlock")
        b.pop("public_access_block", None)

    def s3api_get_bucket_acl(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetBucketAcl")
        owner = {"DisplayName": "acme-aws", "ID": short_hash(self.s["account"], length=64)}
        grants = [{"Grantee": {**owner, "Type": "CanonicalUser"}, "Permission": "FULL_CONTROL"}]
        if b["acl"] in ("public-read", "public-read-write"):
            grants.append(
                {
                    "Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
                    "Permission": "READ",
                }
            )
        self.out({"Owner": owner, "Grants": grants})

    def s3api_put_bucket_acl(self) -> None:
        b = self.bucket(self.params["--bucket"], "PutBucketAcl")
        acl = self.params.get("--acl") or "private"
        if acl not in ("private", "public-read", "public-read-write", "authenticated-read"):
            raise self.ctx.fail(
                USAGE_ERROR,
                f"{USAGE}\naws: error: argument --acl: Invalid choice, valid choices are:\n\nprivate                                  | public-read\npublic-read-write                        | authenticated-read",
            )
        if acl.startswith("public") and (b.get("public_access_block") or {}).get("BlockPublicAcls"):
            raise AwsError("AccessDenied", "PutBucketAcl", "Access Denied")
        b["acl"] = acl

    def s3api_get_bucket_versioning(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetBucketVersioning")
        self.out({"Status": b["versioning"]} if b.get("versioning") else {})

    def s3api_put_bucket_versioning(self) -> None:
        b = self.bucket(self.params["--bucket"], "PutBucketVersioning")
        cfg = self.json_param("--versioning-configuration")
        status = cfg.get("Status") if isinstance(cfg, dict) else None
        if status not in ("Enabled", "Suspended"):
            raise AwsError(
                "MalformedXML",
                "PutBucketVersioning",
                "The XML you provided was not well-formed or did not validate against our published schema",
            )
        b["versioning"] = status

    def s3api_get_bucket_lifecycle_configuration(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetBucketLifecycleConfiguration")
        if not b.get("lifecycle"):
            raise AwsError(
                "NoSuchLifecycleConfiguration",
                "GetBucketLifecycleConfiguration",
                "The lifecycle configuration does not exist",
            )
        self.out({"TransitionDefaultMinimumObjectSize": "all_storage_classes_128K", "Rules": b["lifecycle"]})

    def s3api_put_bucket_lifecycle_configuration(self) -> None:
        b = self.bucket(self.params["--bucket"], "PutBucketLifecycleConfiguration")
        cfg = self.json_param("--lifecycle-configuration")
        rules = cfg.get("Rules") if isinstance(cfg, dict) else None
        if not isinstance(rules, list) or not rules:
            raise AwsError(
                "MalformedXML",
                "PutBucketLifecycleConfiguration",
                "The XML you provided was not well-formed or did not validate against our published schema",
            )
        b["lifecycle"] = rules
        self.out({"TransitionDefaultMinimumObjectSize": "all_storage_classes_128K"})

    def s3api_delete_bucket_lifecycle(self) -> None:
        b = self.bucket(self.params["--bucket"], "DeleteBucketLifecycle")
        b.pop("lifecycle", None)

    def s3api_get_bucket_tagging(self) -> None:
        b = self.bucket(self.params["--bucket"], "GetBucketTagging")
        if not b.get("tags"):
            raise AwsError("NoSuchTagSet", "GetBucketTagging", "The TagSet does not exist")
        self.out({"TagSet": [{"Key": k, "Value": v} for k, v in b["tags"].items()]})

    def s3api_put_bucket_tagging(self) -> None:
        b = self.bucket(self.params["--bucket"], "PutBucketTagging")
        cfg = self.json_param("--tagging")
        tags = cfg.get("TagSet") if isinstance(cfg, dict) else None
        if not isinstance(tags, list):
            raise AwsError(
                "MalformedXML",
                "PutBucketTagging",
                "The XML you provided was not well-formed or did not validate against our published schema",
            )
        b["tags"] = {t["Key"]: t["Value"] for t in tags if isinstance(t, dict) and "Key" in t}

    def s3api_delete_bucket_tagging(self) -> None:
        b = self.bucket(self.params["--bucket"], "DeleteBucketTagging")
        b["tags"] = {}

    # -- IAM ------------------------------------------------------------------------------

    def _user(self, name: str | None, op: str) -> tuple[str, dict[str, Any]]:
        name = name or self.s["identity"]
        u = self.s["iam"]["users"].get(name)
        if u is None:
            raise AwsError("NoSuchEntity", op, f"The user with name {name} cannot be found.")
        self.ctx.saw(f"iam/user/{name}")
        return name, u

    def _user_json(self, name: str, u: dict[str, Any]) -> dict[str, Any]:
        return {
            "Path": "/",
            "UserName": name,
            "UserId": u["id"],
            "Arn": f"arn:aws:iam::{self.s['account']}:user/{name}",
            "CreateDate": u["created"].replace("Z", "+00:00"),
        }

    def iam_list_account_aliases(self) -> None:
        self.out({"AccountAliases": [self.s.get("alias", "acme")]})

    def iam_list_users(self) -> None:
        for n in self.s["iam"]["users"]:
            self.ctx.saw(f"iam/user/{n}")
        self.out({"Users": [self._user_json(n, u) for n, u in sorted(self.s["iam"]["users"].items())]})

    def iam_get_user(self) -> None:
        name, u = self._user(self.params.get("--user-name"), "GetUser")
        self.out({"User": self._user_json(name, u)})

    def iam_delete_user(self) -> None:
        name, u = self._user(self.params["--user-name"], "DeleteUser")
        if u["access_keys"]:
            raise AwsError("DeleteConflict", "DeleteUser", "Cannot delete entity, must delete access keys first.")
        if u["attached_policies"]:
            raise AwsError("DeleteConflict", "DeleteUser", "Cannot delete entity, must detach all policies first.")
        if u["groups"]:
            raise AwsError("DeleteConflict", "DeleteUser", "Cannot delete entity, must remove users from group first.")
        del self.s["iam"]["users"][name]

    def _key(self, key_id: str, user: str | None, op: str) -> tuple[str, dict[str, Any]]:
        for name, u in sorted(self.s["iam"]["users"].items()):
            if user and name != user:
                continue
            for k in u["access_keys"]:
                if k["id"] == key_id:
                    self.ctx.saw(f"iam/user/{name}/access-key/{key_id}")
                    return name, k
        if user and user not in self.s["iam"]["users"]:
            raise AwsError("NoSuchEntity", op, f"The user with name {user} cannot be found.")
        raise AwsError("NoSuchEntity", op, f"The Access Key with id {key_id} cannot be found.")

    def iam_list_access_keys(self) -> None:
        name, u = self._user(self.params.get("--user-name"), "ListAccessKeys")
        for k in u["access_keys"]:
            self.ctx.saw(f"iam/user/{name}/access-key/{k['id']}")
        self.out(
            {
                "AccessKeyMetadata": [
                    {
                        "UserName": name,
                        "AccessKeyId": k["id"],
                        "Status": k["status"],
                        "CreateDate": k["created"].replace("Z", "+00:00"),
                    }
                    for k in u["access_keys"]
                ]
            }
        )

    def iam_get_access_key_last_used(self) -> None:
        name, k = self._key(self.params["--access-key-id"], None, "GetAccessKeyLastUsed")
        used = k.get("last_used")
        info = (
            {
                "LastUsedDate": used["date"].replace("Z", "+00:00"),
                "ServiceName": used.get("service", "s3"),
                "Region": used.get("region", self.region),
            }
            if used
            else {"ServiceName": "N/A", "Region": "N/A"}
        )
        self.out({"UserName": name, "AccessKeyLastUsed": info})

    def iam_create_access_key(self) -> None:
        name, u = self._user(self.params.get("--user-name"), "CreateAccessKey")
        if len(u["access_keys"]) >= 2:
            raise AwsError("LimitExceeded", "CreateAccessKey", "Cannot exceed quota for AccessKeysPerUser: 2")
        key_id = "AKIA" + short_hash(
            "key", name, self.ctx.call.seq, length=16, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
        )
        u["access_keys"].append({"id": key_id, "status": "Active", "created": iso(self.now)})
        secret = short_hash(
            "secret", key_id, length=40, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        )
        self.out(
            {
                "AccessKey": {
                    "UserName": name,
                    "AccessKeyId": key_id,
                    "Status": "Active",
                    "SecretAccessKey": secret,
                    "CreateDate": iso(self.now).replace("Z", "+00:00"),
                }
            }
        )

    def _key_owner(self) -> str:
        # Without --user-name IAM acts on the signing user (the caller), not on whoever owns the key id.
        return str(self.params.get("--user-name") or self.s["identity"])

    def iam_update_access_key(self) -> None:
        status = self.params["--status"]
        if status not in ("Active", "Inactive"):
            raise self.ctx.fail(
                USAGE_ERROR,
                f"\nParameter validation failed:\nValue '{status}' for parameter Status is invalid. Valid values: Active, Inactive",
            )
        _, k = self._key(self.params["--access-key-id"], self._key_owner(), "UpdateAccessKey")
        k["status"] = status

    def iam_delete_access_key(self) -> None:
        name, k = self._key(self.params["--access-key-id"], self._key_owner(), "DeleteAccessKey")
        self.s["iam"]["users"][name]["access_keys"].remove(k)

    def _policy_name(self, arn: str, op: str) -> str:
        m = re.match(r"^arn:aws:iam::(aws|\d{12}):policy/(?:[\w+=,.@-]+/)*([\w+=,.@-]+)$", arn)
        if not m:
            raise AwsError("InvalidInput", op, f"ARN {arn} is not valid.")
        return m.group(2)

    def iam_list_attached_user_policies(self) -> None:
        _, u = self._user(self.params["--user-name"], "ListAttachedUserPolicies")
        self.out({"AttachedPolicies": [{"PolicyName": p, "PolicyArn": POLICY_ARN + p} for p in u["attached_policies"]]})

    def iam_attach_user_policy(self) -> None:
        _, u = self._user(self.params["--user-name"], "AttachUserPolicy")
        name = self._policy_name(self.params["--policy-arn"], "AttachUserPolicy")
        if name not in u["attached_policies"]:
            u["attached_policies"].append(name)

    def iam_detach_user_policy(self) -> None:
        _, u = self._user(self.params["--user-name"], "DetachUserPolicy")
        name = self._policy_name(self.params["--policy-arn"], "DetachUserPolicy")
        if name not in u["attached_policies"]:
            raise AwsError("NoSuchEntity", "DetachUserPolicy", f"Policy {self.params['--policy-arn']} was not found.")
        u["attached_policies"].remove(name)

    def iam_list_groups_for_user(self) -> None:
        _, u = self._user(self.params["--user-name"], "ListGroupsForUser")
        self.out(
            {
                "Groups": [
                    {"Path": "/", "GroupName": g, "Arn": f"arn:aws:iam::{self.s['account']}:group/{g}"}
                    for g in u["groups"]
                ]
            }
        )

    def _role(self, name: str, op: str) -> dict[str, Any]:
        r = self.s["iam"]["roles"].get(name)
        if r is None:
            raise AwsError("NoSuchEntity", op, f"The role with name {name} cannot be found.")
        self.ctx.saw(f"iam/role/{name}")
        return dict(r) if False else r

    def _role_json(self, name: str, r: dict[str, Any]) -> dict[str, Any]:
        return {
            "Path": "/",
            "RoleName": name,
            "RoleId": r["id"],
            "Arn": f"arn:aws:iam::{self.s['account']}:role/{name}",
            "CreateDate": r["created"].replace("Z", "+00:00"),
            "MaxSessionDuration": 3600,
        }

    def iam_list_roles(self) -> None:
        self.out({"Roles": [self._role_json(n, r) for n, r in sorted(self.s["iam"]["roles"].items())]})

    def iam_get_role(self) -> None:
        r = self._role(self.params["--role-name"], "GetRole")
        self.out({"Role": self._role_json(self.params["--role-name"], r)})

    def iam_delete_role(self) -> None:
        r = self._role(self.params["--role-name"], "DeleteRole")
        if r["attached_policies"]:
            raise AwsError("DeleteConflict", "DeleteRole", "Cannot delete entity, must detach all policies first.")
        del self.s["iam"]["roles"][self.params["--role-name"]]

    def iam_list_attached_role_policies(self) -> None:
        r = self._role(self.params["--role-name"], "ListAttachedRolePolicies")
        self.out({"AttachedPolicies": [{"PolicyName": p, "PolicyArn": POLICY_ARN + p} for p in r["attached_policies"]]})

    def iam_attach_role_policy(self) -> None:
        r = self._role(self.params["--role-name"], "AttachRolePolicy")
        name = self._policy_name(self.params["--policy-arn"], "AttachRolePolicy")
        if name not in r["attached_policies"]:
            r["attached_policies"].append(name)

    def iam_detach_role_policy(self) -> None:
        r = self._role(self.params["--role-name"], "DetachRolePolicy")
        name = self._policy_name(self.params["--policy-arn"], "DetachRolePolicy")
        if name not in r["attached_policies"]:
            raise AwsError("NoSuchEntity", "DetachRolePolicy", f"Policy {self.params['--policy-arn']} was not found.")
        r["attached_policies"].remove(name)

    # -- Route 53 -------------------------------------------------------------------------

    def _zone(self, zone_id: str, op: str) -> tuple[str, dict[str, Any]]:
        zid = zone_id.split("/")[-1]
        for name, z in self.s["route53"]["zones"].items():
            if z["id"] == zid:
                self.ctx.saw(f"dns/zone/{_bare(name)}")
                return name, z
        raise AwsError("NoSuchHostedZone", op, f"No hosted zone found with ID: {zid}")

    def _zone_json(self, name: str, z: dict[str, Any]) -> dict[str, Any]:
        return {
            "Id": f"/hostedzone/{z['id']}",
            "Name": _fqdn(name),
            "CallerReference": short_hash("ref", name, length=36),
            "Config": {"Comment": z["comment"], "PrivateZone": z["private"]},
            "ResourceRecordSetCount": len(z["records"]),
        }

    def route53_list_hosted_zones(self) -> None:
        zones = sorted(self.s["route53"]["zones"].items())
        for n, _ in zones:
            self.ctx.saw(f"dns/zone/{_bare(n)}")
        self.out({"HostedZones": [self._zone_json(n, z) for n, z in zones]})

    def route53_list_hosted_zones_by_name(self) -> None:
        zones = sorted(self.s["route53"]["zones"].items(), key=lambda kv: ".".join(reversed(_bare(kv[0]).split("."))))
        start = self.params.get("--dns-name")
        if start:
            zones = [
                (n, z)
                for n, z in zones
                if ".".join(reversed(_bare(n).split("."))) >= ".".join(reversed(_bare(start).split(".")))
            ]
        self.out(
            {
                "HostedZones": [self._zone_json(n, z) for n, z in zones],
                "IsTruncated": False,
                "MaxItems": "100",
                **({"DNSName": _fqdn(start)} if start else {}),
            }
        )

    def route53_get_hosted_zone(self) -> None:
        name, z = self._zone(self.params["--id"], "GetHostedZone")
        self.out(
            {
                "HostedZone": self._zone_json(name, z),
                "DelegationSet": {"NameServers": [v.rstrip(".") for v in z["records"][0]["values"]]},
            }
        )

    def _record_json(self, r: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"Name": r["name"], "Type": r["type"]}
        if r.get("alias"):
            out["AliasTarget"] = r["alias"]
        else:
            out["TTL"] = r["ttl"]
            out["ResourceRecords"] = [{"Value": v} for v in r["values"]]
        return out

    def route53_list_resource_record_sets(self) -> None:
        zname, z = self._zone(self.params["--hosted-zone-id"], "ListResourceRecordSets")
        for r in z["records"]:
            self.ctx.saw(f"dns/zone/{_bare(zname)}/record/{r['type']}/{_bare(r['name'])}")
        self.out({"ResourceRecordSets": [self._record_json(r) for r in z["records"]]})

    def route53_get_change(self) -> None:
        self.out(
            {
                "ChangeInfo": {
                    "Id": self.params["--id"]
                    if self.params["--id"].startswith("/")
                    else "/change/" + self.params["--id"],
                    "Status": "INSYNC",
                    "SubmittedAt": iso(self.now).replace("Z", ".000000+00:00"),
                }
            }
        )

    def route53_change_resource_record_sets(self) -> None:
        zname, z = self._zone(self.params["--hosted-zone-id"], "ChangeResourceRecordSets")
        batch = self.json_param("--change-batch")
        changes = batch.get("Changes") if isinstance(batch, dict) else None
        if not isinstance(changes, list) or not changes:
            raise self.ctx.fail(
                USAGE_ERROR, '\nParameter validation failed:\nMissing required parameter in ChangeBatch: "Changes"'
            )
        records = copy.deepcopy(z["records"])
        problems = []
        for ch in changes:
            action = ch.get("Action") if isinstance(ch, dict) else None
            rrs = ch.get("ResourceRecordSet") if isinstance(ch, dict) else None
            if (
                action not in ("CREATE", "DELETE", "UPSERT")
                or not isinstance(rrs, dict)
                or "Name" not in rrs
                or "Type" not in rrs
            ):
                raise self.ctx.fail(
                    USAGE_ERROR,
                    "\nParameter validation failed:\nInvalid value for parameter ChangeBatch.Changes[0].Action, value: "
                    + str(action)
                    + ", valid choices: CREATE, DELETE, UPSERT",
                )
            name, rtype = _fqdn(rrs["Name"]), rrs["Type"]
            if not name.endswith(_fqdn(zname)):
                problems.append(f"RRSet with DNS name {name} is not permitted in zone {_fqdn(zname)}")
                continue
            new: dict[str, Any] = {"name": name, "type": rtype}
            if "AliasTarget" in rrs:
                new["alias"] = rrs["AliasTarget"]
            else:
                new["ttl"] = rrs.get("TTL")
                new["values"] = [rr.get("Value") for rr in rrs.get("ResourceRecords", [])]
            current = next((r for r in records if r["name"] == name and r["type"] == rtype), None)
            if action == "CREATE":
                if current is not None:
                    problems.append(
                        f"Tried to create resource record set [name='{name}', type='{rtype}'] but it already exists"
                    )
                    continue
                records.append(new)
            elif action == "DELETE":
                if current is None:
                    problems.append(
                        f"Tried to delete resource record set [name='{name}', type='{rtype}'] but it was not found"
                    )
                    continue
                same = (
                    (current.get("alias") == new.get("alias"))
                    if "alias" in new or current.get("alias")
                    else (
                        current.get("ttl") == new.get("ttl")
                        and sorted(current.get("values") or []) == sorted(new.get("values") or [])
                    )
                )
                if not same:
                    problems.append(
                        f"Tried to delete resource record set [name='{name}', type='{rtype}'] but the values provided do not match the current values"
                    )
                    continue
                if rtype in ("SOA", "NS") and name == _fqdn(zname):
                    problems.append(
                        "A HostedZone must contain at least one NS record for the zone itself."
                        if rtype == "NS"
                        else "A HostedZone must contain exactly one SOA record."
                    )
                    continue
                records.remove(current)
            else:
                if current is not None:
                    records[records.index(current)] = new
                else:
                    records.append(new)
        if problems:
            raise AwsError("InvalidChangeBatch", "ChangeResourceRecordSets", "[" + ", ".join(problems) + "]")
        z["records"] = records
        change_id = "C" + short_hash(
            "change", self.ctx.call.seq, length=20, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        )
        self.out(
            {
                "ChangeInfo": {
                    "Id": f"/change/{change_id}",
                    "Status": "PENDING",
                    "SubmittedAt": iso(self.now).replace("Z", ".000000+00:00"),
                    "Comment": (batch or {}).get("Comment"),
                }
                if (batch or {}).get("Comment")
                else {
                    "Id": f"/change/{change_id}",
                    "Status": "PENDING",
                    "SubmittedAt": iso(self.now).replace("Z", ".000000+00:00"),
                }
            }
        )

    def route53_delete_hosted_zone(self) -> None:
        name, z = self._zone(self.params["--id"], "DeleteHostedZone")
        extra = [r for r in z["records"] if not (r["type"] in ("NS", "SOA") and r["name"] == _fqdn(name))]
        if extra:
            raise AwsError(
                "HostedZoneNotEmpty",
                "DeleteHostedZone",
                "The specified hosted zone contains non-required resource record sets and so cannot be deleted.",
            )
        del self.s["route53"]["zones"][name]
        self.out(
            {
                "ChangeInfo": {
                    "Id": "/change/C"
                    + short_hash("del", name, length=20, alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
                    "Status": "PENDING",
                    "SubmittedAt": iso(self.now).replace("Z", ".000000+00:00"),
                }
            }
        )

    def route53_create_hosted_zone(self) -> None:
        name = _bare(self.params["--name"])
        if name in self.s["route53"]["zones"]:
            raise AwsError(
                "HostedZoneAlreadyExists",
                "CreateHostedZone",
                "A hosted zone has already been created with the specified caller reference.",
            )
        cfg = self.json_param("--hosted-zone-config") or {}
        self.s["route53"]["zones"][name] = {
            "comment": cfg.get("Comment", "") if isinstance(cfg, dict) else "",
            "private": bool(cfg.get("PrivateZone")) if isinstance(cfg, dict) else False,
            "records": [],
        }
        prepare(self.s, self.now)
        z = self.s["route53"]["zones"][name]
        self.out(
            {
                "Location": f"https://route53.amazonaws.com/2013-04-01/hostedzone/{z['id']}",
                "HostedZone": self._zone_json(name, z),
            }
        )


def _as_bool(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.lower() == "true")


def _policy_problem(policy: Any, bucket: str) -> str | None:
    if not isinstance(policy, dict) or not isinstance(policy.get("Statement"), (list, dict)):
        return "Missing required field Statement"
    statements = policy["Statement"] if isinstance(policy["Statement"], list) else [policy["Statement"]]
    for st in statements:
        if not isinstance(st, dict) or st.get("Effect") not in ("Allow", "Deny"):
            return "Invalid effect: " + str(st.get("Effect") if isinstance(st, dict) else st)
        if "Principal" not in st:
            return "Missing required field Principal"
        resources = st.get("Resource", [])
        for res in resources if isinstance(resources, list) else [resources]:
            if not str(res).startswith(f"arn:aws:s3:::{bucket}"):
                return "Policy has invalid resource"
    return None


def _is_public(policy: Any) -> bool:
    """AWS's notion (Block Public Access docs): an Allow to "*" that no narrowing condition limits."""
    if not isinstance(policy, dict):
        return False
    statements = policy.get("Statement", [])
    for st in statements if isinstance(statements, list) else [statements]:
        if not isinstance(st, dict) or st.get("Effect") != "Allow":
            continue
        principal = st.get("Principal")
        wildcard = principal == "*" or (isinstance(principal, dict) and principal.get("AWS") in ("*", ["*"]))
        if wildcard and not st.get("Condition"):
            return True
    return False


def _shorthand(text: str) -> Any:
    """``Key=Value,Key2=Value2`` (the CLI's shorthand syntax, flat form) with typed true/false/ints."""
    out: dict[str, Any] = {}
    for part in re.split(r",(?=[A-Za-z0-9_]+=)", text):
        key, eq, val = part.partition("=")
        if not eq:
            return text
        v: Any = val
        if val.lower() in ("true", "false"):
            v = val.lower() == "true"
        elif re.match(r"^\d+$", val):
            v = int(val)
        out[key.strip()] = v
    return out


def _ls_time(t: str) -> str:
    return parse_time(t).strftime("%Y-%m-%d %H:%M:%S")


def _http_time(t: str) -> str:
    return parse_time(t).strftime("%a, %d %b %Y %H:%M:%S GMT")


def _human(n: int) -> str:
    size = float(n)
    for unit in ("Bytes", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.1f} {unit}" if unit != "Bytes" else f"{int(size)} Bytes"
        size /= 1024
    return str(n)


def _text(data: Any) -> str:
    """The CLI's text output, close enough for scripts: scalars tab-separated, one row per item."""
    if data is None:
        return "None"
    if isinstance(data, (str, int, float, bool)):
        return str(data) if not isinstance(data, bool) else ("True" if data else "False")
    if isinstance(data, list):
        if all(not isinstance(x, (dict, list)) for x in data):
            return "\t".join(_text(x) for x in data)
        return "\n".join(_text(x) for x in data)
    lines = []
    scalars = [str(v) for k, v in sorted(data.items()) if not isinstance(v, (dict, list)) and v is not None]
    if scalars:
        lines.append("\t".join(scalars))
    for k, v in data.items():
        if isinstance(v, (dict, list)):
            inner = _text(v)
            if isinstance(v, list):
                lines.extend(f"{k.upper()}\t{line}" for line in inner.splitlines())
            else:
                lines.extend(f"{k.upper()}\t{line}" for line in inner.splitlines())
    return "\n".join(lines)


# -- --output table ------------------------------------------------------------------------
# The AWS CLI's table formatter (the user guide's "Table output" section): one section per
# mapping or list of mappings, scalar keys sorted as column headers, nested values as indented
# sub-sections whose borders nest, column widths scaled to the widest section, and sections of a
# single row turned vertical (key | value) when the table would not fit the 80 columns the CLI
# assumes when stdout is not a terminal.

TABLE_WIDTH = 80


class _Section:
    def __init__(self, title: str = "", indent: int = 0) -> None:
        self.title = title
        self.indent = indent
        self.headers: list[str] = []
        self.rows: list[list[str]] = []
        self.widths: list[int] = []

    def _grow(self, cells: Sequence[str]) -> None:
        if not self.widths:
            self.widths = [len(c) for c in cells]
        else:
            self.widths = [max(w, len(c)) for w, c in zip(self.widths, cells, strict=False)]

    def header(self, names: Sequence[str]) -> None:
        self.headers = list(names)
        self._grow(self.headers)

    def row(self, cells: Sequence[Any]) -> None:
        shown = [_cell(c) for c in cells]
        self.rows.append(shown)
        self._grow(shown)

    def total(self) -> int:
        cols = sum(w + 4 for w in self.widths) + 2 + 2 * self.indent
        return max(len(self.title) + 2 + 2 * self.indent, cols)

    def scaled(self, width: int) -> list[int]:
        """Column widths (each padded by 4) scaled to fill ``width`` exactly."""
        base = [w + 4 for w in self.widths]
        if not base:
            return []
        factor = width / float(sum(base))
        out = [round(factor * w) for w in base]  # Python 3's round, as the CLI's own
        off = sum(out) - width
        while off:
            order = range(len(out)) if off > 0 else reversed(range(len(out)))
            for i in order:
                if off > 0:
                    out[i] -= 1
                    off -= 1
                else:
                    out[i] += 1
                    off += 1
                if not off:
                    break
        return out


def _cell(value: Any) -> str:
    # The CLI prints cells with Python's str(): True, None and numbers as Python writes them.
    return str(value)


def _scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


class _TableBuilder:
    def __init__(self) -> None:
        self.sections: list[_Section] = []

    def new(self, title: str, indent: int) -> None:
        self.sections.append(_Section(title, indent))

    @property
    def current(self) -> _Section:
        return self.sections[-1]

    def build(self, title: str | None, value: Any, indent: int = 0) -> bool:
        if not value:
            return False
        if title is not None:
            self.new(title, indent)
        if isinstance(value, list):
            if isinstance(value[0], dict):
                self._from_list(value, indent, title or "")
            else:
                for item in value:
                    if _scalar(item):
                        self.current.row([item])
                    elif all(_scalar(x) for x in item):
                        self.current.row(item)
                    else:
                        self.build(None, item)
        if isinstance(value, dict):
            self._from_dict(value, indent)
        return True

    def _from_dict(self, value: dict[str, Any], indent: int) -> None:
        heads = sorted(k for k in value if _scalar(value[k]))
        more = sorted(k for k in value if not _scalar(value[k]))
        if len(heads) == 1:
            self.current.row([heads[0], value[heads[0]]])
        elif heads:
            self.current.header(heads)
            self.current.row([value[k] for k in heads])
        for key in more:
            self.build(key, value[key], indent + 1)

    def _from_list(self, items: list[Any], indent: int, title: str) -> None:
        heads = sorted({k for item in items if isinstance(item, dict) for k in item if _scalar(item[k])})
        more = sorted({k for item in items if isinstance(item, dict) for k in item if not _scalar(item[k])})
        self.current.header(heads)
        for n, item in enumerate(items):
            if n and more:
                self.new(title, indent)
                self.current.header(heads)
            self.current.row([item.get(h, "") for h in heads])
            for key in more:
                if key in item:
                    self.build(key, item[key], indent + 1)


def _centred(text: str, width: int, left: str = "|", right: str = "|") -> str:
    start = width // 2 - len(text) // 2 - 1
    line = left + " " * start + text
    return line + " " * (width - len(right) - len(line)) + right


def _left(text: str, width: int, left: str, right: str = "|") -> str:
    pad = 2 if width - (len(text) + 2 + len(left) + len(right)) >= 0 else 0
    line = left + " " * pad + text
    return line + " " * (width - len(line) - len(right)) + right


def _rule(widths: list[int]) -> str:
    return "".join(("+" + "-" * (w - 2) + "+") if i == 0 else ("-" * (w - 1) + "+") for i, w in enumerate(widths))


def table_output(title: str, data: Any) -> str:
    builder = _TableBuilder()
    if not builder.build(title, data):
        return ""
    sections = builder.sections
    width = max(s.total() for s in sections)
    if width > TABLE_WIDTH:
        for i, sec in enumerate(sections):
            if len(sec.rows) == 1 and sec.headers:
                vertical = _Section(sec.title, sec.indent)
                for head, cell in zip(sec.headers, sec.rows[0], strict=True):
                    vertical.row([head, cell])
                sections[i] = vertical
        width = max(s.total() for s in sections)
    lines = ["-" * width]
    for sec in sections:
        inner = width - 2 * sec.indent
        bar = "|" * sec.indent
        body: list[str] = []
        if sec.title:
            body.append(_centred(sec.title, inner))
            if not sec.headers and not sec.rows:
                body.append("+" + "-" * (inner - 2) + "+")
        cols = sec.scaled(inner)
        if sec.headers:
            body.append(_rule(cols))
            body.append(
                "".join(
                    _centred(h, w, "|" if i == 0 else "")
                    for i, (h, w) in enumerate(zip(sec.headers, cols, strict=False))
                )
            )
        if sec.rows and cols:
            body.append(_rule(cols))
            for row in sec.rows:
                body.append(
                    "".join(_left(c, w, "|" if i == 0 else "") for i, (c, w) in enumerate(zip(row, cols, strict=False)))
                )
            body.append(_rule(cols))
        lines.extend(bar + line + bar for line in body)
    return "\n".join(lines) + "\n"


def _choices(names: Sequence[str]) -> str:
    items = sorted(names)
    rows = []
    for i in range(0, len(items), 2):
        pair = items[i : i + 2]
        rows.append(f"{pair[0]:<40} | {pair[1]}" if len(pair) == 2 else pair[0])
    return "\n".join(rows)


def _parse(argv: list[str]) -> tuple[dict[str, Any], list[str], list[str]]:
    """Split argv into global options, positional tokens and the rest (operation parameters)."""
    opts: dict[str, Any] = {}
    pos: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, val = a.partition("=")
        if name in GLOBAL_VALUE:
            if eq:
                opts[name] = val
                i += 1
                continue
            if i + 1 >= len(argv):
                raise ToolExit(USAGE_ERROR, f"{USAGE}\naws: error: argument {name}: expected one argument\n")
            opts[name] = argv[i + 1]
            i += 2
            continue
        if a in GLOBAL_FLAGS:
            opts[a] = True
            i += 1
            continue
        if a.startswith("--"):
            rest.append(a)
            if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                rest.append(argv[i + 1])
                i += 2
                continue
            i += 1
            continue
        pos.append(a)
        i += 1
    return opts, pos, rest


def _params(rest: list[str], spec: list[Param], positional_extra: list[str]) -> tuple[dict[str, Any], list[str]]:
    by_name = {p.name: p for p in spec}
    params: dict[str, Any] = {}
    unknown: list[str] = []
    extra: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        name, eq, val = a.partition("=")
        base = name[5:] if name.startswith("--no-") else None
        p = by_name.get(name) or (by_name.get("--" + base) if base else None)
        if p is None:
            unknown.append(a)
            if not eq and i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                unknown.append(rest[i + 1])
                i += 1
            i += 1
            continue
        if p.flag:
            params[p.name] = not name.startswith("--no-")
            if not eq and i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                extra.append(rest[i + 1])
                i += 1
            i += 1
            continue
        if not eq:
            if i + 1 >= len(rest) or rest[i + 1].startswith("--"):
                raise ToolExit(USAGE_ERROR, f"{USAGE}\naws: error: argument {name}: expected one argument\n")
            val = rest[i + 1]
            i += 1
        i += 1
        if p.kind == "int":
            try:
                params[p.name] = int(val)
            except ValueError:
                raise ToolExit(
                    USAGE_ERROR, f"{USAGE}\naws: error: argument {name}: invalid int value: '{val}'\n"
                ) from None
        elif p.kind == "list":
            params.setdefault(p.name, []).append(val)
        else:
            params[p.name] = val
    if unknown:
        raise ToolExit(USAGE_ERROR, f"{USAGE}\nUnknown options: {', '.join(unknown)}\n")
    missing = [p.name for p in spec if p.required and p.name not in params]
    if missing:
        raise ToolExit(
            USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: {', '.join(missing)}\n"
        )
    return params, positional_extra + extra


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    try:
        opts, pos, rest = _parse(list(call.argv))
        if "--output" in opts and opts["--output"] not in ("json", "text", "table", "yaml", "yaml-stream"):
            raise ctx.fail(
                USAGE_ERROR,
                f"{USAGE}\naws: error: argument --output: Invalid choice, valid choices are:\n\njson                                     | text\ntable                                    | yaml\nyaml-stream",
            )
        if not pos:
            if "--version" in rest:
                ctx.out("aws-cli/2.15.30 Python/3.11.8 Linux/6.1.0 exe/x86_64.debian.12 prompt/off")
                return ctx.result(0)
            raise ctx.fail(USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: command")
        service = pos[0]
        if service not in SERVICES:
            if service in OTHER_SERVICES:
                raise ctx.fail(
                    255,
                    f'\nCould not connect to the endpoint URL: "https://{service}.{state.get(SECTION, {}).get("region", "us-east-1")}.amazonaws.com/"',
                )
            raise ctx.fail(
                USAGE_ERROR,
                f"{USAGE}\naws: error: argument command: Invalid choice, valid choices are:\n\n{_choices([*SERVICES, *OTHER_SERVICES])}",
            )
        if len(pos) < 2 or pos[1] == "help":
            if len(pos) >= 2:
                ctx.out(
                    f"{service.upper()}()\n\nAvailable Commands\n"
                    + "\n".join(f"       o {c}" for c in sorted(SERVICES[service]))
                )
                return ctx.result(0)
            raise ctx.fail(USAGE_ERROR, f"{USAGE}\naws: error: the following arguments are required: operation")
        command = pos[1]
        table = SERVICES[service]
        if command not in table:
            raise ctx.fail(
                USAGE_ERROR,
                f"{USAGE}\naws: error: argument operation: Invalid choice, valid choices are:\n\n{_choices(list(table))}",
            )
        if service == "s3":
            ctx.mutating = command in S3_MUTATING
        elif service != "sts":
            ctx.mutating = not command.startswith(READ_PREFIXES)
        params, extra = _params(rest, table[command], pos[2:])
        if service != "s3" and extra and not (service == "s3api" and command == "get-object"):
            raise ctx.fail(USAGE_ERROR, f"{USAGE}\nUnknown options: {', '.join(extra)}")
        handler = _Aws(ctx, service, command, params, extra, opts)
        try:
            handler.run()
        except AwsError as err:
            # `aws s3 ls` makes one API call and fails like any operation (254); the transfer
            # commands report "fatal error" and exit 1 (the CLI's return-code page).
            transfer = service == "s3" and command != "ls"
            prefix = "fatal error: " if transfer else "\n"
            raise ctx.fail(
                1 if transfer else SERVICE_ERROR,
                f"{prefix}An error occurred ({err.code}) when calling the {err.operation} operation: {err.message}",
            ) from None
    except ToolExit as exc:
        return ctx.finish(exc)
    except NeedInput:
        raise
    return ctx.result(0)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"aws": run}
