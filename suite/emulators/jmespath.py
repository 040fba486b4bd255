"""The part of JMESPath (https://jmespath.org/specification.html) that ``aws --query`` users write.

Supported: identifiers (bare or quoted), sub-expressions ``a.b``, index ``[0]``/``[-1]``, slices
``[1:3]``, list and object projections ``[*]``/``*``, flatten ``[]``, filters ``[?a=='x' && b>`1`]``
with comparisons and ``!``, ``||``, ``&&``, pipes ``|``, multi-select lists ``[a, b]`` and hashes
``{A: a, B: b}``, literals (`` `json` `` and ``'raw'``), ``@``, and the functions length, contains,
starts_with, ends_with, sort, sort_by, join, keys, values, to_string, max, min, reverse.
Anything else raises :class:`JMESPathError` with the position, as the real CLI reports a bad query.
"""

from __future__ import annotations

import json
import re
from typing import Any

from suite.emulators.documents import DocumentError, load_json


class JMESPathError(ValueError):
    pass


_TOKEN = re.compile(
    r"""\s*(?:
    (?P<num>-?\d+)|
    (?P<ident>[A-Za-z_][A-Za-z0-9_]*)|
    (?P<qident>"(?:[^"\\]|\\.)*")|
    (?P<raw>'(?:[^'\\]|\\.)*')|
    (?P<lit>`(?:[^`\\]|\\.)*`)|
    (?P<op>\|\||&&|==|!=|<=|>=|\[\?|\[\]|[\[\]{}().,:|*@!<>&])
    )""",
    re.X,
)


