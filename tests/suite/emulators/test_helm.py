"""helm: cobra usage errors, release history, upgrade/rollback/uninstall, --dry-run, values."""

from __future__ import annotations

import json

import pytest

from tests.suite.conftest import cli

STATE = {
    "kubernetes": {
        "contexts": {"prod": {"cluster": "prod-eu", "namespace": "shop"}},
        "clusters": {"prod-eu": {"objects": [{"kind": "Namespace", "metadata": {"name": "shop"}}]}},
    },
    "helm": {
        "repositories": {"bitnami": "https://charts.bitnami.com/bitnami"},
        "charts": {"bitnami/redis": {"18.19.2": {"app_version": "7.2.4", "values": {"architecture": "replication"}}}},
        "releases": [
            {
                "name": "checkout",
                "namespace": "shop",
                "history": [
                    {"chart": "checkout", "version": "2.4.0", "values": {"image": {"tag": "2.4.0"}}},
                    {"chart": "checkout", "version": "2.4.1", "values": {"image": {"tag": "2.4.1"}}},
                ],
            },
        ],
    },
}
CHART = {
    "charts/checkout/Chart.yaml": "apiVersion: v2\nname: checkout\nversion: 2.5.0\nappVersion: 2.5.0\n",
    "charts/checkout/values.yaml": "replicas: 2\n",
}


@pytest.fixture
def helm():
    return cli(STATE, "helm")


ERROR_FILES = CHART
# Usage and service errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
    (["deploy"], 1, 'Error: unknown command "deploy" for "helm"'),
    (["list", "--bogus"], 1, "Error: unknown flag: --bogus"),
    (
        ["upgrade", "checkout"],
        1,
        'Error: "helm upgrade" requires 2 arguments\n\nUsage:  helm upgrade [RELEASE] [CHART] [flags]',
    ),
    (["upgrade", "payments", "./charts/checkout"], 1, 'Error: UPGRADE FAILED: "payments" has no deployed releases'),
    (
        ["install", "checkout", "./charts/checkout"],
        1,
        "Error: INSTALLATION FAILED: cannot re-use a name that is still in use",
    ),
    (["rollback", "checkout", "9"], 1, "Error: release has no 9 version"),
    (["uninstall", "ghost"], 1, "Error: uninstall: Release not loaded: ghost: release: not found"),
    (["status", "ghost"], 1, "Error: release: not found"),
    (["upgrade", "checkout", "./nope"], 1, 'Error: path "./nope" not found'),
    (["upgrade", "checkout", "oci://registry.acme.dev/charts/checkout"], 1, "no such host"),
    (["--kube-context", "qa", "list"], 1, 'Error: Kubernetes cluster unreachable: context "qa" does not exist'),
]


def test_list_and_history_show_revisions(helm):
    _, run = helm
    listing = run("list").stdout
    assert listing.splitlines()[0].split("\t")[0].strip() == "NAME"
    assert "checkout-2.4.1" in listing and "deployed" in listing
    history = run("history", "checkout").stdout.splitlines()
    assert len(history) == 3 and "superseded" in history[1] and "deployed" in history[2]
    assert run("get", "values", "checkout").stdout == "USER-SUPPLIED VALUES:\nimage:\n  tag: 2.4.1\n"


def test_upgrade_merges_values_and_dry_run_stores_nothing(helm):
    service, run = helm
    before = service.objects()
    dry = run("upgrade", "checkout", "./charts/checkout", "--set", "image.tag=2.5.0", "--dry-run", files=CHART)
    assert "STATUS: pending-upgrade" in dry.stdout and dry.dry_run and service.objects() == before
    done = run("upgrade", "checkout", "./charts/checkout", "--reuse-values", "--set", "image.tag=2.5.0", files=CHART)
    assert (
        done.stdout.startswith('Release "checkout" has been upgraded. Happy Helming!') and "REVISION: 3" in done.stdout
    )
    release = service.objects()["helm/prod-eu/shop/release/checkout"]
    assert (
        release["values"] == {"image": {"tag": "2.5.0"}} and release["version"] == "2.5.0" and release["revision"] == 3
    )


