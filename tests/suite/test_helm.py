"""helm: cobra usage errors, release history, upgrade/rollback/uninstall, --dry-run, values."""

from __future__ import annotations

import json

import pytest

from tests.suite.conftest import make_runner

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
    service, run = make_runner(STATE, ["helm"])
    return service, lambda *argv, **kw: run("helm", *argv, **kw)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["deploy"], 'Error: unknown command "deploy" for "helm"'),
        (["list", "--bogus"], "Error: unknown flag: --bogus"),
        (
            ["upgrade", "checkout"],
            'Error: "helm upgrade" requires 2 arguments\n\nUsage:  helm upgrade [RELEASE] [CHART] [flags]',
        ),
        (["upgrade", "payments", "./charts/checkout"], 'Error: UPGRADE FAILED: "payments" has no deployed releases'),
        (
            ["install", "checkout", "./charts/checkout"],
            "Error: INSTALLATION FAILED: cannot re-use a name that is still in use",
        ),
        (["rollback", "checkout", "9"], "Error: release has no 9 version"),
        (["uninstall", "ghost"], "Error: uninstall: Release not loaded: ghost: release: not found"),
        (["status", "ghost"], "Error: release: not found"),
        (["upgrade", "checkout", "./nope"], 'Error: path "./nope" not found'),
        (["upgrade", "checkout", "oci://registry.acme.dev/charts/checkout"], "no such host"),
        (["--kube-context", "qa", "list"], 'Error: Kubernetes cluster unreachable: context "qa" does not exist'),
    ],
)
def test_errors_read_like_helm(helm, argv, message):
    _, run = helm
    result = run(*argv, files=CHART)
    assert result.exit_code == 1
    assert message in result.stderr, result.stderr


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
