"""Agent-supplied documents, parsed under limits: the only way a shadowed CLI reads YAML or JSON.

Everything an agent hands an emulator as a document — a manifest for ``kubectl apply -f``, a
helm values file, ``--patch`` text, an AWS ``file://policy.json``, a terraform plan file — is
parsed here, with three limits a real tool has in some form and an emulator running next to the
harness must have in a strict one:

* **No aliases or anchors** (``&a`` / ``*a``): an alias re-uses a node, so nine aliases nested
  eight levels deep expand a 460-byte document into 9^8 nodes — the "billion laughs" of
  CVE-2019-11253, which took the harness process to 1.5 GB through ``kubectl apply -f`` (issue
  17). The refusal is the library loader's (:class:`content.schema.StrictLoader`, imported, not
  copied); kubectl itself refuses such documents with "document contains excessive aliasing"
  since that CVE, and agents' manifests do not use aliases.
* **Depth**: both YAML composition and ``json.loads`` recurse once per level, so a 100 000-deep
  ``[[[…]]]`` would raise RecursionError in the middle of a call (go-yaml and Go's encoding/json
  stop at 10 000 levels for the same reason). :data:`MAX_DEPTH` keeps every later recursive walk
  of the stored object (deep copies, canonical hashing, merges) far from Python's limit.
* **Size**: :data:`MAX_DOCUMENT`, the same cap as a file the shim reads for the CLI.

Errors carry the problem and its line; each CLI wraps them in its own message (kubectl's
``error converting YAML to JSON: yaml: line 3: …``, the AWS CLI's ``Invalid JSON``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from content.schema import StrictLoader
from suite.emulators.base import MAX_FILE

MAX_DOCUMENT = MAX_FILE
MAX_DEPTH = 100
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_STR = "tag:yaml.org,2002:str"
# A JSON string (with escapes) or one bracket: what the depth scan steps over.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


class DocumentError(ValueError):
    """A document an emulator refuses: its problem, the 1-based line when known, and the kind."""

    def __init__(self, problem: str, line: int | None = None, kind: str = "syntax") -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.kind = kind  # syntax | alias | depth | size | key

    @property
    def located(self) -> str:
        """``line 3: problem`` (go-yaml's way of placing an error), or the bare problem."""
        return f"line {self.line}: {self.problem}" if self.line else self.problem


def _go_key(value: Any) -> str:
    """A non-string mapping key as sigs.k8s.io/yaml turns it into a JSON key (``8080``, ``true``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


class _DocumentLoader(StrictLoader):
    """The library's strict loader, plus a depth limit, with YAML timestamps left as strings.

    Timestamps: Kubernetes and helm read YAML through sigs.k8s.io/yaml, which keeps an unquoted
    ``2026-03-02`` a string; PyYAML would make it a ``date`` that no JSON output can carry.
    """

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in StrictLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    # The library loader counts nesting too and refuses at its own 64 levels, in its own words;
    # the emulated tools refuse at MAX_DEPTH in theirs (compose_node below), so its counter stays
    # at zero here and the tools' message is the one an agent reads.
    @property
    def depth(self) -> int:
        return 0

    @depth.setter
    def depth(self, value: int) -> None:
        pass

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise DocumentError(f"exceeded max depth of {MAX_DEPTH}", mark.line + 1, "depth")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        for i, (key_node, value_node) in enumerate(node.value):
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _STR:
                key = self.construct_object(key_node, deep=deep)
                if not isinstance(key, str):
                    text = _go_key(key)
                    node.value[i] = (yaml.ScalarNode(_STR, text, key_node.start_mark, key_node.end_mark), value_node)
        return super().construct_mapping(node, deep=deep)


def _refuse_size(text: str) -> None:
    if len(text) > MAX_DOCUMENT:
        raise DocumentError(f"document of {len(text)} bytes exceeds the limit of {MAX_DOCUMENT}", kind="size")


def _yaml_failure(exc: yaml.YAMLError) -> DocumentError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    kind = "alias" if "aliases" in problem or "anchors" in problem else "syntax"
    if problem.startswith("mapping keys") or problem.startswith("duplicate key"):
        kind = "key"
    return DocumentError(problem, mark.line + 1 if mark is not None else None, kind)


def load_yaml_all(text: str) -> list[Any]:
    """Every document of a YAML stream (``---``-separated), under the limits above."""
    _refuse_size(text)
    loader = _DocumentLoader(text)
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    except yaml.YAMLError as exc:
        raise _yaml_failure(exc) from None
    finally:
        loader.dispose()


def load_yaml(text: str) -> Any:
    """A single YAML (or JSON) document; an empty one is None, as ``yaml.safe_load`` gives."""
    _refuse_size(text)
    loader = _DocumentLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise _yaml_failure(exc) from None
    finally:
        loader.dispose()


def json_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, strings skipped (no recursion, no parsing)."""
    depth = deepest = 0
    for m in _JSON_TOKEN.finditer(text):
        piece = m.group()
        if piece in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif piece in ("]", "}"):
            depth -= 1
    return deepest


def _no_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON (and every Go or AWS parser) does not.
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def load_json(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """A JSON document under the size and depth limits; ``ValueError`` subclasses on refusal."""
    _refuse_size(text)
    if json_depth(text) > max_depth:
        raise DocumentError(f"exceeded max depth of {max_depth}", kind="depth")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        # Python's own text ("Expecting value: line 1 column 2 (char 1)") is what the AWS CLI,
        # itself Python, prints; the line is in it already.
        raise DocumentError(str(exc), None, "syntax") from None