def _tokens(expr: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(expr):
        if expr[pos:].strip() == "":
            break
        m = _TOKEN.match(expr, pos)
        if not m:
            raise JMESPathError(
                f"Bad jmespath expression: Unknown token '{expr[pos:].strip()[:1]}':\n{expr}\n{' ' * pos}^"
            )
        pos = m.end()
        kind = m.lastgroup
        text = m.group(kind or "")
        if kind == "num":
            out.append(("num", int(text)))
        elif kind == "ident":
            out.append(("ident", text))
        elif kind == "qident":
            out.append(("ident", json.loads(text)))
        elif kind == "raw":
            out.append(("lit", text[1:-1].replace("\\'", "'")))
        elif kind == "lit":
            body = text[1:-1].replace("\\`", "`")
            try:
                out.append(("lit", load_json(body)))
            except DocumentError:
                out.append(("lit", body))
        else:
            out.append((text, text))
    out.append(("eof", None))
    return out


class _Parser:
    """Pratt parser over the token list, producing a small AST of tuples."""

    BP = {
        "eof": 0,
        "|": 1,
        "||": 2,
        "&&": 3,
        "!=": 5,
        "==": 5,
        "<": 5,
        "<=": 5,
        ">": 5,
        ">=": 5,
        ".": 40,
        "[": 55,
        "[?": 55,
        "[]": 55,
        "(": 60,
    }

    def __init__(self, expr: str) -> None:
        self.expr = expr
        self.toks = _tokens(expr)
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i][0]

    def take(self, kind: str | None = None) -> tuple[str, Any]:
        tok = self.toks[self.i]
        if kind is not None and tok[0] != kind:
            raise JMESPathError(f"Bad jmespath expression: expected {kind!r}, got {tok[0]!r}: {self.expr}")
        self.i += 1
        return tok

    def parse(self) -> Any:
        node = self.expression(0)
        if self.peek() != "eof":
            raise JMESPathError(f"Bad jmespath expression: Unexpected token {self.toks[self.i][1]!r}: {self.expr}")
        return node

    def expression(self, rbp: int) -> Any:
        left = self.nud()
        while rbp < self.BP.get(self.peek(), 0):
            left = self.led(left)
        return left

    def nud(self) -> Any:
        kind, value = self.take()
        if kind == "ident":
            if self.peek() == "(":
                self.take("(")
                args = []
                while self.peek() != ")":
                    args.append(self.expression(0))
                    if self.peek() == ",":
                        self.take(",")
                self.take(")")
                return ("call", value, args)
            return ("field", value)
        if kind == "lit":
            return ("lit", value)
        if kind == "num":
            return ("lit", value)
        if kind == "@":
            return ("current",)
        if kind == "*":
            return ("values", ("current",), self.projection_rhs())
        if kind == "!":
            return ("not", self.expression(45))
        if kind == "(":
            node = self.expression(0)
            self.take(")")
            return node
        if kind == "[]":
            return ("flatten", ("current",), self.projection_rhs())
        if kind == "[?":
            cond = self.expression(0)
            self.take("]")
            return ("filter", ("current",), cond, self.projection_rhs())
        if kind == "[":
            return self.bracket(("current",))
        if kind == "{":
            pairs = []
            while True:
                key = self.take("ident")[1]
                self.take(":")
                pairs.append((key, self.expression(0)))
                if self.peek() == ",":
                    self.take(",")
                    continue
                break
            self.take("}")
            return ("hash", pairs)
        raise JMESPathError(f"Bad jmespath expression: Unexpected token {value!r}: {self.expr}")

    def bracket(self, left: Any) -> Any:
        if self.peek() == "*":
            self.take("*")
            self.take("]")
            return ("project", left, self.projection_rhs())
        if self.peek() in ("num", ":"):
            parts: list[int | None] = []
            cur: int | None = None
            colons = 0
            while self.peek() != "]":
                k, v = self.take()
                if k == "num":
                    cur = v
                elif k == ":":
                    parts.append(cur)
                    cur = None
                    colons += 1
                else:
                    raise JMESPathError(f"Bad jmespath expression: {self.expr}")
            self.take("]")
            if colons == 0:
                return ("index", left, cur)
            parts.append(cur)
            while len(parts) < 3:
                parts.append(None)
            return ("project", ("slice", left, parts), self.projection_rhs())
        items = []
        while True:
            items.append(self.expression(0))
            if self.peek() == ",":
                self.take(",")
                continue
            break
        self.take("]")
        return ("list", left, items)

    def projection_rhs(self) -> Any:
        if self.BP.get(self.peek(), 0) < 10:
            return ("current",)
        if self.peek() == ".":
            self.take(".")
            return self.dot_rhs()
        if self.peek() in ("[", "[?", "[]"):
            return self.expression(10)
        raise JMESPathError(f"Bad jmespath expression: {self.expr}")

    def dot_rhs(self) -> Any:
        if self.peek() == "ident":
            return self.nud()
        if self.peek() == "*":
            self.take("*")
            return ("values", ("current",), self.projection_rhs())
        if self.peek() in ("[", "{"):
            return self.nud()
        raise JMESPathError(f"Bad jmespath expression: Expecting: identifier after '.': {self.expr}")

    def led(self, left: Any) -> Any:
        kind, _ = self.take()
        if kind == ".":
            if self.peek() == "*":
                self.take("*")
                return ("values", left, self.projection_rhs())
            return ("sub", left, self.dot_rhs())
        if kind == "[":
            return self.bracket(left)
        if kind == "[]":
            return ("flatten", left, self.projection_rhs())
        if kind == "[?":
            cond = self.expression(0)
            self.take("]")
            return ("filter", left, cond, self.projection_rhs())
        if kind == "|":
            return ("pipe", left, self.expression(1))
        if kind in ("||", "&&"):
            return (kind, left, self.expression(self.BP[kind]))
        if kind in ("==", "!=", "<", "<=", ">", ">="):
            return ("cmp", kind, left, self.expression(self.BP[kind]))
        raise JMESPathError(f"Bad jmespath expression: {self.expr}")


def _truthy(v: Any) -> bool:
    return not (v is None or v is False or v == "" or v == [] or v == {})


