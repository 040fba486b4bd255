"""A parser and evaluator for the subset of HCL 2 that Terraform root modules are written in.

Covers what hand-written configurations use: blocks with labels, attributes, strings with
``${...}`` interpolation, heredocs, numbers, booleans, null, lists, objects, references
(``var.x``, ``local.x``, ``aws_s3_bucket.logs.id``, ``count.index``, ``each.key``), function
calls, arithmetic, comparisons, ``&&``/``||``/``!``, conditionals and ``[*]`` splats. Values not
known before apply (an attribute of a resource that does not exist yet) evaluate to
:data:`UNKNOWN`, which prints as ``(known after apply)``.

Errors raise :class:`HCLError` with file and line, formatted like Terraform's diagnostics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from suite.emulators.documents import load_json


class HCLError(Exception):
    def __init__(self, summary: str, detail: str, filename: str = "", line: int = 0) -> None:
        super().__init__(f"{summary}: {detail}")
        self.summary = summary
        self.detail = detail
        self.filename = filename
        self.line = line


class _Unknown:
    def __repr__(self) -> str:
        return "(known after apply)"


UNKNOWN: Any = _Unknown()


@dataclass
class Token:
    kind: str  # ident | number | string | heredoc | punct | nl | eof
    value: Any
    line: int


@dataclass
class Block:
    type: str
    labels: list[str]
    body: Body
    line: int
    filename: str


@dataclass
class Body:
    attributes: dict[str, tuple[Any, int]] = field(default_factory=dict)  # name -> (expr, line)
    blocks: list[Block] = field(default_factory=list)


_PUNCT = [
    "==",
    "!=",
    "<=",
    ">=",
    "&&",
    "||",
    "=>",
    "...",
    "[*]",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "=",
    ",",
    ":",
    ".",
    "?",
    "!",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    ">",
]


def tokenize(text: str, filename: str) -> list[Token]:
    toks: list[Token] = []
    i, line = 0, 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            toks.append(Token("nl", None, line))
            line += 1
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "#" or text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise HCLError("Unterminated comment", "This multi-line comment is not closed.", filename, line)
            line += text.count("\n", i, end)
            i = end + 2
            continue
        if text.startswith("<<", i):
            m = re.match(r"<<(-?)([A-Za-z_][A-Za-z0-9_]*)\n", text[i:])
            if m:
                strip, marker = m.group(1), m.group(2)
                start = i + m.end()
                lines = []
                j = start
                cur_line = line + 1
                while True:
                    end = text.find("\n", j)
                    piece = text[j:] if end < 0 else text[j:end]
                    if piece.strip() == marker:
                        break
                    if end < 0:
                        raise HCLError(
                            "Unterminated template string",
                            f"No closing marker {marker} was found for this heredoc.",
                            filename,
                            line,
                        )
                    lines.append(piece)
                    j = end + 1
                    cur_line += 1
                if strip:
                    indent = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
                    lines = [x[indent:] for x in lines]
                toks.append(Token("heredoc", _template("\n".join(lines) + "\n", filename, line), line))
                line = cur_line + 1
                i = (text.find("\n", j) + 1) if text.find("\n", j) >= 0 else n
                toks.append(Token("nl", None, line - 1))
                continue
        if c == '"':
            j = i + 1
            depth = 0
            while j < n:
                if text[j] == "\\":
                    j += 2
                    continue
                if text.startswith("${", j):
                    depth += 1
                    j += 2
                    continue
                if text[j] == "}" and depth:
                    depth -= 1
                elif text[j] == '"' and not depth:
                    break
                elif text[j] == "\n" and not depth:
                    raise HCLError(
                        "Invalid multi-line string",
                        "Quoted strings may not be split over multiple lines.",
                        filename,
                        line,
                    )
                j += 1
            if j >= n:
                raise HCLError(
                    "Unterminated template string", "No closing marker was found for the string.", filename, line
                )
            toks.append(Token("string", _template(_unescape(text[i + 1 : j]), filename, line), line))
            i = j + 1
            continue
        m = re.match(r"\d+(\.\d+)?([eE][+-]?\d+)?", text[i:])
        if m:
            raw = m.group(0)
            toks.append(Token("number", float(raw) if ("." in raw or "e" in raw.lower()) else int(raw), line))
            i += len(raw)
            continue
        m = re.match(r"[A-Za-z_][A-Za-z0-9_-]*", text[i:])
        if m:
            toks.append(Token("ident", m.group(0), line))
            i += len(m.group(0))
            continue
        for p in _PUNCT:
            if text.startswith(p, i):
                toks.append(Token("punct", p, line))
                i += len(p)
                break
        else:
            raise HCLError(
                "Invalid character", f"This character is not used within the language: {c!r}.", filename, line
            )
    toks.append(Token("eof", None, line))
    return toks


def _unescape(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(s[i])
        i += 1
    return "".join(out)


def _template(s: str, filename: str, line: int) -> Any:
    """A string with ``${expr}`` parts -> ("template", [str | expr]) or a plain str."""
    if "${" not in s:
        return s.replace("$${", "${")
    parts: list[Any] = []
    i = 0
    while i < len(s):
        j = s.find("${", i)
        if j < 0:
            parts.append(s[i:])
            break
        if j > 0 and s[j - 1] == "$":
            parts.append(s[i : j - 1] + "${")
            i = j + 2
            continue
        parts.append(s[i:j])
        depth, k = 1, j + 2
        while k < len(s) and depth:
            depth += 1 if s[k] == "{" else -1 if s[k] == "}" else 0
            k += 1
        inner = s[j + 2 : k - 1]
        parser = _Parser(tokenize(inner, filename), filename)
        parts.append(parser.expression())
        i = k
    return ("template", [p for p in parts if p != ""])


class _Parser:
    def __init__(self, toks: list[Token], filename: str) -> None:
        self.toks = toks
        self.i = 0
        self.filename = filename
        self.depth = 0  # inside (), [] or {} of an expression newlines do not end anything

    def peek(self, skip_nl: bool = False) -> Token:
        j = self.i
        while skip_nl and self.toks[j].kind == "nl":
            j += 1
        return self.toks[j]

    def next(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def skip_nl(self) -> None:
        while self.toks[self.i].kind == "nl":
            self.i += 1

    def error(self, summary: str, detail: str, tok: Token | None = None) -> HCLError:
        return HCLError(summary, detail, self.filename, (tok or self.peek()).line)

    def expect(self, value: str) -> Token:
        if self.depth:
            self.skip_nl()
        t = self.next()
        if t.kind != "punct" or t.value != value:
            raise self.error(
                "Invalid expression" if value not in "{}" else "Argument or block definition required",
                f"Expected {value!r}, found {t.value if t.value is not None else t.kind!r}.",
                t,
            )
        return t

    # bodies -----------------------------------------------------------------------------

    def body(self, closing: bool) -> Body:
        body = Body()
        while True:
            self.skip_nl()
            t = self.peek()
            if t.kind == "eof":
                if closing:
                    raise self.error(
                        "Unclosed configuration block",
                        "There is no closing brace for this block before the end of the file.",
                        t,
                    )
                return body
            if t.kind == "punct" and t.value == "}":
                if not closing:
                    raise self.error(
                        "Argument or block definition required", "An argument or block definition is required here.", t
                    )
                self.next()
                return body
            if t.kind != "ident":
                raise self.error(
                    "Argument or block definition required", "An argument or block definition is required here.", t
                )
            name = self.next().value
            nxt = self.peek()
            if nxt.kind == "punct" and nxt.value == "=":
                self.next()
                expr = self.expression()
                if name in body.attributes:
                    raise self.error(
                        "Attribute redefined",
                        f'The argument "{name}" was already set at line {body.attributes[name][1]}. Each argument may be set only once.',
                        t,
                    )
                body.attributes[name] = (expr, t.line)
                end = self.peek()
                if end.kind not in ("nl", "eof") and not (end.kind == "punct" and end.value == "}"):
                    raise self.error(
                        "Missing newline after argument", "An argument definition must end with a newline.", end
                    )
                continue
            labels: list[str] = []
            while self.peek().kind in ("string", "ident"):
                lab = self.next()
                labels.append(lab.value if isinstance(lab.value, str) else "")
            self.expect("{")
            inner = self.body(closing=True)
            body.blocks.append(Block(name, labels, inner, t.line, self.filename))

    # expressions ------------------------------------------------------------------------

    def expression(self) -> Any:
        cond = self.binary(0)
        if self._is("?"):
            self.next()
            a = self.expression()
            self.expect(":")
            b = self.expression()
            return ("cond", cond, a, b)
        return cond

    PREC = {
        "||": 1,
        "&&": 2,
        "==": 3,
        "!=": 3,
        "<": 4,
        ">": 4,
        "<=": 4,
        ">=": 4,
        "+": 5,
        "-": 5,
        "*": 6,
        "/": 6,
        "%": 6,
    }

    def _is(self, value: str) -> bool:
        t = self.peek(skip_nl=bool(self.depth))
        return t.kind == "punct" and t.value == value

    def binary(self, min_prec: int) -> Any:
        left = self.unary()
        while True:
            t = self.peek(skip_nl=bool(self.depth))
            prec = self.PREC.get(t.value) if t.kind == "punct" else None
            if prec is None or prec <= min_prec - 1 or prec < min_prec:
                return left
            if self.depth:
                self.skip_nl()
            self.next()
            right = self.binary(prec + 1)
            left = ("op", t.value, left, right)

    def unary(self) -> Any:
        if self._is("!"):
            self.next()
            return ("not", self.unary())
        if self._is("-"):
            self.next()
            return ("neg", self.unary())
        return self.postfix(self.primary())

    def postfix(self, node: Any) -> Any:
        while True:
            t = self.peek()
            if t.kind == "punct" and t.value == ".":
                self.next()
                attr = self.next()
                if attr.kind == "number":
                    node = ("index", node, ("lit", attr.value))
                elif attr.kind == "ident":
                    node = ("attr", node, attr.value)
                elif attr.kind == "punct" and attr.value == "*":
                    node = ("splat", node)
                else:
                    raise self.error("Invalid attribute name", "An attribute name is required after a dot.", attr)
            elif t.kind == "punct" and t.value == "[*]":
                self.next()
                node = ("splat", node)
            elif t.kind == "punct" and t.value == "[":
                self.next()
                self.depth += 1
                idx = self.expression()
                self.expect("]")
                self.depth -= 1
                node = ("index", node, idx)
            else:
                return node

    def primary(self) -> Any:
        if self.depth:
            self.skip_nl()
        t = self.next()
        if t.kind == "number":
            return ("lit", t.value)
        if t.kind in ("string", "heredoc"):
            return ("lit", t.value) if isinstance(t.value, str) else t.value
        if t.kind == "ident":
            if t.value in ("true", "false"):
                return ("lit", t.value == "true")
            if t.value == "null":
                return ("lit", None)
            if self.peek().kind == "punct" and self.peek().value == "(":
                self.next()
                self.depth += 1
                args = []
                while not self._is(")"):
                    args.append(self.expression())
                    if self._is(","):
                        self.next()
                    elif self._is("..."):
                        self.next()
                self.expect(")")
                self.depth -= 1
                return ("call", t.value, args, t.line)
            return ("ref", t.value, t.line)
        if t.kind == "punct" and t.value == "(":
            self.depth += 1
            e = self.expression()
            self.expect(")")
            self.depth -= 1
            return e
        if t.kind == "punct" and t.value == "[":
            self.depth += 1
            items = []
            if self.peek(skip_nl=True).kind == "ident" and self.peek(skip_nl=True).value == "for":
                raise self.error(
                    "Unsupported expression", "for expressions are not supported by this Terraform build.", t
                )
            while not self._is("]"):
                items.append(self.expression())
                if self._is(","):
                    self.next()
            self.expect("]")
            self.depth -= 1
            return ("list", items)
        if t.kind == "punct" and t.value == "{":
            self.depth += 1
            pairs = []
            while not self._is("}"):
                self.skip_nl()
                k = self.next()
                if k.kind == "ident":
                    key: Any = ("lit", k.value)
                elif k.kind == "string":
                    key = ("lit", k.value) if isinstance(k.value, str) else k.value
                elif k.kind == "punct" and k.value == "(":
                    key = self.expression()
                    self.expect(")")
                else:
                    raise self.error("Invalid object key", "An object key must be a name or a string.", k)
                sep = self.next()
                if sep.kind != "punct" or sep.value not in ("=", ":"):
                    raise self.error(
                        "Missing key/value separator",
                        'Expected an equals sign ("=") to mark the beginning of the attribute value.',
                        sep,
                    )
                pairs.append((key, self.expression()))
                if self._is(","):
                    self.next()
                self.skip_nl()
            self.expect("}")
            self.depth -= 1
            return ("object", pairs)
        raise self.error(
            "Invalid expression", "Expected the start of an expression, but found an invalid expression token.", t
        )


def parse(text: str, filename: str) -> Body:
    return _Parser(tokenize(text, filename), filename).body(closing=False)


# ---------------------------------------------------------------------------------------------
# Evaluation


Resolver = Callable[[str, int], Any]


def _fmt(v: Any) -> str:
    if v is UNKNOWN:
        return "${UNKNOWN}"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        raise HCLError(
            "Invalid template interpolation value",
            "Cannot include the given value in a string template: string required.",
        )
    return "" if v is None else str(v)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "tolist": lambda v: list(v),
    "toset": lambda v: sorted(set(v), key=str),
    "tomap": lambda v: dict(v),
    "tostring": lambda v: _fmt(v),
    "tonumber": lambda v: float(v) if "." in str(v) else int(v),
    "merge": lambda *ms: {k: v for m in ms for k, v in (m or {}).items()},
    "concat": lambda *ls: [x for lst in ls for x in lst],
    "length": lambda v: len(v),
    "lower": lambda s: s.lower(),
    "upper": lambda s: s.upper(),
    "join": lambda sep, lst: sep.join(_fmt(x) for x in lst),
    "split": lambda sep, s: s.split(sep),
    "jsonencode": lambda v: json.dumps(v, separators=(",", ":")),
    "jsondecode": lambda s: load_json(s),
    "lookup": lambda m, k, *d: m.get(k, d[0] if d else None),
    "contains": lambda lst, v: v in lst,
    "coalesce": lambda *vs: next((v for v in vs if v not in (None, "")), None),
    "replace": lambda s, a, b: s.replace(a, b),
    "trimspace": lambda s: s.strip(),
    "keys": lambda m: sorted(m),
    "values": lambda m: [m[k] for k in sorted(m)],
    "element": lambda lst, i: lst[int(i) % len(lst)],
    "format": lambda f, *a: re.sub(r"%[sdv]", "{}", f).format(*[_fmt(x) for x in a]),
    "min": lambda *a: min(a),
    "max": lambda *a: max(a),
    "abs": lambda a: abs(a),
    "try": lambda *a: next((v for v in a if v is not UNKNOWN), None),
    "can": lambda a: True,
    "sort": lambda lst: sorted(lst, key=str),
    "distinct": lambda lst: list(dict.fromkeys(lst)),
    "flatten": lambda lst: [y for x in lst for y in (x if isinstance(x, list) else [x])],
    "startswith": lambda s, p: s.startswith(p),
    "endswith": lambda s, p: s.endswith(p),
}


def evaluate(node: Any, resolve: Resolver, filename: str = "") -> Any:
    """Evaluate an expression; ``resolve(name, line)`` returns the value of a root reference."""
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "template":
        parts = [p if isinstance(p, str) else evaluate(p, resolve, filename) for p in node[1]]
        if any(p is UNKNOWN for p in parts):
            return UNKNOWN
        return "".join(_fmt(p) for p in parts)
    if kind == "ref":
        return resolve(node[1], node[2])
    if kind == "attr":
        base = evaluate(node[1], resolve, filename)
        if base is UNKNOWN:
            return UNKNOWN
        if hasattr(base, "hcl_attr"):
            return base.hcl_attr(node[2])
        if isinstance(base, dict):
            if node[2] not in base:
                raise HCLError(
                    "Unsupported attribute", f'This object does not have an attribute named "{node[2]}".', filename
                )
            return base[node[2]]
        if isinstance(base, list):
            return [
                x.hcl_attr(node[2]) if hasattr(x, "hcl_attr") else x.get(node[2]) if isinstance(x, dict) else None
                for x in base
            ]
        raise HCLError(
            "Unsupported attribute",
            f"Can't access attributes on a primitive-typed value ({type(base).__name__}).",
            filename,
        )
    if kind == "index":
        base = evaluate(node[1], resolve, filename)
        idx = evaluate(node[2], resolve, filename)
        if base is UNKNOWN or idx is UNKNOWN:
            return UNKNOWN
        if isinstance(base, _Ref):
            return base.index(idx)
        try:
            return base[int(idx)] if isinstance(base, list) else base[idx]
        except (KeyError, IndexError, TypeError, ValueError):
            raise HCLError(
                "Invalid index",
                f"The given key does not identify an element in this collection value: {idx!r}.",
                filename,
            ) from None
    if kind == "splat":
        base = evaluate(node[1], resolve, filename)
        if isinstance(base, _Ref):
            return base.all()
        return base if isinstance(base, list) else [base]
    if kind == "list":
        return [evaluate(x, resolve, filename) for x in node[1]]
    if kind == "object":
        out = {}
        for k, v in node[1]:
            key = evaluate(k, resolve, filename)
            out[str(key)] = evaluate(v, resolve, filename)
        return out
    if kind == "call":
        fn = FUNCTIONS.get(node[1])
        if fn is None:
            raise HCLError("Call to unknown function", f'There is no function named "{node[1]}".', filename, node[3])
        args = [evaluate(a, resolve, filename) for a in node[2]]
        if any(a is UNKNOWN for a in args):
            return UNKNOWN
        try:
            return fn(*args)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError) as exc:
            raise HCLError(
                "Error in function call", f'Call to function "{node[1]}" failed: {exc}.', filename, node[3]
            ) from None
    if kind == "not":
        v = evaluate(node[1], resolve, filename)
        return UNKNOWN if v is UNKNOWN else not v
    if kind == "neg":
        v = evaluate(node[1], resolve, filename)
        return UNKNOWN if v is UNKNOWN else -v
    if kind == "cond":
        c = evaluate(node[1], resolve, filename)
        if c is UNKNOWN:
            return UNKNOWN
        return evaluate(node[2] if c else node[3], resolve, filename)
    if kind == "op":
        a = evaluate(node[2], resolve, filename)
        b = evaluate(node[3], resolve, filename)
        if a is UNKNOWN or b is UNKNOWN:
            return UNKNOWN
        op = node[1]
        try:
            if op == "&&":
                return bool(a) and bool(b)
            if op == "||":
                return bool(a) or bool(b)
            if op == "==":
                return a == b
            if op == "!=":
                return a != b
            return {
                "<": lambda: a < b,
                ">": lambda: a > b,
                "<=": lambda: a <= b,
                ">=": lambda: a >= b,
                "+": lambda: a + b,
                "-": lambda: a - b,
                "*": lambda: a * b,
                "/": lambda: a / b,
                "%": lambda: a % b,
            }[op]()
        except TypeError:
            raise HCLError(
                "Invalid operand", f"Unsuitable value for the {op} operator: a number is required.", filename
            ) from None
    raise HCLError("Unsupported expression", f"{kind} expressions are not supported.", filename)


class _Ref:
    """A resource reference (``aws_instance.web``): attributes, count indexes and for_each keys."""

    def __init__(self, instances: Mapping[Any, Any], counted: bool) -> None:
        self.instances = instances
        self.counted = counted

    def hcl_attr(self, attr: str) -> Any:
        if self.counted:
            raise HCLError(
                "Missing resource instance key",
                'Because this resource has "count" or "for_each" set, its attributes must be accessed on specific instances.',
            )
        inst = self.instances.get(None, UNKNOWN)
        if inst is UNKNOWN:
            return UNKNOWN
        return inst.get(attr, UNKNOWN)

    def index(self, key: Any) -> Any:
        inst = self.instances.get(key if not isinstance(key, float) else int(key), UNKNOWN)
        return inst

    def all(self) -> list[Any]:
        return [v for _, v in sorted(self.instances.items(), key=lambda kv: str(kv[0]))]


def resource_ref(instances: Mapping[Any, Any], counted: bool) -> _Ref:
    return _Ref(instances, counted)


def is_unknown(v: Any) -> bool:
    if v is UNKNOWN:
        return True
    if isinstance(v, dict):
        return any(is_unknown(x) for x in v.values())
    if isinstance(v, list):
        return any(is_unknown(x) for x in v)
    return False
