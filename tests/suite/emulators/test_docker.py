"""docker: cobra usage errors (125), daemon errors, prune confirmations and Engine-23 volume rules."""

from __future__ import annotations

import pytest

from tests.suite.conftest import cli

STATE = {
    "docker": {
        "host": "build-01",
        "containers": [
            {"name": "ci-postgres", "image": "postgres:15", "volumes": ["ci-pgdata"]},
            {"name": "old-runner", "image": "runner:1", "status": "exited"},
        ],
        "images": [
            {"repository": "postgres", "tag": "15"},
            {"repository": "runner", "tag": "1"},
            {"repository": "<none>", "tag": "<none>", "size": "1.2GB"},
            {"repository": "registry.acme.io/shop/checkout", "tag": "2.4.1"},
        ],
        "volumes": [{"name": "ci-pgdata"}, {"name": "npm-cache"}, {"name": "4e1f0c2d", "anonymous": True}],
        "build_cache_mb": 5120,
        "registries": {"registry.acme.io": {"shop/checkout": ["2.4.0"]}},
    }
}


@pytest.fixture
def docker():
    return cli(STATE, "docker")


# Usage and service errors, checked by tests/suite/emulators/test_errors.py: (argv, exit code, message).
ERRORS = [
    (["frob"], 1, "docker: 'frob' is not a docker command.\nSee 'docker --help'"),
    (["rm", "--bogus", "x"], 125, "unknown flag: --bogus\nSee 'docker rm --help'."),
    (["ps", "-Z"], 125, "unknown shorthand flag: 'Z' in -Z"),
    (["volume", "frob"], 1, "docker: 'volume frob' is not a docker command."),
    (["rm"], 1, '"docker rm" requires at least 1 argument.'),
    (["rm", "ghost"], 1, "Error response from daemon: No such container: ghost"),
    (
        ["rm", "ci-postgres"],
        1,
        'cannot remove container "/ci-postgres": container is running: '
        "stop the container before removing or force remove",
    ),
    (["rmi", "postgres:15"], 1, 'unable to remove repository reference "postgres:15" (must force) - container'),
    (["rmi", "nope:1"], 1, "Error response from daemon: No such image: nope:1"),
    (["volume", "rm", "ci-pgdata"], 1, "Error response from daemon: remove ci-pgdata: volume is in use"),
    (["push", "ghcr.io/acme/x:1"], 1, "An image does not exist locally with the tag: ghcr.io/acme/x"),
    (
        ["pull", "registry.acme.io/shop/checkout:9.9.9"],
        1,
        "manifest for registry.acme.io/shop/checkout:9.9.9 not found",
    ),
    (["-H", "tcp://10.0.0.9:2375", "ps"], 1, "Cannot connect to the Docker daemon at tcp://10.0.0.9:2375"),
]


def test_prunes_ask_first_and_a_no_or_eof_declines(docker):
    service, run = docker
    before = service.objects()
    asked = run("system", "prune", "-a", "--volumes")
    assert "WARNING! This will remove:" in asked.stdout and "Are you sure you want to continue? [y/N] " in asked.stdout
    assert asked.declined and asked.mutating and service.objects() == before
    assert run("image", "prune", stdin="n\n").declined
    assert service.objects() == before


def test_system_prune_removes_stopped_containers_dangling_images_and_cache(docker):
    service, run = docker
    result = run("system", "prune", "-f")
    assert "Deleted Containers:" in result.stdout and "Total reclaimed space:" in result.stdout
    changed = service.calls[-1]["changed"]
    assert "docker/build-01/container/old-runner" in changed and "docker/build-01/build-cache" in changed
    assert not any("/volume/" in c for c in changed)


def test_volume_prune_keeps_named_volumes_unless_all(docker):
    service, run = docker
    assert run("volume", "prune", "-f").stdout.startswith("Deleted Volumes:\n4e1f0c2d\n")
    assert "docker/build-01/volume/npm-cache" in service.objects()
    run("volume", "prune", "-a", "-f")
    objects = service.objects()
    assert "docker/build-01/volume/npm-cache" not in objects and "docker/build-01/volume/ci-pgdata" in objects


def test_listing_and_push_to_a_registry(docker):
    service, run = docker
    ps = run("ps").stdout.splitlines()
    assert ps[0].split()[:2] == ["CONTAINER", "ID"] and len(ps) == 2
    assert len(run("ps", "-a", "-q").stdout.split()) == 2
    assert "registry.acme.io/shop/checkout   2.4.1" in run("images").stdout
    pushed = run("push", "registry.acme.io/shop/checkout:2.4.1")
    assert pushed.exit_code == 0 and "registry/registry.acme.io/shop/checkout:2.4.1" in service.objects()
    assert not run("images").mutating and pushed.mutating


# -- networks ----------------------------------------------------------------------------------

NETWORK_STATE = {
    "docker": {
        "host": "ci-build-05",
        "images": [{"repository": "postgres", "tag": "15"}],
        "containers": [
            {"name": "ci-7713-app", "image": "postgres:15", "status": "running", "network": "ci-7713_default"},
            {"name": "perf-runner", "image": "postgres:15", "status": "exited", "network": "perf-lab"},
        ],
        "networks": [{"name": "ci-7713_default"}, {"name": "ci-7731_default"}, {"name": "perf-lab"}],
    }
}


@pytest.fixture
def networks():
    return cli(NETWORK_STATE, "docker")


