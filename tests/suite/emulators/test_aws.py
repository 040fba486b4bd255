"""aws (CLI v2): usage errors (252), service errors (254), s3 --dryrun, JMESPath, Route 53 batches."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.suite.conftest import cli, make_runner

STATE = {
    "aws": {
        "account": "111122223333",
        "identity": "ops",
        "s3": {
            "buckets": {
                "acme-logs": {
                    "objects": {
                        "2024/01/a.log": {"size": 10},
                        "2024/02/b.log": {"size": 20},
                        "keep.txt": {"content": "hi\n"},
                    },
                    "policy": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": "*",
                                "Action": "s3:GetObject",
                                "Resource": "arn:aws:s3:::acme-logs/*",
                            }
                        ],
                    },
                },
                "acme-web": {
                    "public_access_block": {
                        "BlockPublicAcls": True,
                        "IgnorePublicAcls": True,
                        "BlockPublicPolicy": True,
                        "RestrictPublicBuckets": True,
                    }
                },
            }
        },
        "iam": {
            "users": {
                "deploy-bot": {"access_keys": [{"id": "AKIAOLD000000001"}], "attached_policies": ["AmazonS3FullAccess"]}
            }
        },
        "route53": {
            "zones": {
                "example.com": {
                    "records": [{"name": "api.example.com", "type": "A", "ttl": 300, "values": ["203.0.113.10"]}]
                }
            }
        },
    }
}


@pytest.fixture
def aws():
    return cli(STATE, "aws")


# Usage and service errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
    ([], 252, "aws: error: the following arguments are required: command"),
    (["s4", "ls"], 252, "aws: error: argument command: Invalid choice, valid choices are:"),
    (["s3api", "frob"], 252, "aws: error: argument operation: Invalid choice"),
    (["s3api", "get-bucket-policy"], 252, "aws: error: the following arguments are required: --bucket"),
    (["s3", "ls", "--bogus"], 252, "Unknown options: --bogus"),
    (["s3api", "list-buckets", "--output", "xml"], 252, "argument --output: Invalid choice"),
    (
        ["s3api", "list-objects-v2", "--bucket", "acme-logs", "--max-items", "many"],
        252,
        "argument --max-items: invalid int value: 'many'",
    ),
    (
        ["s3api", "get-bucket-policy", "--bucket", "acme-web"],
        254,
        "An error occurred (NoSuchBucketPolicy) when calling the GetBucketPolicy operation: "
        "The bucket policy does not exist",
    ),
    (
        ["s3api", "get-bucket-policy", "--bucket", "nope"],
        254,
        "An error occurred (NoSuchBucket) when calling the GetBucketPolicy operation: "
        "The specified bucket does not exist",
    ),
    (["s3", "rm", "s3://nope/x"], 1, "fatal error: An error occurred (NoSuchBucket)"),
    (["s3", "rb", "s3://acme-logs"], 1, "remove_bucket failed: s3://acme-logs An error occurred (BucketNotEmpty)"),
    (
        ["iam", "get-user", "--user-name", "ghost"],
        254,
        "(NoSuchEntity) when calling the GetUser operation: The user with name ghost cannot be found.",
    ),
    (
        ["iam", "update-access-key", "--access-key-id", "AKIAOLD000000001", "--status", "Paused"],
        252,
        "Valid values: Active, Inactive",
    ),
    (
        ["iam", "delete-user", "--user-name", "deploy-bot"],
        254,
        "(DeleteConflict) when calling the DeleteUser operation: Cannot delete entity, must delete access keys first.",
    ),
    (["s3api", "list-buckets", "--query", "Buckets[?"], 252, "Bad jmespath expression"),
    (["--profile", "prod", "s3", "ls"], 255, "The config profile (prod) could not be found"),
    (["ec2", "describe-instances"], 255, "Could not connect to the endpoint URL"),
]


def test_s3_ls_shows_prefixes_and_recursive_listing(aws):
    _, run = aws
    assert run("s3", "ls").stdout.splitlines()[0].endswith(" acme-logs")
    top = run("s3", "ls", "s3://acme-logs").stdout
    assert "PRE 2024/" in top and top.rstrip().endswith("keep.txt")
    assert len(run("s3", "ls", "s3://acme-logs", "--recursive").stdout.splitlines()) == 3


def test_s3_dryrun_prints_and_changes_nothing_while_filters_apply_in_order(aws):
    service, run = aws
    before = service.objects()
    dry = run("s3", "rm", "s3://acme-logs/", "--recursive", "--dryrun")
    assert dry.stdout.count("(dryrun) delete: s3://acme-logs/") == 3 and dry.dry_run and dry.mutating
    assert service.objects() == before
    real = run("s3", "rm", "s3://acme-logs/", "--recursive", "--exclude", "*", "--include", "2024/01/*")
    assert real.stdout == "delete: s3://acme-logs/2024/01/a.log\n"
    assert service.calls[-1]["changed"] == ["s3/bucket/acme-logs/object/2024/01/a.log"]


def test_cp_downloads_through_the_shim_and_uploads_local_files(aws):
    service, run = aws
    down = run("s3", "cp", "s3://acme-logs/keep.txt", ".")
    assert down.stdout == "download: s3://acme-logs/keep.txt to ./keep.txt\n" and down.writes == {"./keep.txt": "hi\n"}
    up = run("s3", "cp", "report.csv", "s3://acme-web/", files={"report.csv": "a,b\n"})
    assert up.stdout == "upload: report.csv to s3://acme-web/report.csv\n"
    assert "s3/bucket/acme-web/object/report.csv" in service.objects()


def test_public_access_block_refuses_a_public_policy_like_s3_does(aws):
    _, run = aws
    policy = json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::acme-web/*"}
            ],
        }
    )
    denied = run("s3api", "put-bucket-policy", "--bucket", "acme-web", "--policy", policy)
    assert (
        denied.exit_code == 254
        and "public policies are blocked by the BlockPublicPolicy block public access setting" in denied.stderr
    )
    ok = run(
        "s3api",
        "put-public-access-block",
        "--bucket",
        "acme-logs",
        "--public-access-block-configuration",
        "BlockPublicAcls=true,IgnorePublicAcls=true,BlockPublicPolicy=true,RestrictPublicBuckets=true",
    )
    assert ok.exit_code == 0 and ok.stdout == ""
    status = json.loads(run("s3api", "get-bucket-policy-status", "--bucket", "acme-logs").stdout)
    assert status == {"PolicyStatus": {"IsPublic": False}}
    assert (
        "MalformedPolicy"
        in run(
            "s3api", "put-bucket-policy", "--bucket", "acme-web", "--policy", "file://p.json", files={"p.json": "nope"}
        ).stderr
    )


def test_query_and_text_output(aws):
    _, run = aws
    keys = run(
        "iam",
        "list-access-keys",
        "--user-name",
        "deploy-bot",
        "--query",
        "AccessKeyMetadata[?Status=='Active'].AccessKeyId",
        "--output",
        "text",
    )
    assert keys.stdout == "AKIAOLD000000001\n"
    names = run("s3api", "list-buckets", "--query", "Buckets[].Name")
    assert json.loads(names.stdout) == ["acme-logs", "acme-web"]


def test_route53_delete_must_match_the_record_exactly(aws):
    service, run = aws
    zone = json.loads(run("route53", "list-hosted-zones").stdout)["HostedZones"][0]["Id"]
    wrong = {
        "Changes": [
            {
                "Action": "DELETE",
                "ResourceRecordSet": {
                    "Name": "api.example.com",
                    "Type": "A",
                    "TTL": 60,
                    "ResourceRecords": [{"Value": "203.0.113.10"}],
                },
            }
        ]
    }
    refused = run(
        "route53", "change-resource-record-sets", "--hosted-zone-id", zone, "--change-batch", json.dumps(wrong)
    )
    assert refused.exit_code == 254 and "but the values provided do not match the current values" in refused.stderr
    right = {
        "Changes": [
            {
                "Action": "DELETE",
                "ResourceRecordSet": {
                    "Name": "api.example.com.",
                    "Type": "A",
                    "TTL": 300,
                    "ResourceRecords": [{"Value": "203.0.113.10"}],
                },
            }
        ]
    }
    done = run(
        "route53",
        "change-resource-record-sets",
        "--hosted-zone-id",
        zone.split("/")[-1],
        "--change-batch",
        "file://b.json",
        files={"b.json": json.dumps(right)},
    )
    assert json.loads(done.stdout)["ChangeInfo"]["Status"] == "PENDING"
    assert "dns/zone/example.com/record/A/api.example.com" not in service.objects()
    apex = {
        "Changes": [
            {
                "Action": "DELETE",
                "ResourceRecordSet": {
                    "Name": "example.com",
                    "Type": "NS",
                    "TTL": 172800,
                    "ResourceRecords": [
                        {"Value": v}
                        for v in service.state["aws"]["route53"]["zones"]["example.com"]["records"][0]["values"]
                    ],
                },
            }
        ]
    }
    assert (
        "must contain at least one NS record"
        in run(
            "route53", "change-resource-record-sets", "--hosted-zone-id", zone, "--change-batch", json.dumps(apex)
        ).stderr
    )


def test_read_operations_are_not_mutating(aws):
    _, run = aws
    for argv in (
        ["s3", "ls"],
        ["s3api", "get-bucket-policy", "--bucket", "acme-logs"],
        ["iam", "list-users"],
        ["sts", "get-caller-identity"],
        ["s3", "presign", "s3://acme-logs/keep.txt"],
    ):
        assert not run(*argv).mutating
    assert run("iam", "update-access-key", "--access-key-id", "AKIAOLD000000001", "--status", "Inactive").mutating


# -- access keys without --user-name -----------------------------------------------------------


def test_update_access_key_without_user_name_acts_on_the_caller_like_iam():
    state = {
        "aws": {
            "identity": "oncall",
            "iam": {
                "users": {
                    "oncall": {"access_keys": [{"id": "AKIAONCALLKEY2345678"}]},
                    "uploader": {"access_keys": [{"id": "AKIAUPLOADERKEY23456"}]},
                }
            },
        }
    }
    service, run = make_runner(state, ["aws"])
    before = service.objects()
    other = run("aws", "iam", "update-access-key", "--access-key-id", "AKIAUPLOADERKEY23456", "--status", "Inactive")
    assert other.exit_code == 254 and "The Access Key with id AKIAUPLOADERKEY23456 cannot be found." in other.stderr
    assert service.objects() == before
    named = ["--user-name", "uploader", "--access-key-id", "AKIAUPLOADERKEY23456", "--status", "Inactive"]
    assert run("aws", "iam", "update-access-key", *named).exit_code == 0
    assert service.objects()["iam/user/uploader/access-key/AKIAUPLOADERKEY23456"]["status"] == "Inactive"
    own = run("aws", "iam", "delete-access-key", "--access-key-id", "AKIAONCALLKEY2345678")
    assert own.exit_code == 0 and "iam/user/oncall/access-key/AKIAONCALLKEY2345678" not in service.objects()


# -- content ETags -----------------------------------------------------------------------------

ETAG_STATE = {
    "aws": {
        "s3": {
            "buckets": {
                "acme-get": {"objects": {"install.sh": {"content": "#!/bin/sh\necho tampered\n"}}},
                "acme-vault": {"objects": {"v14/install.sh": {"content": "#!/bin/sh\necho good\n"}}},
            }
        }
    }
}


def test_an_authored_objects_etag_is_the_md5_of_its_content_like_an_upload():
    service, run = make_runner(ETAG_STATE, ["aws"])
    good = "#!/bin/sh\necho good\n"
    md5 = hashlib.md5(good.encode(), usedforsecurity=False).hexdigest()
    assert service.objects()["s3/bucket/acme-vault/object/v14/install.sh"]["etag"] == md5
    # An S3-to-S3 copy keeps the ETag; a download and re-upload of the same bytes gets the same one.
    assert run("aws", "s3", "cp", "s3://acme-vault/v14/install.sh", "s3://acme-get/install.sh").exit_code == 0
    assert service.objects()["s3/bucket/acme-get/object/install.sh"]["etag"] == md5
    up = run("aws", "s3", "cp", "good.sh", "s3://acme-get/copy.sh", files={"good.sh": good})
    assert up.exit_code == 0 and service.objects()["s3/bucket/acme-get/object/copy.sh"]["etag"] == md5


# -- fnmatch character classes in --exclude/--include ------------------------------------------

S3_STATE = {
    "aws": {
        "s3": {
            "buckets": {
                "backups": {
                    "objects": {f"dumps/2026-02-{d:02d}.sql.gz": {"size": 10} for d in (5, 9, 12, 16, 20)},
                }
            }
        }
    }
}


def test_s3_filters_support_fnmatch_character_classes():
    service, run = make_runner(S3_STATE, ["aws"])
    result = run(
        "aws",
        "s3",
        "rm",
        "s3://backups/dumps/",
        "--recursive",
        "--exclude",
        "*",
        "--include",
        "2026-02-0*",
        "--include",
        "2026-02-1[0-5]*",
    )
    assert result.exit_code == 0, result.stderr
    left = sorted(k.rsplit("/", 1)[-1] for k in service.objects() if "/object/" in k)
    assert left == ["2026-02-16.sql.gz", "2026-02-20.sql.gz"]