def _eval(node: Any, data: Any) -> Any:
    op = node[0]
    if op == "current":
        return data
    if op == "lit":
        return node[1]
    if op == "field":
        return data.get(node[1]) if isinstance(data, dict) else None
    if op == "sub":
        left = _eval(node[1], data)
        return None if left is None else _eval(node[2], left)
    if op == "index":
        left = _eval(node[1], data)
        if not isinstance(left, list):
            return None
        i = node[2]
        return left[i] if -len(left) <= i < len(left) else None
    if op == "slice":
        left = _eval(node[1], data)
        if not isinstance(left, list):
            return None
        a, b, c = node[2]
        return left[slice(a, b, c)]
    if op == "project":
        left = _eval(node[1], data)
        if not isinstance(left, list):
            return None
        return [r for r in (_eval(node[2], x) for x in left) if r is not None]
    if op == "values":
        left = _eval(node[1], data)
        if not isinstance(left, dict):
            return None
        return [r for r in (_eval(node[2], x) for x in left.values()) if r is not None]
    if op == "flatten":
        left = _eval(node[1], data)
        if not isinstance(left, list):
            return None
        flat: list[Any] = []
        for x in left:
            flat.extend(x if isinstance(x, list) else [x])
        return [r for r in (_eval(node[2], x) for x in flat) if r is not None]
    if op == "filter":
        left = _eval(node[1], data)
        if not isinstance(left, list):
            return None
        kept = [x for x in left if _truthy(_eval(node[2], x))]
        return [r for r in (_eval(node[3], x) for x in kept) if r is not None]
    if op == "pipe":
        return _eval(node[2], _eval(node[1], data))
    if op == "||":
        left = _eval(node[1], data)
        return left if _truthy(left) else _eval(node[2], data)
    if op == "&&":
        left = _eval(node[1], data)
        return _eval(node[2], data) if _truthy(left) else left
    if op == "not":
        return not _truthy(_eval(node[1], data))
    if op == "cmp":
        a, b = _eval(node[2], data), _eval(node[3], data)
        if node[1] == "==":
            return a == b
        if node[1] == "!=":
            return a != b
        if (
            not isinstance(a, (int, float))
            or not isinstance(b, (int, float))
            or isinstance(a, bool)
            or isinstance(b, bool)
        ):
            return None
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[node[1]]
    if op == "list":
        if data is None:
            return None
        base = _eval(node[1], data)
        if base is None:
            return None
        return [_eval(x, base) for x in node[2]]
    if op == "hash":
        if data is None:
            return None
        return {k: _eval(v, data) for k, v in node[1]}
    if op == "call":
        return _call(node[1], [_eval(a, data) if a[0] != "expref" else a for a in node[2]], node[2], data)
    raise JMESPathError(f"unsupported node {op}")


def _call(name: str, args: list[Any], nodes: list[Any], data: Any) -> Any:
    if name == "length":
        return len(args[0]) if isinstance(args[0], (list, dict, str)) else None
    if name == "contains":
        return args[1] in args[0] if isinstance(args[0], (list, str)) else False
    if name == "starts_with":
        return isinstance(args[0], str) and args[0].startswith(str(args[1]))
    if name == "ends_with":
        return isinstance(args[0], str) and args[0].endswith(str(args[1]))
    if name == "sort":
        return sorted(args[0]) if isinstance(args[0], list) else None
    if name == "sort_by":
        items = _eval(nodes[0], data)
        key = nodes[1][1] if nodes[1][0] == "expref" else nodes[1]
        return sorted(items or [], key=lambda x: _eval(key, x) or "")
    if name == "join":
        return str(args[0]).join(str(x) for x in args[1] or [])
    if name == "keys":
        return list(args[0]) if isinstance(args[0], dict) else None
    if name == "values":
        return list(args[0].values()) if isinstance(args[0], dict) else None
    if name == "to_string":
        return args[0] if isinstance(args[0], str) else json.dumps(args[0])
    if name == "max":
        return max(args[0]) if args[0] else None
    if name == "min":
        return min(args[0]) if args[0] else None
    if name == "reverse":
        return list(reversed(args[0])) if isinstance(args[0], (list, str)) else None
    raise JMESPathError(f"Unknown function: {name}()")


def search(expr: str, data: Any) -> Any:
    # `&expr` (expression references, for sort_by) are written inline; strip the ampersand.
    return _eval(_Parser(re.sub(r"&(?=[A-Za-z_\"])", "", expr)).parse(), data)