def test_a_network_with_a_running_container_cannot_be_removed(networks):
    service, run = networks
    before = service.objects()
    result = run("network", "rm", "ci-7713_default")
    assert result.exit_code == 1 and "has active endpoints" in result.stderr
    assert service.objects() == before
    assert run("network", "rm", "perf-lab").exit_code == 0  # a stopped container does not hold it
    net_id = run("network", "ls", "--filter", "name=ci-7731", "-q").stdout.strip()
    assert len(net_id) == 12
    assert run("network", "rm", net_id).stdout == f"{net_id}\n"
    assert "docker/ci-build-05/network/ci-7731_default" not in service.objects()


def test_network_create_refuses_a_taken_name_and_ls_filters(networks):
    _, run = networks
    taken = run("network", "create", "ci-7731_default")
    assert taken.exit_code == 1
    assert "Error response from daemon: network with name ci-7731_default already exists" in taken.stderr
    names = run("network", "ls", "--filter", "name=ci-77", "--format", "{{.Name}}").stdout
    assert "ci-7713_default" in names and "ci-7731_default" in names and "perf-lab" not in names
    dangling = run("network", "ls", "--filter", "dangling=true", "--format", "{{.Name}}").stdout
    assert dangling == "ci-7731_default\n"
    assert "invalid filter 'colour'" in run("network", "ls", "--filter", "colour=red").stderr


def test_inspect_shows_a_networks_running_containers_and_ps_filters_by_network(networks):
    _, run = networks
    out = run("network", "inspect", "ci-7713_default").stdout
    assert '"Name": "ci-7713-app"' in out
    assert run("ps", "--filter", "network=ci-7713_default", "--format", "{{.Names}} {{.Networks}}").stdout == (
        "ci-7713-app ci-7713_default\n"
    )


# -- registry tags follow pushes ---------------------------------------------------------------

REG = "registry.acme.io/shop/checkout"
REGISTRY_STATE = {
    "docker": {
        "host": "build-01",
        "images": [
            {"repository": REG, "tag": "2.4.1", "id": "a" * 64},
            {"repository": REG, "tag": "latest", "id": "a" * 64},
            {"repository": REG, "tag": "2.4.2", "id": "b" * 64},
            {"repository": REG, "tag": "debug", "id": "c" * 64},
        ],
        "registries": {"registry.acme.io": {"shop/checkout": ["2.4.1", "2.4.2", "latest", "stable"]}},
    }
}


@pytest.fixture
def registry():
    return cli(REGISTRY_STATE, "docker")


def tag(service, name: str) -> str:
    return service.objects()[f"registry/{REG}:{name}"]["digest"]


def test_a_registry_tag_seeded_from_a_local_image_has_that_images_digest(registry):
    service, _ = registry
    assert tag(service, "latest") == tag(service, "2.4.1") != tag(service, "2.4.2")
    # A tag with no local image keeps a digest of its own.
    assert tag(service, "stable") not in (tag(service, "2.4.1"), tag(service, "2.4.2"))


def test_re_pushing_the_same_image_changes_nothing(registry):
    service, run = registry
    before = service.objects()
    pushed = run("push", f"{REG}:2.4.1")
    assert pushed.exit_code == 0 and pushed.mutating
    assert "2.4.1: digest: " + tag(service, "2.4.1") in pushed.stdout and "Layer already exists" in pushed.stdout
    assert service.objects() == before


def test_pushing_another_image_under_latest_moves_that_tag_only(registry):
    service, run = registry
    before = service.objects()
    assert run("tag", f"{REG}:2.4.2", f"{REG}:latest").exit_code == 0
    assert run("push", f"{REG}:latest").exit_code == 0
    after = service.objects()
    assert tag(service, "latest") == tag(service, "2.4.2")
    moved = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert moved == {f"registry/{REG}:latest", f"docker/build-01/image/{REG}:latest"}


def test_push_all_tags_publishes_every_local_tag_of_the_repository(registry):
    service, run = registry
    refused = run("push", "--all-tags", f"{REG}:latest")
    assert refused.exit_code == 1 and "tag can't be used with --all-tags/-a" in refused.stderr
    pushed = run("push", "-a", REG)
    assert pushed.exit_code == 0
    assert f"registry/{REG}:debug" in service.objects() and tag(service, "debug") != tag(service, "2.4.2")
    assert pushed.stdout.count(": digest: sha256:") == 4


def test_pull_follows_a_moved_tag_and_leaves_the_old_image_dangling(registry):
    service, run = registry
    assert "Image is up to date" in run("pull", f"{REG}:2.4.1").stdout
    # Another host moved `stable`; this host has never had it, then pulls it twice.
    first = run("pull", f"{REG}:stable")
    assert "Downloaded newer image" in first.stdout and "Image is up to date" in run("pull", f"{REG}:stable").stdout
    service.state["docker"]["_digests"]["registry.acme.io/shop/checkout:stable"] = "sha256:" + "d" * 64
    moved = run("pull", f"{REG}:stable")
    assert "Downloaded newer image" in moved.stdout and "sha256:" + "d" * 64 in moved.stdout
    images = service.state["docker"]["images"]
    dangling = [i for i in images if i["repository"] == "<none>"]
    assert len(dangling) == 1 and dangling[0]["id"] != next(i for i in images if i["tag"] == "stable")["id"]
