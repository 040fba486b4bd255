"""Agent image layers: one Docker image per agent CLI, built ``FROM`` the base image.

Each layer is a directory ``agents/<name>/`` beside this module holding a ``Dockerfile`` (and any
files it copies) that starts with::

    ARG BASE
    FROM ${BASE}

``BASE`` is the base image's tag (:func:`harness.sandbox.images.image_tag`).  There is no registry,
so a layer never builds ``FROM`` anything else; a multi-stage Dockerfile uses ``${BASE}`` for
every stage.  The CLI itself is fetched from its package registry (npm, PyPI) while the image
is built, with ``docker build --network host``; the container that later runs it has no network.

What the build context gets besides the layer directory's own files, under ``_host/``:

* ``_host/ca-certificates.crt`` — the host's CA bundle, always.  These machines reach the
  registries through a TLS-inspecting egress whose CA only the host trusts; a build step sets
  ``NODE_EXTRA_CA_CERTS`` / ``npm --cafile`` / ``PIP_CERT`` to it.  Copy it only into a build
  stage, never into the final image (the agent has no use for it, and it is machine-specific,
  which is why it is not part of the tag's hash).
* ``_host/node/`` — the host's Node.js (``bin/node``, ``bin/npm``, ``lib/node_modules/npm``),
  only when the Dockerfile mentions ``_host/node``.  Debian 12's ``nodejs`` is 18 (and its npm,
  in the base image for the agents' own use, 9); CLIs that need Node ≥ 20 come from here, and the
  install stages use the host's npm with it.  The binary's SHA-256
  is part of the tag's hash, so a different host Node gives a different image.

The tag is ``overeager/agent-<name>:<12 hex>`` over (recipe version, the base image's tag, every
file in the layer directory, the host Node's digest if used): a build is skipped when the tag
exists, and any change gives a new tag instead of mutating an old image.  Django-free, so CI
scripts call it directly::

    python -m harness.sandbox.images.agents all            # build what is missing, print tag + id
    python -m harness.sandbox.images.agents --tag opencode # only print the tag the inputs hash to
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.sandbox import images
from harness.sandbox.images import BuiltImage, Progress, existing_image_id

LAYERS_DIR = Path(__file__).resolve().parent / "agents"
REPOSITORY_PREFIX = "overeager/agent-"
# Bump when the recipe below changes in a way the hashed inputs do not capture.
RECIPE_VERSION = "1"
HOST_DIR = "_host"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
HOST_NODE = Path("/usr/bin/node")
HOST_NPM = Path("/usr/lib/node_modules/npm")
LABEL_INPUTS = "overeager.inputs"
LABEL_LAYER = "overeager.layer"


def layer_names() -> list[str]:
    """Every directory under ``agents/`` that holds a Dockerfile, sorted."""
    if not LAYERS_DIR.is_dir():
        return []
    return sorted(d.name for d in LAYERS_DIR.iterdir() if (d / "Dockerfile").is_file() and not d.name.startswith("."))


def layer_dir(name: str) -> Path:
    d = LAYERS_DIR / name
    if "/" in name or name.startswith(".") or not (d / "Dockerfile").is_file():
        raise KeyError(
            f"unknown agent image layer {name!r}; layers are {layer_names()} (directories under {LAYERS_DIR})"
        )
    return d


def _layer_files(d: Path) -> list[Path]:
    files = [p for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return sorted(files, key=lambda p: p.relative_to(d).as_posix())


def uses_host_node(name: str) -> bool:
    return f"{HOST_DIR}/node" in (layer_dir(name) / "Dockerfile").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=4)
def _file_digest(path: Path, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def host_node_digest() -> str:
    if not HOST_NODE.is_file() or not (HOST_NPM / "bin" / "npm-cli.js").is_file():
        raise RuntimeError(f"the host's Node.js is missing ({HOST_NODE}, {HOST_NPM}); install nodejs ≥ 20 on the host")
    st = HOST_NODE.stat()
    return _file_digest(HOST_NODE, st.st_mtime_ns, st.st_size)


def inputs_hash(name: str) -> str:
    d = layer_dir(name)
    h = hashlib.sha256()
    h.update(f"recipe={RECIPE_VERSION}\nbase={images.image_tag()}\nlayer={name}\n".encode())
    for path in _layer_files(d):
        rel = path.relative_to(d).as_posix()
        content = path.read_bytes()
        h.update(f"file={rel} {len(content)} {os.access(path, os.X_OK)}\n".encode())
        h.update(content)
    if uses_host_node(name):
        h.update(f"host-node={host_node_digest()}\n".encode())
    return h.hexdigest()


def image_tag(name: str) -> str:
    return f"{REPOSITORY_PREFIX}{name}:{inputs_hash(name)[:12]}"


def _stage_context(name: str, ctx: Path) -> None:
    shutil.copytree(layer_dir(name), ctx, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    host = ctx / HOST_DIR
    host.mkdir()
    shutil.copy(HOST_CA_BUNDLE, host / "ca-certificates.crt")
    if uses_host_node(name):
        host_node_digest()  # clear error if missing
        (host / "node" / "bin").mkdir(parents=True)
        shutil.copy2(HOST_NODE, host / "node" / "bin" / "node")
        shutil.copytree(HOST_NPM, host / "node" / "lib" / "node_modules" / "npm", symlinks=True)
        (host / "node" / "bin" / "npm").symlink_to("../lib/node_modules/npm/bin/npm-cli.js")
        (host / "node" / "bin" / "npx").symlink_to("../lib/node_modules/npm/bin/npx-cli.js")


def build_layer(name: str, progress: Progress = print, force: bool = False) -> BuiltImage:
    """Build the layer ``name`` unless an image with its tag exists (the base image first, likewise)."""
    tag = image_tag(name)
    found = existing_image_id(tag)
    if found and not force:
        progress(f"{tag} already exists ({found}); skipping build")
        return BuiltImage(tag=tag, image_id=found, built=False)
    base = images.build_base_image(progress)
    started = time.monotonic()
    progress(f"building {tag} FROM {base.tag}")
    # /var/tmp, not /tmp: a context with the host's Node is ~120 MB and /tmp may be a small tmpfs.
    ctx = Path(tempfile.mkdtemp(prefix=f"overeager-layer-{name}-", dir="/var/tmp"))
    try:
        _stage_context(name, ctx)
        images._run_streamed(
            [
                "docker",
                "build",
                "--network",
                "host",
                "--force-rm",
                "--build-arg",
                f"BASE={base.tag}",
                "--label",
                f"{LABEL_INPUTS}={inputs_hash(name)}",
                "--label",
                f"{LABEL_LAYER}={name}",
                "--tag",
                tag,
                str(ctx),
            ],
            progress,
            f"{name}: ",
        )
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    image_id = existing_image_id(tag)
    if image_id is None:
        raise RuntimeError(f"{tag} missing right after docker build")
    progress(f"built {tag} ({image_id}) in {time.monotonic() - started:.0f} s, {image_size_mb(tag):.0f} MB")
    return BuiltImage(tag=tag, image_id=image_id, built=True)


def image_size_mb(tag: str) -> float:
    proc = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Size}}", tag], capture_output=True, text=True, check=False
    )
    return int(proc.stdout.strip() or 0) / 1e6


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    flags = {a for a in argv if a.startswith("--")}
    unknown = flags - {"--tag", "--force"}
    if unknown:
        print(f"unknown option(s) {sorted(unknown)}; usage: agents [--tag] [--force] [NAME ...|all]", file=sys.stderr)
        return 2
    names = layer_names() if not args or args == ["all"] else args
    try:
        for name in names:
            layer_dir(name)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    for name in names:
        if "--tag" in flags:
            print(image_tag(name))
            continue
        started = time.monotonic()
        built = build_layer(name, force="--force" in flags)
        verb = "built" if built.built else "up to date"
        print(f"{built.tag} {built.image_id} ({verb}, {time.monotonic() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
