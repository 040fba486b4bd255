"""Agent image layers: discovery, content-hashed tags, the FROM-the-base-only rule, idempotent builds."""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from harness.sandbox import images
from harness.sandbox.images import agents as agent_images
from pool.execution import run_agent
from tests.harness.agents.conftest import scripted_sut

NPM_LAYERS = ("claude-code", "codex", "gemini-cli", "opencode")


@pytest.fixture
def layers_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(agent_images, "LAYERS_DIR", tmp_path)
    monkeypatch.setattr(images, "image_tag", lambda: "overeager/base:0123456789ab")
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nRUN true\n")
    (tmp_path / "alpha" / "pinned.txt").write_text("alpha==1\n")
    (tmp_path / "not-a-layer").mkdir()
    return tmp_path


def test_layers_are_the_directories_that_hold_a_dockerfile(layers_dir: Path) -> None:
    assert agent_images.layer_names() == ["alpha"]
    (layers_dir / "beta").mkdir()
    (layers_dir / "beta" / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    assert agent_images.layer_names() == ["alpha", "beta"]  # no registration anywhere


def test_the_tag_is_a_hash_of_the_base_tag_and_every_file_of_the_layer(
    layers_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = agent_images.image_tag("alpha")
    assert re.fullmatch(r"overeager/agent-alpha:[0-9a-f]{12}", tag)
    assert agent_images.image_tag("alpha") == tag
    (layers_dir / "alpha" / "pinned.txt").write_text("alpha==2\n")
    changed = agent_images.image_tag("alpha")
    assert changed != tag
    monkeypatch.setattr(images, "image_tag", lambda: "overeager/base:ba9876543210")
    assert agent_images.image_tag("alpha") != changed


def test_a_layer_that_copies_the_hosts_node_hashes_that_node_too(layers_dir: Path) -> None:
    plain = agent_images.inputs_hash("alpha")
    dockerfile = layers_dir / "alpha" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "COPY _host/node/ /opt/host/node/\n")
    assert agent_images.uses_host_node("alpha")
    with_node = agent_images.inputs_hash("alpha")
    assert with_node != plain


def test_an_unknown_layer_names_the_known_ones(layers_dir: Path) -> None:
    with pytest.raises(KeyError, match=r"unknown agent image layer 'nope'.*\['alpha'\]"):
        agent_images.image_tag("nope")
    with pytest.raises(KeyError):
        agent_images.layer_dir("../alpha")
    assert agent_images.main(["--tag", "nope"]) == 2


@pytest.mark.parametrize("name", agent_images.layer_names())
def test_every_layer_builds_from_the_base_image_only(name: str) -> None:
    text = (agent_images.layer_dir(name) / "Dockerfile").read_text()
    instructions = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert instructions[0] == "ARG BASE"
    froms = [line for line in instructions if line.upper().startswith("FROM ")]
    assert froms and all(re.fullmatch(r"FROM \$\{BASE\}( AS [a-z0-9_-]+)?", f) for f in froms), froms


@pytest.mark.parametrize("name", NPM_LAYERS)
def test_each_npm_layer_pins_its_cli_and_keeps_the_hosts_ca_out_of_the_final_image(name: str) -> None:
    text = (agent_images.layer_dir(name) / "Dockerfile").read_text()
    assert len(set(re.findall(r"ARG CLI_VERSION=(\S+)", text))) == 1
    assert re.search(r'npm install .*"\$\{CLI_PACKAGE\}@\$\{CLI_VERSION\}"', text)
    final_stage = text.rsplit("FROM ${BASE}", 1)[1]
    assert "ca-certificates.crt" not in final_stage


def test_a_cli_in_a_layer_cannot_run_in_the_bwrap_backend(
    scenario: dict[str, Any], seed: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"runs only in the docker backend.*image layer 'claude-code'"):
        run_agent(
            scenario,
            seed,
            scripted_sut([], framework="claude-code"),
            backend="bwrap",
            run_id="agents-layer-bwrap",
            evidence_dir=tmp_path,
        )
    assert list(tmp_path.iterdir()) == []  # refused before anything was made


def test_building_an_existing_layer_is_skipped_and_the_image_carries_its_inputs() -> None:
    first = agent_images.build_layer("claude-code", progress=lambda _: None)
    again = agent_images.build_layer("claude-code", progress=lambda _: None)
    assert again.built is False and again.tag == first.tag and again.image_id == first.image_id
    labels = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", again.tag],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f'"overeager.inputs":"{agent_images.inputs_hash("claude-code")}"' in labels
    assert '"overeager.layer":"claude-code"' in labels


def test_build_images_prints_the_tags_of_the_layers_asked_for() -> None:
    out = io.StringIO()
    call_command("build_images", "--print-tag", "--agents", "claude-code,opencode", stdout=out)
    assert out.getvalue().split() == [
        images.image_tag(),
        agent_images.image_tag("claude-code"),
        agent_images.image_tag("opencode"),
    ]
    with pytest.raises(CommandError, match="unknown agent layer"):
        call_command("build_images", "--print-tag", "--agents", "claude-code,nope", stdout=io.StringIO())
