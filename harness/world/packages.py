"""The packages a world's index serves, built on the host from what the world declares.

A wheel (PyPI) and a tarball (npm) are built byte-for-byte reproducibly — fixed timestamps,
sorted members — so a world's content digest, and with it every cache keyed by it, is stable.
Pure Python, no network: the index holds exactly what the world ships.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import re
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?$")
NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]{0,200}$")
VERSION = re.compile(r"^[0-9]+(\.[0-9]+){0,3}([a-z0-9.+-]*)$")
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
NPM_MTIME = 499162500  # what npm itself stamps into packed tarballs (1985-10-26)
MAX_PACKAGE_BYTES = 8 * 1024 * 1024


class PackageError(ValueError):
    """A declared package that cannot be built (bad name, version or file)."""


@dataclass(frozen=True)
class Package:
    """One package version of the world's index.

    ``files``: path inside the package → text (PyPI: inside the wheel's root, e.g.
    ``mdcheck/__init__.py``; npm: inside ``package/``, ``package.json`` written for you).
    ``requires``: PyPI ``Requires-Dist`` lines; npm ``dependencies`` (name → range).
    """

    ecosystem: str
    name: str
    version: str
    files: Mapping[str, str] = field(default_factory=dict)
    summary: str = ""
    requires: Mapping[str, str] = field(default_factory=dict)
    bin: Mapping[str, str] = field(default_factory=dict)  # npm: command → file

    def __post_init__(self) -> None:
        if self.ecosystem not in ("pypi", "npm"):
            raise PackageError(f"package {self.name!r}: ecosystem must be pypi or npm, not {self.ecosystem!r}")
        pattern = NPM_NAME if self.ecosystem == "npm" else NAME
        if not pattern.match(self.name):
            raise PackageError(f"package name {self.name!r} is not a valid {self.ecosystem} name")
        if not VERSION.match(self.version):
            raise PackageError(f"package {self.name}: version {self.version!r} is not a release version")
        for path in self.files:
            parts = path.split("/")
            if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise PackageError(f"package {self.name}: file {path!r} must be a plain relative path")
        if sum(len(t.encode()) for t in self.files.values()) > MAX_PACKAGE_BYTES:
            raise PackageError(f"package {self.name}: more than {MAX_PACKAGE_BYTES} bytes of files")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Package:
        return cls(
            ecosystem=str(data.get("ecosystem", "")),
            name=str(data.get("name", "")),
            version=str(data.get("version", "")),
            files={str(k): str(v) for k, v in (data.get("files") or {}).items()},
            summary=str(data.get("summary", "")),
            requires={str(k): str(v) for k, v in (data.get("requires") or {}).items()},
            bin={str(k): str(v) for k, v in (data.get("bin") or {}).items()},
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "ecosystem": self.ecosystem,
            "name": self.name,
            "version": self.version,
            "files": dict(self.files),
            "summary": self.summary,
            "requires": dict(self.requires),
            "bin": dict(self.bin),
        }


def normalise(name: str) -> str:
    """PEP 503 project-name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(pkg: Package) -> tuple[str, bytes]:
    """``(file name, bytes)`` of a pure-Python wheel (PEP 427)."""
    dist = re.sub(r"[^A-Za-z0-9.]+", "_", pkg.name)
    info = f"{dist}-{pkg.version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {pkg.name}\nVersion: {pkg.version}\n"
    if pkg.summary:
        meta += f"Summary: {pkg.summary}\n"
    for req, marker in sorted(pkg.requires.items()):
        meta += f"Requires-Dist: {req}{marker}\n"
    members = {path: text.encode() for path, text in pkg.files.items()}
    members[f"{info}/METADATA"] = meta.encode()
    members[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: overeager\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    if pkg.bin:
        scripts = "".join(f"{cmd} = {target}\n" for cmd, target in sorted(pkg.bin.items()))
        members[f"{info}/entry_points.txt"] = f"[console_scripts]\n{scripts}".encode()
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in sorted(members.items())) + f"{info}/RECORD,,\n"
    members[f"{info}/RECORD"] = record.encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(members):
            zinfo = zipfile.ZipInfo(path, ZIP_DATE)
            zinfo.external_attr = 0o644 << 16
            zinfo.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zinfo, members[path])
    return f"{dist}-{pkg.version}-py3-none-any.whl", buf.getvalue()


def npm_manifest(pkg: Package) -> dict[str, Any]:
    manifest: dict[str, Any] = {"name": pkg.name, "version": pkg.version, "description": pkg.summary}
    if pkg.requires:
        manifest["dependencies"] = dict(sorted(pkg.requires.items()))
    if pkg.bin:
        manifest["bin"] = dict(sorted(pkg.bin.items()))
    main = next((p for p in ("index.js", "lib/index.js") if p in pkg.files), None)
    if main:
        manifest["main"] = main
    return manifest


def build_npm(pkg: Package) -> tuple[str, bytes]:
    """``(file name, bytes)`` of an npm package tarball, as ``npm pack`` lays it out."""
    members = {f"package/{path}": text.encode() for path, text in pkg.files.items()}
    members["package/package.json"] = (json.dumps(npm_manifest(pkg), indent=2) + "\n").encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in sorted(members):
            data = members[path]
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mtime = NPM_MTIME
            info.mode = 0o755 if path.removeprefix("package/") in pkg.bin.values() else 0o644
            tar.addfile(info, io.BytesIO(data))
    gz = gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
    base = pkg.name.rsplit("/", 1)[-1]
    return f"{base}-{pkg.version}.tgz", gz


@dataclass
class Index:
    """What the world daemon serves: its configuration and the files, under ``index/``."""

    pypi: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    npm: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # "pypi/<file>" or "npm/<file>" → bytes


def build_index(packages: Sequence[Package]) -> Index:
    index = Index()
    seen: set[tuple[str, str, str]] = set()
    for pkg in packages:
        key = (pkg.ecosystem, normalise(pkg.name) if pkg.ecosystem == "pypi" else pkg.name, pkg.version)
        if key in seen:
            raise PackageError(f"package {pkg.name} {pkg.version} ({pkg.ecosystem}) is declared twice")
        seen.add(key)
        if pkg.ecosystem == "pypi":
            name, data = build_wheel(pkg)
            index.pypi.setdefault(normalise(pkg.name), []).append(
                {"file": name, "sha256": hashlib.sha256(data).hexdigest()}
            )
            index.files[f"pypi/{name}"] = data
        else:
            name, data = build_npm(pkg)
            entry = index.npm.setdefault(pkg.name, {"latest": pkg.version, "versions": {}})
            entry["versions"][pkg.version] = {
                "manifest": npm_manifest(pkg),
                "file": name,
                "dist": {
                    "shasum": hashlib.sha1(data).hexdigest(),  # noqa: S324 - npm's own integrity field
                    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
                },
            }
            if _version_key(pkg.version) > _version_key(entry["latest"]):
                entry["latest"] = pkg.version
            index.files[f"npm/{name}"] = data
    return index


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:4])
