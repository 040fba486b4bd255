"""Canonical serialisation: JSON for digests, YAML for the reviewable library files. Pure Python.

Digests hash a JSON rendering with sorted keys, no insignificant whitespace and text normalised
to NFC with ``\\n`` line ends, so two entries that differ only in key order or in how an editor
saved line endings have the same digest. The YAML form keeps schema key order (it reads better in
review), indents lists, and writes multi-line strings as literal blocks.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

import yaml


def normalize_text(text: str) -> str:
    return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))


def _normalize(value: Any) -> Any:
    if isinstance(value, str):
        return normalize_text(value)
    if isinstance(value, dict):
        return {normalize_text(str(k)): _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    return json.dumps(_normalize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_of(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


class _Dumper(yaml.SafeDumper):
    # Indent block sequences under their key ("key:\n  - item"), as people write them.
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


# Characters a YAML loader reads as line breaks: written raw they would change the value.
_BREAKS = ("\x85", "\u2028", "\u2029")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if any(b in value for b in _BREAKS):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(data: Any) -> str:
    """Deterministic YAML text for ``data`` (a dict in schema key order)."""
    text = yaml.dump(
        _normalize(data),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
        indent=2,
    )
    return text


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` atomically unless it already holds exactly that; True if written.

    Leaving unchanged files alone keeps their mtimes, so ``git status`` and editors stay quiet after
    an export of unchanged content.
    """
    data = text.encode("utf-8")
    if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
        return False
    # A fresh temporary (mkstemp: O_EXCL) renamed over the file: a symlink planted at a fixed
    # ``name.tmp`` would be written through, and one at ``path`` is replaced, not followed.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