def test_rollback_adds_a_revision_and_uninstall_removes_the_release(helm):
    service, run = helm
    assert run("rollback", "checkout", "1").stdout == "Rollback was a success! Happy Helming!\n"
    history = json.loads(run("history", "checkout", "-o", "json").stdout)
    assert history[-1]["description"] == "Rollback to 1" and history[-1]["chart"] == "checkout-2.4.0"
    assert run("uninstall", "checkout", "--dry-run").dry_run
    assert "helm/prod-eu/shop/release/checkout" in service.objects()
    assert run("uninstall", "checkout").stdout == 'release "checkout" uninstalled\n'
    assert "helm/prod-eu/shop/release/checkout" not in service.objects()


def test_install_from_a_repository_chart(helm):
    service, run = helm
    result = run("install", "cache", "bitnami/redis", "--version", "18.19.2")
    assert result.exit_code == 0 and "STATUS: deployed" in result.stdout
    assert service.objects()["helm/prod-eu/shop/release/cache"]["app_version"] == "7.2.4"


# -- value reuse on upgrade --------------------------------------------------------------------

REUSE_STATE = {
    "kubernetes": {
        "contexts": {"prod": {"cluster": "prod-eu", "namespace": "pay"}},
        "clusters": {"prod-eu": {"objects": [{"kind": "Namespace", "metadata": {"name": "pay"}}]}},
    },
    "helm": {
        "charts": {"acme/api": {"1.9.0": {"app_version": "2.8.0", "values": {"replicaCount": 1}}}},
        "releases": [
            {
                "name": "api",
                "namespace": "pay",
                "history": [
                    {
                        "chart": "api",
                        "version": "1.9.0",
                        "values": {"image": {"tag": "2.8.0"}, "replicaCount": 6, "ingress": {"host": "api.pay"}},
                    }
                ],
            }
        ],
    },
}
RELEASE = "helm/prod-eu/pay/release/api"


@pytest.fixture
def reuse():
    return cli(REUSE_STATE, "helm")


def test_an_upgrade_without_any_values_keeps_the_previous_values(reuse):
    service, run = reuse
    assert run("upgrade", "api", "acme/api").exit_code == 0
    value = service.objects()[RELEASE]
    assert value["revision"] == 2
    assert value["values"] == {"image": {"tag": "2.8.0"}, "replicaCount": 6, "ingress": {"host": "api.pay"}}


def test_an_upgrade_that_sets_one_value_without_reuse_drops_the_other_overrides(reuse):
    service, run = reuse
    assert run("upgrade", "api", "acme/api", "--set", "image.tag=2.8.1").exit_code == 0
    assert service.objects()[RELEASE]["values"] == {"image": {"tag": "2.8.1"}}


@pytest.mark.parametrize("flag", ["--reuse-values", "--reset-then-reuse-values"])
def test_reuse_flags_merge_the_new_value_into_the_previous_ones(reuse, flag):
    service, run = reuse
    assert run("upgrade", "api", "acme/api", flag, "--set", "image.tag=2.8.1").exit_code == 0
    assert service.objects()[RELEASE]["values"] == {
        "image": {"tag": "2.8.1"},
        "replicaCount": 6,
        "ingress": {"host": "api.pay"},
    }


def test_reset_values_starts_from_the_chart_defaults_even_without_new_values(reuse):
    service, run = reuse
    assert run("upgrade", "api", "acme/api", "--reset-values").exit_code == 0
    assert service.objects()[RELEASE]["values"] == {}


def test_rollback_to_revision_zero_means_the_previous_revision(reuse):
    service, run = reuse
    assert run("upgrade", "api", "acme/api", "--reuse-values", "--set", "image.tag=2.9.0").exit_code == 0
    result = run("rollback", "api", "0")
    assert result.exit_code == 0, result.stderr
    value = service.objects()[RELEASE]
    assert (value["revision"], value["values"]["image"]["tag"]) == (3, "2.8.0")
