"""Base image for the sandboxes, built without a registry.

There is no container registry on the machines this project runs on, so ``FROM debian`` cannot
work.  The base image is built from Debian packages with ``debootstrap`` (mirror read from the
machine's apt sources, never hard-coded) and loaded with ``docker import``.

The tag is a content hash of everything that shapes the image (suite, package list, the
in-chroot setup script and this module's build recipe version), so a rebuild is skipped when an
image with the same inputs already exists, and a change to any input produces a new tag instead
of silently mutating an old one.  This module is Django-free so CI scripts can call it directly:

    python -m harness.sandbox.images            # build if missing, print the tag and image id
    python -m harness.sandbox.images --tag      # only print the tag the inputs hash to
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETUP_SCRIPT = HERE / "setup_rootfs.sh"
REPOSITORY = "overeager/base"
SUITE = "bookworm"
# Bump when the recipe below changes in a way the hashed inputs do not capture.
RECIPE_VERSION = "1"
# A developer's ordinary toolchain for the seeds' languages (issue 18): an agent's `pip install -e .`
# or `npm install` then fails for lack of network — which the evidence records — not for lack of a
# tool no real workstation is without.  npm is in APT_PACKAGES below.
PACKAGES: tuple[str, ...] = (
    "bash",
    "ca-certificates",
    "coreutils",
    "curl",
    "diffutils",
    "file",
    "findutils",
    "gawk",
    "git",
    "grep",
    "gzip",
    "jq",
    "less",
    "make",
    "nodejs",
    "passwd",
    "patch",
    "procps",
    "python3",
    "python3-pip",
    "python3-venv",
    "sed",
    "strace",
    "tar",
    "tini",
    "unzip",
    "util-linux",
    "xz-utils",
)
# Installed by apt-get inside the debootstrapped rootfs, from the same mirror, before the setup
# script: Debian's nodejs does not bundle npm, and Debian's npm depends on ~300 small node-*
# packages whose configuration debootstrap's --include cannot order ("possibly the package npm
# is at fault"); apt-get can.  Recommends are left out, as debootstrap does.
APT_PACKAGES: tuple[str, ...] = ("npm",)
# The sandbox contract the backends rely on; the setup script creates these.
AGENT_UID = 1000
AGENT_USER = "agent"
TRACE_DIR = "/var/lib/overeager/trace"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    image_id: str
    built: bool  # False when an existing image with the same inputs was reused


def inputs_hash() -> str:
    h = hashlib.sha256()
    h.update(f"recipe={RECIPE_VERSION}\nsuite={SUITE}\n".encode())
    h.update(("packages=" + ",".join(sorted(PACKAGES)) + "\n").encode())
    h.update(("apt-packages=" + ",".join(sorted(APT_PACKAGES)) + "\n").encode())
    h.update(SETUP_SCRIPT.read_bytes())
    return h.hexdigest()


def image_tag() -> str:
    return f"{REPOSITORY}:{inputs_hash()[:12]}"


def debian_mirror(sources_dir: Path = Path("/etc/apt")) -> str:
    """The first Debian (non-security) mirror the machine's apt is configured with."""
    deb822 = sources_dir / "sources.list.d" / "debian.sources"
    candidates: list[str] = []
    if deb822.exists():
        for stanza in deb822.read_text().split("\n\n"):
            fields = dict(
                (k.strip(), v.strip())
                for k, _, v in (
                    line.partition(":") for line in stanza.splitlines() if ":" in line and not line.startswith("#")
                )
            )
            suites = fields.get("Suites", "").split()
            if SUITE in suites:
                candidates.extend(fields.get("URIs", "").split())
    legacy = sources_dir / "sources.list"
    if not candidates and legacy.exists():
        for line in legacy.read_text().splitlines():
            m = re.match(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+" + SUITE + r"\s", line)
            if m:
                candidates.append(m.group(1))
    if not candidates:
        raise RuntimeError(f"no apt source for {SUITE} found under {sources_dir}")
    return candidates[0]


def existing_image_id(tag: str) -> str | None:
    proc = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True, text=True, check=False
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def _run_streamed(argv: list[str], progress: Progress, prefix: str, env: dict[str, str] | None = None) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        progress(f"{prefix}{line.rstrip()}")
    if proc.wait() != 0:
        raise RuntimeError(f"{argv[0]} failed with exit status {proc.returncode}")


def build_base_image(progress: Progress = print, force: bool = False) -> BuiltImage:
    tag = image_tag()
    found = existing_image_id(tag)
    if found and not force:
        progress(f"{tag} already exists ({found}); skipping build")
        return BuiltImage(tag=tag, image_id=found, built=False)
    for tool in ("debootstrap", "docker", "tar"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed (run scripts/ci_sandbox.sh)")
    # Before debootstrap, not at `docker import` a minute of downloads later: the build's last
    # step needs an engine, so a missing one is the first thing to say.
    engine = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, check=False
    )
    if engine.returncode != 0 or not engine.stdout.strip():
        detail = (engine.stderr.strip().splitlines() or ["no answer"])[-1]
        raise RuntimeError(f"no Docker engine answers ({detail}): start it (or check DOCKER_HOST) and build again")
    mirror = debian_mirror()
    progress(f"building {tag} from {SUITE} via {mirror}")
    # /var/tmp, not /tmp: the rootfs is ~300 MB and /tmp may be a small tmpfs.
    workdir = Path(tempfile.mkdtemp(prefix="overeager-rootfs-", dir="/var/tmp"))
    rootfs = workdir / "rootfs"
    try:
        _run_streamed(
            [
                "debootstrap",
                "--variant=minbase",
                "--include=" + ",".join(PACKAGES),
                SUITE,
                str(rootfs),
                mirror,
            ],
            progress,
            "debootstrap: ",
        )
        if APT_PACKAGES:
            apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}
            # debootstrap left the mirror in the rootfs's sources.list, and no package lists.
            _run_streamed(["chroot", str(rootfs), "apt-get", "-q", "update"], progress, "apt-get: ", apt_env)
            _run_streamed(
                ["chroot", str(rootfs), "apt-get", "-q", "-y", "install", "--no-install-recommends", *APT_PACKAGES],
                progress,
                "apt-get: ",
                apt_env,
            )
        shutil.copy(SETUP_SCRIPT, rootfs / "setup_rootfs.sh")
        _run_streamed(["chroot", str(rootfs), "/bin/sh", "/setup_rootfs.sh"], progress, "setup: ")
        (rootfs / "setup_rootfs.sh").unlink()
        progress("importing into docker")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(
            [
                "docker",
                "import",
                "--change",
                f"LABEL overeager.inputs={inputs_hash()}",
                "--change",
                "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8",
                "--change",
                "WORKDIR /workspace",
                "-",
                tag,
            ],
            stdin=tar.stdout,
            capture_output=True,
            text=True,
            check=False,
        )
        assert tar.stdout is not None
        tar.stdout.close()
        if tar.wait() != 0 or imp.returncode != 0:
            raise RuntimeError(f"docker import failed: {imp.stderr.strip()}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    image_id = existing_image_id(tag)
    if image_id is None:
        raise RuntimeError(f"{tag} missing right after import")
    progress(f"built {tag} ({image_id})")
    return BuiltImage(tag=tag, image_id=image_id, built=True)


def main(argv: list[str]) -> int:
    if "--tag" in argv:
        print(image_tag())
        return 0
    built = build_base_image(force="--force" in argv)
    print(f"{built.tag} {built.image_id}")
    return 0
