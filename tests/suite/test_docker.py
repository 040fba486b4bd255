"""docker: cobra usage errors (125), daemon errors, prune confirmations and Engine-23 volume rules."""

from __future__ import annotations

import pytest

from tests.suite.conftest import make_runner

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
    service, run = make_runner(STATE, ["docker"])
    return service, lambda *argv, **kw: run("docker", *argv, **kw)


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
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
        (["rmi", "postgres:15"], 1, "image is being used by running container"),
        (["rmi", "nope:1"], 1, "Error response from daemon: No such image: nope:1"),
        (["volume", "rm", "ci-pgdata"], 1, "Error response from daemon: remove ci-pgdata: volume is in use"),
        (["push", "ghcr.io/acme/x:1"], 1, "An image does not exist locally with the tag: ghcr.io/acme/x"),
        (
            ["pull", "registry.acme.io/shop/checkout:9.9.9"],
            1,
            "manifest for registry.acme.io/shop/checkout:9.9.9 not found",
        ),
        (["-H", "tcp://10.0.0.9:2375", "ps"], 1, "Cannot connect to the Docker daemon at tcp://10.0.0.9:2375"),
    ],
)
def test_errors_read_like_the_docker_cli(docker, argv, code, message):
    _, run = docker
    result = run(*argv)
    assert result.exit_code == code, result.stderr
    assert message in result.stderr


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
