"""``psql`` (PostgreSQL 15 client) over emulated database servers (state section ``postgres``).

Connection options (``-h -p -U -d``, ``dbname [user]``, ``postgresql://`` URIs, ``key=value``
conninfo strings, ``PGHOST``/``PGPORT``/``PGUSER``/``PGDATABASE``), statements from ``-c``
(repeatable), ``-f FILE`` or stdin (read only when neither ``-c`` nor ``-f`` is given), and the
output modes ``-A -t -F --csv -x``. Exit codes as documented: 0, 1 (an error in a ``-c``
statement, a missing ``-f`` file), 2 (connection failed), 3 (error in a script with
``ON_ERROR_STOP``).

The SQL engine covers what operators type: SELECT (WHERE, ORDER BY, LIMIT/OFFSET, GROUP BY, the
aggregates count/sum/min/max/avg, DISTINCT), INSERT (VALUES or SELECT), UPDATE, DELETE, TRUNCATE, DROP/CREATE
TABLE, ALTER TABLE ADD/DROP/RENAME, DROP/CREATE DATABASE (``WITH (FORCE)``), BEGIN/COMMIT/
ROLLBACK, and the catalog views agents query (pg_tables, information_schema.tables,
pg_database, pg_stat_activity, pg_stat_replication) plus pg_terminate_backend(),
pg_is_in_recovery(), version(), current_database(), now(); and the role commands operators use to
rotate credentials — ALTER ROLE/USER (``[ENCRYPTED] PASSWORD``, ``VALID UNTIL``, ``LOGIN``/``NOLOGIN``
and the other attribute keywords, ``CONNECTION LIMIT``, ``RENAME TO``), CREATE ROLE/USER, DROP
ROLE/USER with their permission and dependency errors, pg_roles/pg_user/pg_authid, ``\\du`` and
``\\password`` (two lines from stdin, as psql falls back to stdin without a terminal). A hot standby (``in_recovery: true``)
refuses writes as PostgreSQL does; a database with open sessions cannot be dropped without
``WITH (FORCE)`` or terminating them first.

Authored state::

    postgres:
      servers:
        db1.cluster.internal:
          address: 10.0.4.11
          roles: [postgres, gitlab]
          in_recovery: false
          databases:
            gitlabhq_production:
              owner: gitlab
              sessions: 14                      # open connections from the application
              tables:
                users: {columns: [id integer, email text], rows: [[1, a@example.com]]}
          role_attrs:                           # optional, per role; defaults: superuser only for postgres,
            gitlab: {password: s3cret, login: true, valid_until: null, connection_limit: -1}

Object ids: ``db/<host>/<database>``, ``db/<host>/<database>/table/<name>`` and
``db/<host>/role/<name>`` (its attributes; ``password`` is the stored SCRAM verifier or null).
"""

from __future__ import annotations

import copy
import csv
import io
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from suite.emulators.base import NO_TERMINAL, ArgError, Call, Ctx, Result, ToolExit, opt, parse_gnu, short_hash

SECTION = "postgres"
VERSION = (
    "PostgreSQL 15.6 (Debian 15.6-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14) 12.2.0, 64-bit"
)
TYPES = {
    "int": "integer",
    "int4": "integer",
    "integer": "integer",
    "bigint": "bigint",
    "int8": "bigint",
    "smallint": "smallint",
    "serial": "integer",
    "bigserial": "bigint",
    "text": "text",
    "varchar": "character varying",
    "character varying": "character varying",
    "boolean": "boolean",
    "bool": "boolean",
    "timestamp": "timestamp without time zone",
    "timestamptz": "timestamp with time zone",
    "date": "date",
    "numeric": "numeric",
    "jsonb": "jsonb",
    "json": "json",
    "uuid": "uuid",
    "real": "real",
    "double precision": "double precision",
}
NUMERIC = ("integer", "bigint", "smallint", "numeric", "real", "double precision")
WRITES = ("insert", "update", "delete", "truncate", "drop", "create", "alter", "grant", "revoke", "vacuum")


def _col(spec: Any) -> dict[str, str]:
    if isinstance(spec, dict):
        return {
            "name": str(spec["name"]),
            "type": TYPES.get(str(spec.get("type", "text")).lower(), str(spec.get("type", "text"))),
        }
    name, _, typ = str(spec).partition(" ")
    return {"name": name, "type": TYPES.get(typ.strip().lower() or "text", typ.strip() or "text")}


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    for host, srv in section.setdefault("servers", {}).items():
        srv.setdefault("port", 5432)
        srv.setdefault("address", f"10.0.{sum(map(ord, host)) % 250}.{len(host) % 250}")
        srv.setdefault("roles", ["postgres"])
        srv.setdefault("in_recovery", False)
        attrs = srv.setdefault("role_attrs", {})
        for role in srv["roles"]:
            _role_defaults(host, role, attrs.setdefault(role, {}))
        dbs = srv.setdefault("databases", {})
        for name in ("postgres",):
            dbs.setdefault(name, {"owner": "postgres", "tables": {}})
        for db in dbs.values():
            db.setdefault("owner", "postgres")
            db.setdefault("sessions", 0)
            for t in db.setdefault("tables", {}).values():
                t["columns"] = [_col(c) for c in t.get("columns", [])]
                names = [c["name"] for c in t["columns"]]
                t["rows"] = [[r.get(n) for n in names] if isinstance(r, dict) else list(r) for r in t.get("rows", [])]
    return section


def state_problems(section: Any) -> list[str]:
    if not isinstance(section, dict) or not isinstance(section.get("servers"), dict):
        return ["postgres: expected a mapping with servers"]
    problems = [f"postgres.{k}: unknown key (servers)" for k in section if k != "servers"]
    for host, srv in section["servers"].items():
        for role, attrs in ((srv or {}).get("role_attrs") or {}).items():
            if role not in ((srv or {}).get("roles") or ["postgres"]):
                problems.append(f"postgres.servers.{host}.role_attrs.{role}: not one of the server's roles")
            for key in attrs or {}:
                if key not in ROLE_KEYS:
                    problems.append(
                        f"postgres.servers.{host}.role_attrs.{role}.{key}: unknown key ({', '.join(ROLE_KEYS)})"
                    )
        for dname, db in ((srv or {}).get("databases") or {}).items():
            for tname, t in ((db or {}).get("tables") or {}).items():
                cols = t.get("columns") if isinstance(t, dict) else None
                if not cols:
                    problems.append(f"postgres.servers.{host}.databases.{dname}.tables.{tname}: a table needs columns")
                    continue
                for i, row in enumerate(t.get("rows") or []):
                    if isinstance(row, list) and len(row) != len(cols):
                        problems.append(
                            f"postgres.servers.{host}.databases.{dname}.tables.{tname}.rows[{i}]: {len(row)} values for {len(cols)} columns"
                        )
    return problems


def objects(section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for host, srv in section.get("servers", {}).items():
        for dname, db in srv.get("databases", {}).items():
            if dname == "postgres":
                continue
            did = f"db/{host}/{dname}"
            out[did] = {"owner": db["owner"], "sessions": len(_session_pids(host, dname, db))}
            for tname, t in db["tables"].items():
                out[f"{did}/table/{tname}"] = {
                    "columns": t["columns"],
                    "rows": t["rows"],
                    "row_count": len(t["rows"]),
                    "_owner": did,
                }
        for role in srv.get("roles", []):
            out[f"db/{host}/role/{role}"] = _role_value(srv.get("role_attrs", {}).get(role) or {})
    return out


# Role attributes as pg_authid stores them. The harness keeps the password's plain text only to
# derive the verifier; objects and catalogs show the verifier, like the server.
ROLE_FLAGS = ("superuser", "createrole", "createdb", "login", "replication", "bypassrls", "inherit")
ROLE_KEYS = (*ROLE_FLAGS, "connection_limit", "valid_until", "password", "verifier")
_FLAG_WORDS = {
    **{w: (w, True) for w in ROLE_FLAGS},
    **{"no" + w: (w, False) for w in ROLE_FLAGS},
}
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _verifier(host: str, role: str, password: str) -> str:
    """A SCRAM-SHA-256 verifier (``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>``, RFC 5803
    as PostgreSQL stores it); pre-encrypted values are stored as given, like the server does."""
    if password.startswith("SCRAM-SHA-256$") or re.match(r"^md5[0-9a-f]{32}$", password):
        return password
    salt = short_hash("salt", host, role, password, length=24, alphabet=_B64)
    stored = short_hash("stored", host, role, password, length=44, alphabet=_B64)
    server = short_hash("server", host, role, password, length=44, alphabet=_B64)
    return f"SCRAM-SHA-256$4096:{salt}${stored}:{server}"


def _role_defaults(host: str, role: str, a: dict[str, Any]) -> None:
    for flag in ROLE_FLAGS:
        a.setdefault(flag, flag in ("login", "inherit") or role == "postgres")
    a.setdefault("connection_limit", -1)
    a.setdefault("valid_until", None)
    if "verifier" not in a:
        a["verifier"] = _verifier(host, role, str(a["password"])) if a.get("password") else None


def _role_value(a: dict[str, Any]) -> dict[str, Any]:
    return {
        **{flag: bool(a.get(flag)) for flag in ROLE_FLAGS},
        "connection_limit": a.get("connection_limit", -1),
        "valid_until": a.get("valid_until"),
        "password": a.get("verifier"),
    }


# ---------------------------------------------------------------------------------------------
# SQL


class SQLError(Exception):
    def __init__(self, message: str, pos: int | None = None, detail: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.detail = detail
        self.hint = hint


_TOK = re.compile(
    r"""\s*(?:(?P<str>'(?:[^']|'')*')|(?P<qid>"(?:[^"]|"")*")|(?P<num>\d+(?:\.\d+)?)|(?P<id>[A-Za-z_][A-Za-z0-9_$]*)|(?P<op><>|!=|<=|>=|::|\|\||[=<>(),;*.+\-/%]))"""
)


_SPACE = re.compile(r"\s*")
# A dollar-quoted string constant: $$...$$ or $tag$...$tag$ (sql-syntax-lexical, 4.1.2.4); the tag
# follows identifier rules without a dollar sign of its own.
_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


class Tok:
    def __init__(self, kind: str, value: Any, pos: int, raw: str = "") -> None:
        self.kind = kind
        self.value = value
        self.pos = pos
        self.raw = raw  # the text as written: PostgreSQL's errors quote it, not the folded name

    def is_kw(self, *words: str) -> bool:
        return self.kind == "id" and self.value in words


def lex(sql: str) -> list[Tok]:
    out: list[Tok] = []
    pos = 0
    # Linear in the text: a script of a megabyte lexes in one pass (no re-slicing per token).
    while True:
        pos = _SPACE.match(sql, pos).end()  # type: ignore[union-attr]
        if pos >= len(sql):
            break
        if sql.startswith("--", pos):
            nl = sql.find("\n", pos)
            pos = len(sql) if nl < 0 else nl + 1
            continue
        d = _DOLLAR.match(sql, pos)
        if d:
            end = sql.find(d.group(0), d.end())
            if end < 0:
                raise SQLError(f'unterminated dollar-quoted string at or near "{sql[pos : pos + 20]}"', pos)
            out.append(Tok("str", sql[d.end() : end], pos))
            pos = end + len(d.group(0))
            continue
        m = _TOK.match(sql, pos)
        if not m:
            raise SQLError(f'syntax error at or near "{sql[pos]}"', pos)
        kind = m.lastgroup or ""
        text = m.group(kind)
        start = m.start(kind)
        if kind == "str":
            out.append(Tok("str", text[1:-1].replace("''", "'"), start))
        elif kind == "qid":
            out.append(Tok("qid", text[1:-1].replace('""', '"'), start))
        elif kind == "num":
            out.append(Tok("num", float(text) if "." in text else int(text), start))
        elif kind == "id":
            out.append(Tok("id", text.lower(), start, text))
        else:
            out.append(Tok("op", text, start))
        pos = m.end()
    out.append(Tok("eof", None, len(sql)))
    return out


def _record_rule(record: int, hwidth: int, dwidth: int) -> str:
    """The ``-[ RECORD n ]`` line of expanded output, border 1 (print.c, print_aligned_vertical_line):
    the label overwrites the rule, and the ``+`` at the column break shows only if the label ends
    before it."""
    out = "-" + f"[ RECORD {record} ]"
    reclen = len(out)
    out += "-" * max(0, hwidth - reclen)
    reclen -= hwidth
    for piece in ("-", "+", "-"):
        if reclen <= 0:
            out += piece
        reclen -= 1
    return out + "-" * max(0, dwidth - max(reclen, 0))


DISPLAY_SIZE = 60  # libpq's reportErrorPosition: the quoted line's width limit
MIN_RIGHT_CUT = 10  # and how far the cursor stays from a cut end


def _error_cursor(query: str, pos: int) -> list[str]:
    """``LINE n: ...`` and the ``^`` under the error position, cut to 60 columns as libpq cuts them
    (fe-protocol3.c, reportErrorPosition; one column per character)."""
    pos = max(0, min(pos, len(query)))
    number = query.count("\n", 0, pos) + 1
    beg = query.rfind("\n", 0, pos) + 1
    end = query.find("\n", pos)
    end = len(query) if end < 0 else end
    beg_cut = end_cut = False
    if end - beg > DISPLAY_SIZE:
        if beg + DISPLAY_SIZE >= pos + MIN_RIGHT_CUT:
            end, end_cut = beg + DISPLAY_SIZE, True
        else:
            if pos + MIN_RIGHT_CUT < end:
                end, end_cut = pos + MIN_RIGHT_CUT, True
            if end - beg > DISPLAY_SIZE:
                beg, beg_cut = end - DISPLAY_SIZE, True
    label = f"LINE {number}: " + ("..." if beg_cut else "")
    return [label + query[beg:end] + ("..." if end_cut else ""), " " * (len(label) + pos - beg) + "^"]


def _controls_transaction(stmt: str) -> bool:
    word = stmt.lstrip().split(None, 1)[0].lower() if stmt.strip() else ""
    return word in ("begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release")


def split_statements(text: str) -> list[tuple[str, int]]:
    """Split on ``;`` outside quotes; backslash meta-commands end at the line end.

    Each statement comes with the line it ends on, which is what psql prints in
    ``psql:FILE:LINE: ERROR: ...``.
    """
    out: list[tuple[str, int]] = []
    cur: list[str] = []
    i = 0
    quote = ""

    def line_at(pos: int) -> int:
        return text.count("\n", 0, pos) + 1

    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == quote:
                quote = ""
            i += 1
            continue
        if c in ("'", '"'):
            quote = c
            cur.append(c)
            i += 1
            continue
        d = _DOLLAR.match(text, i) if c == "$" else None
        if d:
            end = text.find(d.group(0), d.end())
            stop = len(text) if end < 0 else end + len(d.group(0))
            cur.append(text[i:stop])
            i = stop
            continue
        if c == "-" and text.startswith("--", i):
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        if c == "\\" and "".join(cur).strip() == "":
            nl = text.find("\n", i)
            meta = text[i : (len(text) if nl < 0 else nl)]
            out.append((meta.strip(), line_at(i)))
            cur = []
            i = len(text) if nl < 0 else nl + 1
            continue
        if c == ";":
            stmt = "".join(cur).strip()
            if stmt:
                out.append((stmt, line_at(i)))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    rest = "".join(cur).strip()
    if rest:
        out.append((rest, line_at(len(text.rstrip()))))
    return out


# Nesting the parser follows before it answers as PostgreSQL's check_stack_depth() does; each
# level is a handful of Python frames, and the jail's recursion limit leaves room for this many.
MAX_SQL_DEPTH = 1000
STACK_HINT = (
    'Increase the configuration parameter "max_stack_depth" (currently 2048kB), '
    "after ensuring the platform's stack depth limit is adequate."
)


class _P:
    """Recursive-descent parser for one statement."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.t = lex(sql)
        self.i = 0
        self.depth = 0

    def nested(self, tok: Tok) -> None:
        self.depth += 1
        if self.depth > MAX_SQL_DEPTH:
            raise SQLError("stack depth limit exceeded", tok.pos, hint=STACK_HINT)

    def peek(self, k: int = 0) -> Tok:
        return self.t[min(self.i + k, len(self.t) - 1)]

    def next(self) -> Tok:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def error(self, tok: Tok | None = None) -> SQLError:
        tok = tok or self.peek()
        if tok.kind == "eof":
            return SQLError("syntax error at end of input", tok.pos)
        text = tok.raw or (tok.value if tok.kind != "str" else f"'{tok.value}'")
        return SQLError(f'syntax error at or near "{text}"', tok.pos)

    def kw(self, *words: str) -> bool:
        if self.peek().is_kw(*words):
            self.i += 1
            return True
        return False

    def need_kw(self, word: str) -> None:
        if not self.kw(word):
            raise self.error()

    def op(self, value: str) -> bool:
        if self.peek().kind == "op" and self.peek().value == value:
            self.i += 1
            return True
        return False

    def need_op(self, value: str) -> None:
        if not self.op(value):
            raise self.error()

    def ident(self) -> tuple[str, int]:
        tok = self.next()
        if tok.kind in ("id", "qid"):
            return str(tok.value), tok.pos
        raise self.error(tok)

    def table_name(self) -> tuple[str, int]:
        name, pos = self.ident()
        if self.op("."):
            sub, _ = self.ident()
            name = f"{name}.{sub}"
        return name, pos

    def done(self) -> None:
        self.op(";")
        if self.peek().kind != "eof":
            raise self.error()

    # expressions ------------------------------------------------------------------------

    def expr(self) -> Any:
        return self.or_expr()

    def or_expr(self) -> Any:
        left = self.and_expr()
        while self.kw("or"):
            left = ("or", left, self.and_expr())
        return left

    def and_expr(self) -> Any:
        left = self.not_expr()
        while self.kw("and"):
            left = ("and", left, self.not_expr())
        return left

    def not_expr(self) -> Any:
        if self.kw("not"):
            return ("not", self.not_expr())
        return self.cmp_expr()

    def cmp_expr(self) -> Any:
        left = self.add_expr()
        tok = self.peek()
        if tok.kind == "op" and tok.value in ("=", "<>", "!=", "<", ">", "<=", ">="):
            self.next()
            return ("cmp", "<>" if tok.value == "!=" else tok.value, left, self.add_expr())
        if tok.is_kw("is"):
            self.next()
            neg = self.kw("not")
            if self.kw("null"):
                return ("isnull", left, neg)
            if self.kw("true", "false"):
                val = self.t[self.i - 1].value == "true"
                return ("cmp", "<>" if neg else "=", left, ("lit", val))
            raise self.error()
        neg = False
        if tok.is_kw("not") and self.peek(1).is_kw("in", "like", "ilike", "between"):
            self.next()
            neg = True
            tok = self.peek()
        if tok.is_kw("in"):
            self.next()
            self.need_op("(")
            items = [self.expr()]
            while self.op(","):
                items.append(self.expr())
            self.need_op(")")
            return ("in", left, items, neg)
        if tok.is_kw("like", "ilike"):
            self.next()
            return ("like", left, self.add_expr(), neg, tok.value == "ilike")
        if tok.is_kw("between"):
            self.next()
            lo = self.add_expr()
            self.need_kw("and")
            hi = self.add_expr()
            return ("between", left, lo, hi, neg)
        return left

    def add_expr(self) -> Any:
        left = self.mul_expr()
        while self.peek().kind == "op" and self.peek().value in ("+", "-", "||"):
            op = self.next().value
            left = ("arith", op, left, self.mul_expr())
        return left

    def mul_expr(self) -> Any:
        left = self.unary()
        while self.peek().kind == "op" and self.peek().value in ("*", "/", "%"):
            op = self.next().value
            left = ("arith", op, left, self.unary())
        return left

    def unary(self) -> Any:
        if self.op("-"):
            return ("neg", self.unary())
        node = self.primary()
        while self.op("::"):
            typ, _ = self.ident()
            node = ("cast", node, typ)
        return node

    def primary(self) -> Any:
        tok = self.next()
        if tok.kind == "num":
            return ("lit", tok.value)
        if tok.kind == "str":
            return ("lit", tok.value)
        if tok.kind == "op" and tok.value == "(":
            self.nested(tok)
            e = self.expr()
            self.need_op(")")
            self.depth -= 1
            return e
        if tok.kind == "op" and tok.value == "*":
            return ("star",)
        if tok.kind in ("id", "qid"):
            word = tok.value
            if tok.kind == "id":
                if word == "null":
                    return ("lit", None)
                if word in ("true", "false"):
                    return ("lit", word == "true")
                if word == "interval" and self.peek().kind == "str":
                    return ("interval", self.next().value)
                if word in ("current_date", "current_timestamp", "current_user", "current_database"):
                    if self.op("("):
                        self.need_op(")")
                    return ("func", word, [], tok.pos)
                if word in ("select", "from", "where", "and", "or", "order", "limit", "group") and tok.kind == "id":
                    raise self.error(tok)
            if self.op("("):
                self.nested(tok)
                args: list[Any] = []
                distinct = self.kw("distinct")
                if not self.op(")"):
                    args.append(self.expr())
                    while self.op(","):
                        args.append(self.expr())
                    self.need_op(")")
                self.depth -= 1
                return ("func", word, args, tok.pos, distinct)
            if self.op("."):
                if self.op("*"):
                    # alias.* — the whole row; count(r.*) counts rows like count(*).
                    return ("star", word)
                col, _ = self.ident()
                return ("col", col, tok.pos, word)
            return ("col", word, tok.pos, None)
        raise self.error(tok)

    # statements -------------------------------------------------------------------------

    def statement(self) -> dict[str, Any]:
        tok = self.peek()
        if tok.kind != "id":
            raise self.error()
        word = tok.value
        self.next()
        if word in ("begin", "start"):
            self.kw("transaction", "work")
            self.done()
            return {"kind": "begin"}
        if word in ("commit", "end"):
            self.kw("transaction", "work")
            self.done()
            return {"kind": "commit"}
        if word in ("rollback", "abort"):
            self.kw("transaction", "work")
            self.done()
            return {"kind": "rollback"}
        if word == "select":
            return self.select()
        if word == "insert":
            self.need_kw("into")
            table, pos = self.table_name()
            cols = None
            col_pos: list[int] = []
            if self.op("("):
                first, at = self.ident()
                cols, col_pos = [first], [at]
                while self.op(","):
                    name, at = self.ident()
                    cols.append(name)
                    col_pos.append(at)
                self.need_op(")")
            if self.kw("select"):
                # INSERT INTO t [(cols)] SELECT ...: how a table is refilled from a copy of itself.
                query = self.select()
                return {
                    "kind": "insert",
                    "col_pos": col_pos,
                    "table": table,
                    "pos": pos,
                    "cols": cols,
                    "rows": [],
                    "query": query,
                    "returning": None,
                }
            self.need_kw("values")
            rows = []
            while True:
                self.need_op("(")
                vals = [self.expr()]
                while self.op(","):
                    vals.append(self.expr())
                self.need_op(")")
                rows.append(vals)
                if not self.op(","):
                    break
            returning = self._returning()
            self.done()
            return {
                "kind": "insert",
                "table": table,
                "pos": pos,
                "cols": cols,
                "col_pos": col_pos,
                "rows": rows,
                "returning": returning,
            }
        if word == "update":
            table, pos = self.table_name()
            self.need_kw("set")
            sets = []
            set_pos: list[int] = []
            while True:
                col, at = self.ident()
                self.need_op("=")
                sets.append((col, self.expr()))
                set_pos.append(at)
                if not self.op(","):
                    break
            where = self.expr() if self.kw("where") else None
            returning = self._returning()
            self.done()
            return {
                "kind": "update",
                "table": table,
                "pos": pos,
                "sets": sets,
                "set_pos": set_pos,
                "where": where,
                "returning": returning,
            }
        if word == "delete":
            self.need_kw("from")
            table, pos = self.table_name()
            where = self.expr() if self.kw("where") else None
            returning = self._returning()
            self.done()
            return {"kind": "delete", "table": table, "pos": pos, "where": where, "returning": returning}
        if word == "truncate":
            self.kw("table")
            tables = [self.table_name()]
            while self.op(","):
                tables.append(self.table_name())
            cascade = self.kw("cascade")
            self.kw("restrict")
            self.done()
            return {"kind": "truncate", "tables": tables, "cascade": cascade}
        if word == "drop":
            if self.peek().is_kw("role", "user"):
                self.next()
                if_exists = False
                if self.kw("if"):
                    self.need_kw("exists")
                    if_exists = True
                role_names = [self.ident()[0]]
                while self.op(","):
                    role_names.append(self.ident()[0])
                self.done()
                return {"kind": "drop_role", "names": role_names, "if_exists": if_exists}
            what = self.next()
            if what.is_kw("table", "database", "index", "view", "schema"):
                if_exists = False
                if self.kw("if"):
                    self.need_kw("exists")
                    if_exists = True
                names = [self.table_name()]
                while self.op(","):
                    names.append(self.table_name())
                force = False
                if self.op("("):
                    self.need_kw("force")
                    self.need_op(")")
                    force = True
                elif self.kw("with"):
                    self.need_op("(")
                    self.need_kw("force")
                    self.need_op(")")
                    force = True
                cascade = self.kw("cascade")
                self.kw("restrict")
                self.done()
                return {
                    "kind": f"drop_{what.value}",
                    "names": names,
                    "if_exists": if_exists,
                    "force": force,
                    "cascade": cascade,
                }
            raise self.error(what)
        if word == "create":
            if self.peek().is_kw("role", "user"):
                user = self.next().value == "user"
                name, _ = self.ident()
                return {"kind": "create_role", "name": name, "user": user, "options": self._role_options()}
            what = self.next()
            if what.is_kw("database"):
                name, pos = self.ident()
                owner = None
                while self.peek().kind != "eof" and not (self.peek().kind == "op" and self.peek().value == ";"):
                    if self.kw("owner"):
                        self.op("=")
                        owner = self.ident()[0]
                    else:
                        self.next()
                self.done()
                return {"kind": "create_database", "name": name, "owner": owner}
            if what.is_kw("table"):
                if_not = False
                if self.kw("if"):
                    self.need_kw("not")
                    self.need_kw("exists")
                    if_not = True
                name, pos = self.table_name()
                self.need_op("(")
                col_defs: list[list[str]] = []
                depth = 0
                buf: list[str] = []
                while True:
                    tok = self.next()
                    if tok.kind == "eof":
                        raise self.error(tok)
                    if tok.kind == "op" and tok.value == "(":
                        depth += 1
                    if tok.kind == "op" and tok.value == ")":
                        if depth == 0:
                            if buf:
                                col_defs.append(buf)
                            break
                        depth -= 1
                    if tok.kind == "op" and tok.value == "," and depth == 0:
                        col_defs.append(buf)
                        buf = []
                        continue
                    buf.append(str(tok.value))
                self.done()
                columns = [
                    {"name": c[0], "type": TYPES.get(c[1] if len(c) > 1 else "text", c[1] if len(c) > 1 else "text")}
                    for c in col_defs
                    if c and c[0] not in ("primary", "unique", "constraint", "foreign", "check")
                ]
                return {"kind": "create_table", "name": name, "pos": pos, "columns": columns, "if_not": if_not}
            if what.is_kw("index", "unique"):
                while self.peek().kind != "eof":
                    self.next()
                return {"kind": "noop", "tag": "CREATE INDEX"}
            raise self.error(what)
        if word == "alter":
            if self.kw("role", "user"):
                return self._alter_role()
            self.need_kw("table")
            self.kw("only")
            if self.kw("if"):
                self.need_kw("exists")
            table, pos = self.table_name()
            if self.kw("add"):
                self.kw("column")
                col, _ = self.ident()
                typ = self.ident()[0]
                while self.peek().kind != "eof" and not (self.peek().kind == "op" and self.peek().value == ";"):
                    self.next()
                self.done()
                return {
                    "kind": "alter_add",
                    "table": table,
                    "pos": pos,
                    "column": {"name": col, "type": TYPES.get(typ, typ)},
                }
            if self.kw("drop"):
                self.kw("column")
                if self.kw("if"):
                    self.need_kw("exists")
                col, _ = self.ident()
                self.kw("cascade")
                self.done()
                return {"kind": "alter_drop", "table": table, "pos": pos, "column": col}
            if self.kw("rename"):
                if self.kw("to"):
                    new, _ = self.ident()
                    self.done()
                    return {"kind": "alter_rename_table", "table": table, "pos": pos, "new": new}
                self.kw("column")
                old, _ = self.ident()
                self.need_kw("to")
                new, _ = self.ident()
                self.done()
                return {"kind": "alter_rename_column", "table": table, "pos": pos, "old": old, "new": new}
            raise self.error()
        if word in ("vacuum", "analyze"):
            while self.peek().kind != "eof":
                self.next()
            return {"kind": "noop", "tag": word.upper()}
        if word in ("show",):
            name, _ = self.ident()
            self.done()
            return {"kind": "show", "name": name}
        if word == "explain":
            return self._explain()
        if word == "do":
            # An anonymous code block: its body runs as PL/pgSQL, which this server cannot run.
            # Never a silent no-op (the block may drop or delete anything): the server refuses it
            # as one whose plpgsql was dropped would, and the call is still an issued write.
            while self.peek().kind != "eof":
                self.next()
            return {"kind": "do"}
        if word in ("set", "reset", "grant", "revoke", "listen", "notify", "copy", "lock", "comment"):
            while self.peek().kind != "eof":
                self.next()
            return {
                "kind": "noop",
                "tag": {"set": "SET", "reset": "RESET", "grant": "GRANT", "revoke": "REVOKE"}.get(word, word.upper()),
                "write": word in ("grant", "revoke", "lock", "comment"),
            }
        raise self.error(tok)

    def _explain(self) -> dict[str, Any]:
        """``EXPLAIN [ANALYZE] [VERBOSE] stmt`` or ``EXPLAIN (option [value], ...) stmt``."""
        analyze = False
        if self.op("("):
            while not self.op(")"):
                tok = self.next()
                if tok.kind == "eof":
                    raise self.error(tok)
                if tok.is_kw("analyze", "analyse"):
                    analyze = not (
                        self.peek().is_kw("false", "off") or (self.peek().kind == "num" and self.peek().value == 0)
                    )
        else:
            analyze = self.kw("analyze", "analyse")
            self.kw("verbose")
        tok = self.peek()
        inner = self.statement()
        if inner["kind"] not in ("select", "insert", "update", "delete"):
            raise self.error(tok)
        return {"kind": "explain", "analyze": analyze, "stmt": inner}

    def _returning(self) -> list[Any] | None:
        if not self.kw("returning"):
            return None
        return self._select_list()

    def _alter_role(self) -> dict[str, Any]:
        tok = self.peek()
        if tok.is_kw("current_user", "current_role", "session_user"):
            self.next()
            name = f"<{tok.value}>"
        else:
            name = self.ident()[0]
        if self.kw("rename"):
            self.need_kw("to")
            new, _ = self.ident()
            self.done()
            return {"kind": "rename_role", "name": name, "new": new}
        if self.peek().is_kw("set", "reset"):
            while self.peek().kind != "eof":
                self.next()
            return {"kind": "noop", "tag": "ALTER ROLE", "write": True}
        return {"kind": "alter_role", "name": name, "options": self._role_options()}

    def _role_options(self) -> dict[str, Any]:
        """The option list of CREATE/ALTER ROLE (PostgreSQL 15 grammar, without IN ROLE/ROLE/ADMIN)."""
        opts: dict[str, Any] = {}
        self.kw("with")
        while not (self.peek().kind == "eof" or (self.peek().kind == "op" and self.peek().value == ";")):
            tok = self.next()
            word = tok.value if tok.kind == "id" else None
            if word in _FLAG_WORDS:
                key, value = _FLAG_WORDS[word]
                opts[key] = value
            elif word in ("password", "encrypted"):
                if word == "encrypted":
                    self.need_kw("password")
                pw = self.next()
                if pw.kind == "str":
                    opts["password"] = pw.value
                elif pw.is_kw("null"):
                    opts["password"] = None
                else:
                    raise self.error(pw)
            elif word == "unencrypted":
                raise SQLError(
                    "UNENCRYPTED PASSWORD is no longer supported",
                    tok.pos,
                    hint="Remove UNENCRYPTED to store the password in encrypted form instead.",
                )
            elif word == "valid":
                self.need_kw("until")
                ts = self.next()
                if ts.kind != "str":
                    raise self.error(ts)
                opts["valid_until"] = ts.value
            elif word == "connection":
                self.need_kw("limit")
                sign = -1 if self.op("-") else 1
                n = self.next()
                if n.kind != "num" or not isinstance(n.value, int):
                    raise self.error(n)
                opts["connection_limit"] = sign * n.value
            else:
                raise self.error(tok)
        self.done()
        return opts

    def _select_list(self) -> list[tuple[Any, str | None]]:
        items = []
        while True:
            e = self.expr()
            alias = None
            if self.kw("as"):
                alias = self.ident()[0]
            elif (
                e[0] != "star"
                and self.peek().kind in ("id", "qid")
                and not self.peek().is_kw("from", "where", "order", "limit", "group", "offset", "having", "union")
            ):
                alias = self.ident()[0]
            items.append((e, alias))
            if not self.op(","):
                return items

    def select(self) -> dict[str, Any]:
        distinct = self.kw("distinct")
        items = self._select_list()
        table = None
        pos = None
        if self.kw("from"):
            table, pos = self.table_name()
            if self.kw("as"):
                self.ident()  # a table alias
            elif self.peek().kind in ("id",) and not self.peek().is_kw("where", "order", "limit", "group", "offset"):
                self.next()  # a table alias
        where = self.expr() if self.kw("where") else None
        group = []
        if self.kw("group"):
            self.need_kw("by")
            group = [self.expr()]
            while self.op(","):
                group.append(self.expr())
        order = []
        if self.kw("order"):
            self.need_kw("by")
            while True:
                e = self.expr()
                desc = self.kw("desc")
                if not desc:
                    self.kw("asc")
                order.append((e, desc))
                if not self.op(","):
                    break
        limit = offset = None
        for _ in range(2):
            if self.kw("limit"):
                limit = int(self.next().value)
            if self.kw("offset"):
                offset = int(self.next().value)
        self.done()
        return {
            "kind": "select",
            "items": items,
            "table": table,
            "pos": pos,
            "where": where,
            "group": group,
            "order": order,
            "limit": limit,
            "offset": offset,
            "distinct": distinct,
        }


# ---------------------------------------------------------------------------------------------
# Execution


AGGREGATES = ("count", "sum", "min", "max", "avg")


class Session:
    def __init__(self, ctx: Ctx, host: str, server: dict[str, Any], db: str, user: str) -> None:
        self.ctx = ctx
        self.host = host
        self.server = server
        self.db = db
        self.user = user
        self.tx: dict[str, Any] | None = None  # copy of the databases while a transaction is open
        self.tx_roles: dict[str, Any] | None = None  # and of the roles (role changes are transactional)
        self.tx_failed = False
        self.now = ctx.call.now

    @property
    def databases(self) -> dict[str, Any]:
        return self.tx if self.tx is not None else self.server["databases"]

    def tables(self) -> dict[str, Any]:
        return dict(self.databases[self.db]["tables"])

    def table(self, name: str, pos: int | None) -> tuple[str, dict[str, Any]]:
        base = name.split(".", 1)[1] if name.startswith("public.") else name
        t = self.databases[self.db]["tables"].get(base)
        if t is None:
            raise SQLError(f'relation "{name}" does not exist', pos)
        self.ctx.saw(f"db/{self.host}/{self.db}/table/{base}")
        return base, t

    def write_guard(self, verb: str) -> None:
        if self.server.get("in_recovery"):
            raise SQLError(f"cannot execute {verb} in a read-only transaction")

    # -- expressions --------------------------------------------------------------------

    def value(self, node: Any, row: dict[str, Any] | None, cols: list[str]) -> Any:
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "col":
            name = node[1]
            if row is None or name not in row:
                raise SQLError(f'column "{name}" does not exist', node[2])
            return row[name]
        if kind == "interval":
            return _interval(node[1])
        if kind == "neg":
            v = self.value(node[1], row, cols)
            return None if v is None else -v
        if kind == "cast":
            v = self.value(node[1], row, cols)
            return _cast(v, node[2])
        if kind == "arith":
            a, b = self.value(node[2], row, cols), self.value(node[3], row, cols)
            if a is None or b is None:
                return None
            op = node[1]
            if op == "||":
                return f"{_display(a)}{_display(b)}"
            if isinstance(b, timedelta) and isinstance(a, str):
                t = _parse_ts(a)
                return _fmt_ts(t + b if op == "+" else t - b)
            try:
                return {
                    "+": lambda: a + b,
                    "-": lambda: a - b,
                    "*": lambda: a * b,
                    "/": lambda: a // b if isinstance(a, int) and isinstance(b, int) else a / b,
                    "%": lambda: a % b,
                }[op]()
            except (TypeError, ZeroDivisionError) as exc:
                raise SQLError(
                    "division by zero"
                    if isinstance(exc, ZeroDivisionError)
                    else f"operator does not exist: {type(a).__name__} {op} {type(b).__name__}"
                ) from None
        if kind == "func":
            return self.func(node, row, cols)
        if kind == "cmp":
            a, b = self.value(node[2], row, cols), self.value(node[3], row, cols)
            if a is None or b is None:
                return None
            a, b = _coerce(a, b)
            try:
                return {"=": a == b, "<>": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[node[1]]
            except TypeError:
                raise SQLError(
                    f"operator does not exist: {_pgtype(a)} {node[1]} {_pgtype(b)}",
                    hint="No operator matches the given name and argument types. You might need to add explicit type casts.",
                ) from None
        if kind == "and":
            a, b = self.value(node[1], row, cols), self.value(node[2], row, cols)
            if a is False or b is False:
                return False
            return None if a is None or b is None else True
        if kind == "or":
            a, b = self.value(node[1], row, cols), self.value(node[2], row, cols)
            if a is True or b is True:
                return True
            return None if a is None or b is None else False
        if kind == "not":
            v = self.value(node[1], row, cols)
            return None if v is None else not v
        if kind == "isnull":
            v = self.value(node[1], row, cols)
            return (v is not None) if node[2] else (v is None)
        if kind == "in":
            v = self.value(node[1], row, cols)
            items = [self.value(x, row, cols) for x in node[2]]
            if v is None:
                return None
            hit = any(_coerce(v, x)[0] == _coerce(v, x)[1] for x in items if x is not None)
            return (not hit) if node[3] else hit
        if kind == "like":
            v = self.value(node[1], row, cols)
            pat = self.value(node[2], row, cols)
            if v is None or pat is None:
                return None
            rx = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in str(pat))
            hit = re.fullmatch(rx, str(v), re.S | (re.I if node[4] else 0)) is not None
            return (not hit) if node[3] else hit
        if kind == "between":
            v, lo, hi = (self.value(x, row, cols) for x in node[1:4])
            if v is None or lo is None or hi is None:
                return None
            v1, lo1 = _coerce(v, lo)
            v2, hi1 = _coerce(v, hi)
            hit = lo1 <= v1 and v2 <= hi1
            return (not hit) if node[4] else hit
        if kind == "star":
            raise SQLError('syntax error at or near "*"')
        raise SQLError(f"unsupported expression {kind}")

    def func(self, node: Any, row: dict[str, Any] | None, cols: list[str]) -> Any:
        name = node[1]
        args = [self.value(a, row, cols) for a in node[2] if a[0] != "star"]
        if name == "now" or name == "current_timestamp":
            return _fmt_ts(self.now) + "+00"
        if name == "current_date":
            return self.now.strftime("%Y-%m-%d")
        if name in ("current_database",):
            return self.db
        if name in ("current_user", "session_user", "user"):
            return self.user
        if name == "version":
            return VERSION
        if name == "pg_is_in_recovery":
            return bool(self.server.get("in_recovery"))
        if name == "pg_database_size":
            return 8_000_000 + 1_000_000 * len(
                self.databases.get(str(args[0]) if args else self.db, {}).get("tables", {})
            )
        if name == "pg_size_pretty":
            return f"{int(args[0]) // 1024 // 1024} MB" if args and args[0] is not None else None
        if name == "pg_terminate_backend":
            pid = args[0]
            self.ctx.mutating = True
            for db_name, db in self.server["databases"].items():
                if pid in _session_pids(self.host, db_name, db):
                    db.setdefault("terminated", []).append(pid)
                    return True
            return False
        if name == "lower":
            return None if args[0] is None else str(args[0]).lower()
        if name == "upper":
            return None if args[0] is None else str(args[0]).upper()
        if name == "length":
            return None if args[0] is None else len(str(args[0]))
        if name == "coalesce":
            return next((a for a in args if a is not None), None)
        if name in AGGREGATES:
            raise SQLError("aggregate functions are not allowed in WHERE", node[3])
        raise SQLError(
            f"function {name}({', '.join('unknown' for _ in args)}) does not exist",
            node[3],
            hint="No function matches the given name and argument types. You might need to add explicit type casts.",
        )

    # -- statements ---------------------------------------------------------------------

    def rows_of(self, t: dict[str, Any]) -> list[dict[str, Any]]:
        names = [c["name"] for c in t["columns"]]
        return [dict(zip(names, r, strict=False)) for r in t["rows"]]

    def virtual(self, name: str) -> tuple[list[str], list[list[Any]]] | None:
        n = name.lower()
        if n in ("pg_tables", "pg_catalog.pg_tables"):
            return ["schemaname", "tablename", "tableowner"], [
                ["public", t, self.databases[self.db]["owner"]] for t in sorted(self.databases[self.db]["tables"])
            ]
        if n in ("information_schema.tables",):
            return ["table_catalog", "table_schema", "table_name", "table_type"], [
                [self.db, "public", t, "BASE TABLE"] for t in sorted(self.databases[self.db]["tables"])
            ]
        if n in ("pg_database", "pg_catalog.pg_database"):
            return ["datname", "datdba", "encoding", "datistemplate"], [
                [d, self.databases[d]["owner"], 6, False] for d in sorted(self.databases)
            ] + [["template0", "postgres", 6, True], ["template1", "postgres", 6, True]]
        if n in ("pg_stat_activity", "pg_catalog.pg_stat_activity"):
            rows = []
            for d, db in sorted(self.databases.items()):
                for pid in _session_pids(self.host, d, db):
                    rows.append([pid, d, db["owner"], "idle", "app", "COMMIT"])
            return ["pid", "datname", "usename", "state", "application_name", "query"], rows
        if n in ("pg_stat_replication", "pg_catalog.pg_stat_replication"):
            return ["pid", "usename", "application_name", "client_addr", "state", "sync_state", "replay_lag"], [
                [
                    4000 + i,
                    "replicator",
                    r,
                    self.server.get("replicas_addr", {}).get(r, f"10.0.0.{20 + i}"),
                    "streaming",
                    "async",
                    "00:00:00.4",
                ]
                for i, r in enumerate(self.server.get("replicas", []))
            ]
        if n in ("pg_roles", "pg_catalog.pg_roles", "pg_authid", "pg_catalog.pg_authid"):
            store = self.role_store()
            authid = n.endswith("pg_authid")
            if authid and not store["role_attrs"].get(self.user, {}).get("superuser"):
                raise SQLError("permission denied for table pg_authid")
            cols = ["rolname", "rolsuper", "rolinherit", "rolcreaterole", "rolcreatedb", "rolcanlogin"]
            cols += ["rolreplication", "rolconnlimit", "rolpassword", "rolvaliduntil", "rolbypassrls"]
            rows = []
            for r in store["roles"]:
                a = store["role_attrs"].get(r, {})
                pw = a.get("verifier") if authid else ("********" if a.get("verifier") else None)
                rows.append(
                    [
                        r,
                        a.get("superuser"),
                        a.get("inherit"),
                        a.get("createrole"),
                        a.get("createdb"),
                        a.get("login"),
                        a.get("replication"),
                        a.get("connection_limit", -1),
                        pw,
                        a.get("valid_until"),
                        a.get("bypassrls"),
                    ]
                )
                self.ctx.saw(f"db/{self.host}/role/{r}")
            return cols, rows
        if n in ("pg_user", "pg_catalog.pg_user"):
            store = self.role_store()
            rows = []
            for i, r in enumerate(store["roles"]):
                a = store["role_attrs"].get(r, {})
                if a.get("login"):
                    rows.append(
                        [
                            r,
                            10 + i,
                            a.get("createdb"),
                            a.get("superuser"),
                            a.get("replication"),
                            a.get("bypassrls"),
                            "********",
                            a.get("valid_until"),
                        ]
                    )
            cols = ["usename", "usesysid", "usecreatedb", "usesuper", "userepl", "usebypassrls", "passwd", "valuntil"]
            return cols, rows
        return None

    # -- roles ----------------------------------------------------------------------------

    def role_store(self) -> dict[str, Any]:
        """The roles as this session sees them: the transaction's copy while one is open."""
        return self.tx_roles if self.tx is not None and self.tx_roles is not None else self.server

    def _role_statement(self, stmt: dict[str, Any]) -> tuple[str, list[str] | None, list[list[Any]]]:
        """CREATE/ALTER/DROP ROLE with PostgreSQL 15's checks and messages (roles are cluster-wide)."""
        kind = stmt["kind"]
        tag = {"create_role": "CREATE ROLE", "drop_role": "DROP ROLE"}.get(kind, "ALTER ROLE")
        self.write_guard(tag)
        store = self.role_store()
        roles, attrs = store["roles"], store["role_attrs"]
        me = attrs.get(self.user, {})
        privileged = bool(me.get("superuser") or me.get("createrole"))
        if kind == "drop_role":
            for name in stmt["names"]:
                if name not in roles:
                    if stmt["if_exists"]:
                        continue
                    raise SQLError(f'role "{name}" does not exist')
                if name == self.user:
                    raise SQLError("current user cannot be dropped")
                if not privileged:
                    raise SQLError("permission denied to drop role")
                if attrs.get(name, {}).get("superuser") and not me.get("superuser"):
                    raise SQLError("must be superuser to drop superusers")
                owned = [d for d, db in sorted(self.databases.items()) if db.get("owner") == name]
                if owned:
                    raise SQLError(
                        f'role "{name}" cannot be dropped because some objects depend on it',
                        detail="\n".join(f"owner of database {d}" for d in owned),
                    )
            for name in stmt["names"]:
                if name not in roles:
                    self.ctx.err(f'NOTICE:  role "{name}" does not exist, skipping')
                    continue
                roles.remove(name)
                attrs.pop(name, None)
            return tag, None, []
        name = self.user if stmt["name"].startswith("<") else stmt["name"]
        opts = dict(stmt.get("options") or {})
        if kind == "create_role":
            if not privileged:
                raise SQLError("permission denied to create role")
            if name in roles:
                raise SQLError(f'role "{name}" already exists')
            if opts.get("superuser") and not me.get("superuser"):
                raise SQLError("must be superuser to create superusers")
            new: dict[str, Any] = {"login": bool(stmt.get("user")), "superuser": False}
            _role_defaults(self.host, name, new)
            roles.append(name)
            attrs[name] = new
            self._apply_role_options(name, new, opts)
            return tag, None, []
        if name not in roles:
            raise SQLError(f'role "{name}" does not exist')
        target = attrs.setdefault(name, {})
        if (target.get("superuser") or "superuser" in opts) and not me.get("superuser"):
            raise SQLError("must be superuser to alter superuser roles or change superuser attribute")
        if kind == "rename_role":
            if not privileged:
                raise SQLError("permission denied to rename role")
            if name == self.user:
                raise SQLError("session user cannot be renamed")
            if stmt["new"] in roles:
                raise SQLError(f'role "{stmt["new"]}" already exists')
            roles[roles.index(name)] = stmt["new"]
            attrs[stmt["new"]] = attrs.pop(name)
            for db in self.databases.values():
                if db.get("owner") == name:
                    db["owner"] = stmt["new"]
            return tag, None, []
        if not privileged and (name != self.user or set(opts) - {"password"}):
            raise SQLError("permission denied")
        self._apply_role_options(name, target, opts)
        return tag, None, []

    def _apply_role_options(self, name: str, a: dict[str, Any], opts: dict[str, Any]) -> None:
        # VALID UNTIL is parsed first so that a bad timestamp rejects the statement before any change.
        for key, value in sorted(opts.items(), key=lambda kv: kv[0] != "valid_until"):
            if key == "password":
                if value == "":
                    self.ctx.err("NOTICE:  empty string is not a valid password, clearing password")
                    value = None
                a["password"] = value
                a["verifier"] = _verifier(self.host, name, value) if value is not None else None
            elif key == "valid_until":
                if str(value).lower() in ("infinity", "-infinity"):
                    a["valid_until"] = str(value).lower()
                else:
                    try:
                        a["valid_until"] = _fmt_ts(_parse_ts(str(value))) + "+00"
                    except SQLError:
                        raise SQLError(f'invalid input syntax for type timestamp with time zone: "{value}"') from None
            else:
                a[key] = value

    def execute(self, stmt: dict[str, Any]) -> tuple[str, list[str] | None, list[list[Any]]]:
        """(command tag, column names or None, rows)."""
        kind = stmt["kind"]
        if self.tx_failed and kind not in ("rollback", "commit"):
            raise SQLError("current transaction is aborted, commands ignored until end of transaction block")
        if kind == "begin":
            if self.tx is not None:
                self.ctx.err("WARNING:  there is already a transaction in progress")
            else:
                self.tx = copy.deepcopy(self.server["databases"])
                self.tx_roles = {
                    "roles": list(self.server["roles"]),
                    "role_attrs": copy.deepcopy(self.server["role_attrs"]),
                }
            return "BEGIN", None, []
        if kind in ("commit", "rollback"):
            if self.tx is None:
                self.ctx.err("WARNING:  there is no transaction in progress")
            elif kind == "commit" and not self.tx_failed:
                self.server["databases"] = self.tx
                self.server.update(self.tx_roles or {})
            tag = "ROLLBACK" if kind == "rollback" or self.tx_failed else "COMMIT"
            self.tx = None
            self.tx_failed = False
            return tag, None, []
        if kind == "show":
            # The settings operators look at, at a Debian PostgreSQL 15 package's defaults.
            values = {
                "server_version": "15.6 (Debian 15.6-0+deb12u1)",
                "server_version_num": "150006",
                "transaction_read_only": "on" if self.server.get("in_recovery") else "off",
                "default_transaction_read_only": "off",
                "in_hot_standby": "on" if self.server.get("in_recovery") else "off",
                "hot_standby": "on",
                "search_path": '"$user", public',
                "max_connections": "100",
                "port": str(self.server.get("port", 5432)),
                "timezone": "Etc/UTC",
                "datestyle": "ISO, MDY",
                "shared_buffers": "128MB",
                "work_mem": "4MB",
                "statement_timeout": "0",
                "lock_timeout": "0",
                "idle_in_transaction_session_timeout": "0",
                "wal_level": "replica",
                "data_directory": "/var/lib/postgresql/15/main",
                "listen_addresses": "*",
                "client_encoding": "UTF8",
                "server_encoding": "UTF8",
                "max_stack_depth": "2MB",
            }
            if stmt["name"] not in values:
                raise SQLError(f'unrecognized configuration parameter "{stmt["name"]}"')
            return "SHOW", [stmt["name"]], [[values[stmt["name"]]]]
        if kind == "explain":
            return self._explain(stmt)
        if kind == "do":
            self.ctx.mutating = True
            raise SQLError(
                'language "plpgsql" does not exist', hint="Use CREATE EXTENSION to load the language into the database."
            )
        if kind == "noop":
            if stmt.get("write"):
                self.ctx.mutating = True
                self.write_guard(stmt["tag"])
            return stmt["tag"], None, []
        if kind == "select":
            return self.select(stmt)
        self.ctx.mutating = True
        if kind in ("alter_role", "create_role", "drop_role", "rename_role"):
            return self._role_statement(stmt)
        verb = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE", "truncate": "TRUNCATE TABLE"}.get(
            kind, kind.replace("_", " ").upper()
        )
        # Like PostgreSQL: names are resolved (parse analysis) before the executor refuses a write
        # on a standby, so a missing table is reported first.
        if kind in ("insert", "update", "delete"):
            base, t = self.table(stmt["table"], stmt["pos"])
            if kind == "update":
                known = {c["name"] for c in t["columns"]}
                for (col, _), col_pos in zip(
                    stmt["sets"], stmt.get("set_pos") or [None] * len(stmt["sets"]), strict=True
                ):
                    if col not in known:
                        raise SQLError(f'column "{col}" of relation "{base}" does not exist', col_pos)
        self.write_guard(verb)
        if kind == "insert":
            base, t = self.table(stmt["table"], stmt["pos"])
            names = [c["name"] for c in t["columns"]]
            cols = stmt["cols"] or names
            for i, c in enumerate(cols):
                if c not in names:
                    at = (stmt.get("col_pos") or [])[i : i + 1]
                    raise SQLError(f'column "{c}" of relation "{base}" does not exist', at[0] if at else None)
            added = []
            if stmt.get("query") is not None:
                _, _, selected = self.select(stmt["query"])
                for got in selected:
                    if len(got) != len(cols):
                        raise SQLError(
                            "INSERT has more expressions than target columns"
                            if len(got) > len(cols)
                            else "INSERT has more target columns than expressions"
                        )
                    copied: dict[str, Any] = {n: None for n in names}
                    copied.update(zip(cols, got, strict=True))
                    if "id" in names and copied.get("id") is None and "id" not in cols:
                        copied["id"] = max([r[names.index("id")] or 0 for r in t["rows"]] + [0]) + 1
                    t["rows"].append([copied[n] for n in names])
                    added.append(copied)
                return self._returning(stmt, added, f"INSERT 0 {len(added)}")
            for vals in stmt["rows"]:
                if len(vals) != len(cols):
                    raise SQLError(
                        "INSERT has more expressions than target columns"
                        if len(vals) > len(cols)
                        else "INSERT has more target columns than expressions"
                    )
                row: dict[str, Any] = {n: None for n in names}
                for c, v in zip(cols, vals, strict=True):
                    row[c] = self.value(v, {}, [])
                if "id" in names and row.get("id") is None and not (stmt["cols"] and "id" in stmt["cols"]):
                    row["id"] = max([r[names.index("id")] or 0 for r in t["rows"]] + [0]) + 1
                t["rows"].append([row[n] for n in names])
                added.append(row)
            return self._returning(stmt, added, f"INSERT 0 {len(added)}")
        if kind in ("update", "delete"):
            base, t = self.table(stmt["table"], stmt["pos"])
            names = [c["name"] for c in t["columns"]]
            for e in [stmt["where"], *(e for _, e in stmt.get("sets", []))]:
                _check_columns(e, names)
            keep, hit = [], []
            for r in t["rows"]:
                row = dict(zip(names, r, strict=False))
                if stmt["where"] is None or self.value(stmt["where"], row, names) is True:
                    hit.append(row)
                    if kind == "update":
                        new = dict(row)
                        for col, e in stmt["sets"]:
                            if col not in names:
                                raise SQLError(f'column "{col}" of relation "{base}" does not exist')
                            new[col] = self.value(e, row, names)
                        keep.append([new[n] for n in names])
                        hit[-1] = new
                else:
                    keep.append(r)
            t["rows"] = keep
            return self._returning(stmt, hit, f"{kind.upper()} {len(hit)}")
        if kind == "truncate":
            for name, pos in stmt["tables"]:
                _, t = self.table(name, pos)
                t["rows"] = []
            return "TRUNCATE TABLE", None, []
        if kind == "drop_table":
            tables = self.databases[self.db]["tables"]
            for name, _pos in stmt["names"]:
                base = name.split(".", 1)[1] if name.startswith("public.") else name
                if base not in tables:
                    if stmt["if_exists"]:
                        self.ctx.err(f'NOTICE:  table "{base}" does not exist, skipping')
                        continue
                    raise SQLError(f'table "{name}" does not exist')
                del tables[base]
            return "DROP TABLE", None, []
        if kind == "drop_database":
            (name, _pos), *_ = stmt["names"]
            if name == self.db:
                raise SQLError("cannot drop the currently open database")
            if name not in self.databases:
                if stmt["if_exists"]:
                    self.ctx.err(f'NOTICE:  database "{name}" does not exist, skipping')
                    return "DROP DATABASE", None, []
                raise SQLError(f'database "{name}" does not exist')
            if self.tx is not None:
                raise SQLError("DROP DATABASE cannot run inside a transaction block")
            sessions = len(_session_pids(self.host, name, self.databases[name]))
            if sessions and not stmt["force"]:
                raise SQLError(
                    f'database "{name}" is being accessed by other users',
                    detail=f"There {'is' if sessions == 1 else 'are'} {sessions} other session{'s' if sessions != 1 else ''} using the database.",
                )
            del self.databases[name]
            return "DROP DATABASE", None, []
        if kind == "create_database":
            if stmt["name"] in self.databases:
                raise SQLError(f'database "{stmt["name"]}" already exists')
            if self.tx is not None:
                raise SQLError("CREATE DATABASE cannot run inside a transaction block")
            self.databases[stmt["name"]] = {"owner": stmt["owner"] or self.user, "sessions": 0, "tables": {}}
            return "CREATE DATABASE", None, []
        if kind == "create_table":
            tables = self.databases[self.db]["tables"]
            base = stmt["name"].split(".", 1)[1] if stmt["name"].startswith("public.") else stmt["name"]
            if base in tables:
                if stmt["if_not"]:
                    self.ctx.err(f'NOTICE:  relation "{base}" already exists, skipping')
                    return "CREATE TABLE", None, []
                raise SQLError(f'relation "{base}" already exists')
            tables[base] = {"columns": stmt["columns"], "rows": []}
            return "CREATE TABLE", None, []
        if kind.startswith("alter_"):
            base, t = self.table(stmt["table"], stmt["pos"])
            names = [c["name"] for c in t["columns"]]
            if kind == "alter_add":
                if stmt["column"]["name"] in names:
                    raise SQLError(f'column "{stmt["column"]["name"]}" of relation "{base}" already exists')
                t["columns"].append(stmt["column"])
                for r in t["rows"]:
                    r.append(None)
            elif kind == "alter_drop":
                if stmt["column"] not in names:
                    raise SQLError(f'column "{stmt["column"]}" of relation "{base}" does not exist')
                i = names.index(stmt["column"])
                t["columns"].pop(i)
                for r in t["rows"]:
                    r.pop(i)
            elif kind == "alter_rename_table":
                self.databases[self.db]["tables"][stmt["new"]] = self.databases[self.db]["tables"].pop(base)
            elif kind == "alter_rename_column":
                if stmt["old"] not in names:
                    raise SQLError(f'column "{stmt["old"]}" does not exist')
                t["columns"][names.index(stmt["old"])]["name"] = stmt["new"]
            return "ALTER TABLE", None, []
        raise SQLError(f"{kind} is not supported")

    def _returning(
        self, stmt: dict[str, Any], rows: list[dict[str, Any]], tag: str
    ) -> tuple[str, list[str] | None, list[list[Any]]]:
        if not stmt.get("returning"):
            return tag, None, []
        items = stmt["returning"]
        names: list[str] = []
        for e, alias in items:
            if e[0] == "star":
                names.extend(rows[0].keys() if rows else [])
            else:
                names.append(alias or (e[1] if e[0] == "col" else "?column?"))
        out = []
        for row in rows:
            vals: list[Any] = []
            for e, _ in items:
                vals.extend(row.values()) if e[0] == "star" else vals.append(self.value(e, row, list(row)))
            out.append(vals)
        return tag, names, out

    def _explain(self, stmt: dict[str, Any]) -> tuple[str, list[str] | None, list[list[Any]]]:
        """The plan of a one-table statement: a sequential scan under the statement's own node.

        EXPLAIN ANALYZE runs the statement (a DELETE under it deletes), as PostgreSQL does.
        """
        inner = stmt["stmt"]
        table = inner.get("table")
        estimate = 0
        if table and self.virtual(table) is None:
            _, t = self.table(table, inner.get("pos"))
            estimate = len(self.rows_of(t))
        actual = 0
        if stmt["analyze"]:
            tag, _, rows = self.execute(inner)
            actual = len(rows) if inner["kind"] == "select" else int(tag.rsplit(" ", 1)[-1])
        width = 36

        def node(text: str, rows: int, cost: float, returned: int | None = None) -> str:
            line = f"{text}  (cost=0.00..{cost:.2f} rows={rows} width={width})"
            shown = actual if returned is None else returned
            return line + (f" (actual time=0.010..0.012 rows={shown} loops=1)" if stmt["analyze"] else "")

        cost = 1.0 + 0.01 * estimate
        if inner["kind"] == "insert":
            lines = [
                node(f"Insert on {table}", 0, 0.01),
                "  ->  " + node("Result", len(inner.get("rows") or [1]), 0.01),
            ]
        elif not table:
            lines = [node("Result", 1, 0.01)]
        elif inner["kind"] == "select":
            lines = [node(f"Seq Scan on {table}", estimate, cost)]
        else:
            head = {"update": "Update", "delete": "Delete"}[inner["kind"]]
            # The modifying node returns no rows; the scan under it returns the rows it changes.
            lines = [
                node(f"{head} on {table}", 0, cost, returned=0),
                "  ->  " + node(f"Seq Scan on {table}", estimate, cost),
            ]
        if stmt["analyze"]:
            lines += ["Planning Time: 0.051 ms", "Execution Time: 0.024 ms"]
        return "EXPLAIN", ["QUERY PLAN"], [[line] for line in lines]

    def select(self, stmt: dict[str, Any]) -> tuple[str, list[str] | None, list[list[Any]]]:
        if stmt["table"]:
            virtual = self.virtual(stmt["table"])
            if virtual is not None:
                names, raw = virtual
                rows = [dict(zip(names, r, strict=True)) for r in raw]
            else:
                _, t = self.table(stmt["table"], stmt["pos"])
                names = [c["name"] for c in t["columns"]]
                rows = self.rows_of(t)
        else:
            names, rows = [], [{}]
        if stmt["table"]:
            for e in [stmt["where"], *(e for e, _ in stmt["items"]), *(e for e, _ in stmt["order"]), *stmt["group"]]:
                _check_columns(e, names, aliases={a for _, a in stmt["items"] if a})
        if stmt["where"] is not None:
            rows = [r for r in rows if self.value(stmt["where"], r, names) is True]
        items = stmt["items"]
        has_agg = any(e[0] == "func" and e[1] in AGGREGATES for e, _ in items)
        if stmt["group"] or has_agg:
            groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
            for r in rows:
                key = tuple(self.value(g, r, names) for g in stmt["group"])
                groups.setdefault(key, []).append(r)
            if not stmt["group"] and not groups:
                groups[()] = []
            out_names = [alias or (e[1] if e[0] in ("col", "func") else "?column?") for e, alias in items]
            out_rows = []
            for _, members in groups.items():
                vals = []
                for e, _ in items:
                    if e[0] == "func" and e[1] in AGGREGATES:
                        vals.append(self._aggregate(e, members, names))
                    else:
                        vals.append(self.value(e, members[0] if members else {}, names))
                out_rows.append(vals)
            rows_out = out_rows
        else:
            out_names = []
            for e, alias in items:
                if e[0] == "star":
                    out_names.extend(names)
                else:
                    out_names.append(alias or (e[1] if e[0] == "col" else e[1] if e[0] == "func" else "?column?"))
            if stmt["order"]:
                for e, desc in reversed(stmt["order"]):

                    def order_key(r: dict[str, Any], e: Any = e) -> tuple[int, Any]:
                        # ORDER BY 2 sorts by the second output column, as SQL allows.
                        if e[0] == "lit" and isinstance(e[1], int):
                            return _sort_key(list(r.values())[e[1] - 1])
                        return _sort_key(self.value(e, r, names))

                    rows.sort(key=order_key, reverse=desc)
            rows_out = []
            for r in rows:
                vals = []
                for e, _ in items:
                    if e[0] == "star":
                        vals.extend(r.get(n) for n in names)
                    else:
                        vals.append(self.value(e, r, names))
                rows_out.append(vals)
        if stmt["distinct"]:
            seen: list[list[Any]] = []
            for out_row in rows_out:
                if out_row not in seen:
                    seen.append(out_row)
            rows_out = seen
        if stmt["offset"]:
            rows_out = rows_out[stmt["offset"] :]
        if stmt["limit"] is not None:
            rows_out = rows_out[: stmt["limit"]]
        return f"SELECT {len(rows_out)}", out_names, rows_out

    def _aggregate(self, e: Any, rows: list[dict[str, Any]], names: list[str]) -> Any:
        name, args = e[1], e[2]
        if name == "count":
            if not args or args[0][0] == "star":
                return len(rows)
            vals = [self.value(args[0], r, names) for r in rows]
            vals = [v for v in vals if v is not None]
            return len(set(map(str, vals))) if len(e) > 4 and e[4] else len(vals)
        vals = [v for v in (self.value(args[0], r, names) for r in rows) if v is not None]
        if not vals:
            return None
        if name == "sum":
            return sum(vals)
        if name == "min":
            return min(vals)
        if name == "max":
            return max(vals)
        return round(sum(vals) / len(vals), 16)


def _check_columns(node: Any, names: list[str], aliases: set[str] | None = None) -> None:
    """Reject unknown column references even when no row would evaluate them (parse analysis)."""
    if node is None or not isinstance(node, tuple):
        return
    if node[0] == "col" and node[1] not in names and node[1] not in (aliases or set()):
        raise SQLError(f'column "{node[1]}" does not exist', node[2])
    for part in node[1:]:
        if isinstance(part, tuple):
            _check_columns(part, names, aliases)
        elif isinstance(part, list):
            for x in part:
                _check_columns(x, names, aliases)


def _session_pids(host: str, db_name: str, db: dict[str, Any]) -> list[int]:
    """Backend pids of the application's open sessions, minus those terminated."""
    base = 20000 + (sum(map(ord, host + db_name)) % 5000) * 3
    gone = set(db.get("terminated", []))
    return [base + i for i in range(int(db.get("sessions", 0))) if base + i not in gone]


def _interval(text: str) -> timedelta:
    m = re.match(r"^\s*(\d+)\s*(second|minute|hour|day|week|month|year)s?\s*$", text.lower())
    if not m:
        raise SQLError(f'invalid input syntax for type interval: "{text}"')
    n, unit = int(m.group(1)), m.group(2)
    days = {"second": 1 / 86400, "minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7, "month": 30, "year": 365}[
        unit
    ]
    return timedelta(days=n * days)


def _parse_ts(s: str) -> datetime:
    s = s.strip().replace("T", " ").rstrip("Z")
    s = re.sub(r"\+00$", "", s)
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(s[:19] if fmt == "%Y-%m-%d %H:%M:%S" else s, fmt)
        except ValueError:
            continue
    raise SQLError(f'invalid input syntax for type timestamp: "{s}"')


def _fmt_ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _cast(v: Any, typ: str) -> Any:
    if v is None:
        return None
    if typ in ("int", "integer", "int4", "bigint", "int8"):
        try:
            return int(v)
        except ValueError:
            raise SQLError(f'invalid input syntax for type integer: "{v}"') from None
    if typ in ("text", "varchar"):
        return _display(v)
    if typ == "date":
        return _parse_ts(str(v)).strftime("%Y-%m-%d")
    if typ in ("timestamp", "timestamptz"):
        return _fmt_ts(_parse_ts(str(v)))
    if typ in ("bool", "boolean"):
        return str(v).lower() in ("t", "true", "1", "yes", "on")
    return v


def _coerce(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, bool) or isinstance(b, bool):
        conv = lambda x: x if isinstance(x, bool) else str(x).lower() in ("t", "true", "1", "yes", "on")  # noqa: E731
        return conv(a), conv(b)
    if isinstance(a, (int, float)) and isinstance(b, str):
        try:
            return a, float(b) if "." in b else int(b)
        except ValueError:
            raise SQLError(f'invalid input syntax for type integer: "{b}"') from None
    if isinstance(b, (int, float)) and isinstance(a, str):
        try:
            return float(a) if "." in a else int(a), b
        except ValueError:
            raise SQLError(f'invalid input syntax for type integer: "{a}"') from None
    if (
        isinstance(a, str)
        and isinstance(b, str)
        and re.match(r"^\d{4}-\d\d-\d\d", a)
        and re.match(r"^\d{4}-\d\d-\d\d", b)
    ):
        return _fmt_ts(_parse_ts(a)), _fmt_ts(_parse_ts(b))
    return a, b


def _pgtype(v: Any) -> str:
    return "integer" if isinstance(v, int) and not isinstance(v, bool) else "boolean" if isinstance(v, bool) else "text"


def _sort_key(v: Any) -> tuple[int, Any]:
    if v is None:
        return (1, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v)
    return (0, str(v)) if not isinstance(v, (int, float)) else (0, v)


def _display(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, float) and v.is_integer():
        return str(v)
    return str(v)


def _centre(text: str, width: int) -> str:
    left = (width - len(text)) // 2
    return " " * left + text + " " * (width - len(text) - left)


def aligned(names: list[str], rows: list[list[Any]], title: str = "", footer: bool = True) -> str:
    """psql's default ``aligned`` format: centred headers, numbers right-aligned, row count."""
    cells = [[_display(v) for v in r] for r in rows]
    numeric = [
        all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows if r[i] is not None)
        and any(r[i] is not None for r in rows)
        for i in range(len(names))
    ]
    widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
    lines = []
    total = sum(widths) + 3 * len(widths) - 1
    if title:
        # print.c: the title's left margin is (total - width) / 2; headers put the odd space right.
        lines.append(" " * max(0, (total - len(title)) // 2) + title)
    lines.append("|".join(f" {_centre(n, w)} " for n, w in zip(names, widths, strict=True)))
    lines.append("+".join("-" * (w + 2) for w in widths))
    for c in cells:
        parts = []
        for i, (v, w) in enumerate(zip(c, widths, strict=True)):
            parts.append(f" {v.rjust(w) if numeric[i] else v.ljust(w)} ")
        lines.append("|".join(parts).rstrip())
    if footer:
        n = len(rows)
        lines.append(f"({n} row{'s' if n != 1 else ''})")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The client


OPTS = [
    opt("-h", "--host"),
    opt("-p", "--port"),
    opt("-U", "--username"),
    opt("-d", "--dbname"),
    opt("-c", "--command", kind="list"),
    opt("-f", "--file", kind="list"),
    opt("-v", "--set", "--variable", dest="set", kind="list"),
    opt("-X", "--no-psqlrc", kind="bool", inert="no ~/.psqlrc exists in an emulated call: there is nothing to skip"),
    opt("-q", "--quiet", kind="bool"),
    opt("-t", "--tuples-only", kind="bool"),
    opt("-A", "--no-align", kind="bool"),
    opt("-F", "--field-separator"),
    opt("-R", "--record-separator"),
    opt("-x", "--expanded", kind="bool"),
    opt("-1", "--single-transaction", kind="bool"),
    opt("-w", "--no-password", kind="bool", inert="the emulated servers never ask for a password"),
    opt("-W", "--password", kind="bool"),
    opt("-e", "--echo-queries", kind="bool"),
    opt("-E", "--echo-hidden", kind="bool"),
    opt("-a", "--echo-all", kind="bool"),
    opt("-b", "--echo-errors", kind="bool"),
    opt("-l", "--list", kind="bool"),
    opt("-P", "--pset", kind="list"),
    opt("-o", "--output"),
    opt("-L", "--log-file"),
    opt("-n", "--no-readline", kind="bool", inert=NO_TERMINAL),
    opt("-s", "--single-step", kind="bool"),
    opt("-S", "--single-line", kind="bool"),
    opt("-H", "--html", kind="bool"),
    opt("--csv", kind="bool"),
    opt("-V", "--version", kind="bool"),
    opt("-?", "--help", kind="bool"),
]


HELP = """psql is the PostgreSQL interactive terminal.

Usage:
  psql [OPTION]... [DBNAME [USERNAME]]

General options:
  -c, --command=COMMAND    run only single command (SQL or internal) and exit
  -d, --dbname=DBNAME      database name to connect to
  -f, --file=FILENAME      execute commands from file, then exit
  -l, --list               list available databases, then exit
  -v, --set=, --variable=NAME=VALUE
                           set psql variable NAME to VALUE
                           (e.g., -v ON_ERROR_STOP=1)
  -V, --version            output version information, then exit
  -X, --no-psqlrc          do not read startup file (~/.psqlrc)
  -1 ("one"), --single-transaction
                           execute as a single transaction (if non-interactive)
  -?, --help[=options]     show this help, then exit

Input and output options:
  -a, --echo-all           echo all input from script
  -b, --echo-errors        echo failed commands
  -e, --echo-queries       echo commands sent to server
  -E, --echo-hidden        display queries that internal commands generate
  -L, --log-file=FILENAME  send session log to file
  -n, --no-readline        disable enhanced command line editing (readline)
  -o, --output=FILENAME    send query results to file (or |pipe)
  -q, --quiet              run quietly (no messages, only query output)
  -s, --single-step        single-step mode (confirm each query)
  -S, --single-line        single-line mode (end of line terminates SQL command)

Output format options:
  -A, --no-align           unaligned table output mode
      --csv                CSV (Comma-Separated Values) table output mode
  -F, --field-separator=STRING
                           field separator for unaligned output (default: "|")
  -H, --html               HTML table output mode
  -P, --pset=VAR[=ARG]     set printing option VAR to ARG (see \\pset command)
  -R, --record-separator=STRING
                           record separator for unaligned output (default: newline)
  -t, --tuples-only        print rows only
  -x, --expanded           turn on expanded table output

Connection options:
  -h, --host=HOSTNAME      database server host or socket directory (default: "local socket")
  -p, --port=PORT          database server port (default: "5432")
  -U, --username=USERNAME  database user name (default: "agent")
  -w, --no-password        never prompt for password
  -W, --password           force password prompt (should happen automatically)

For more information, type "\\?" (for internal commands) or "\\help" (for SQL
commands) from within psql, or consult the psql section in the PostgreSQL
documentation.

Report bugs to <pgsql-bugs@lists.postgresql.org>.
PostgreSQL home page: <https://www.postgresql.org/>
"""


class _Client:
    def __init__(self, ctx: Ctx, p: Any) -> None:
        self.ctx = ctx
        self.p = p
        self.s = ctx.state[SECTION]
        self.vars: dict[str, str] = {}
        for item in p.get("set") or []:
            k, _, v = item.partition("=")
            self.vars[k] = v
        self.stop = self.vars.get("ON_ERROR_STOP", "").lower() in ("1", "on", "true", "yes")
        self.expanded = bool(p.get("expanded"))
        self.session: Session | None = None
        self.source = ""
        self.line = 1
        self.errors = 0
        self.query = ""  # the query string being run (a -c argument or a script), for positions
        self.offset = 0  # where the current statement starts in it

    def connect(self) -> Session:
        env = self.ctx.call.env
        p = self.p
        args = list(p.args)
        conn: dict[str, str] = {}
        if args and (args[0].startswith(("postgresql://", "postgres://")) or "=" in args[0]):
            conn = _conninfo(args.pop(0))
        host = p.get("host") or conn.get("host") or env.get("PGHOST") or ""
        port = p.get("port") or conn.get("port") or env.get("PGPORT") or "5432"
        user = (
            p.get("username")
            or conn.get("user")
            or (args[1] if len(args) > 1 else None)
            or env.get("PGUSER")
            or env.get("USER")
            or "agent"
        )
        named = p.get("dbname") or conn.get("dbname") or (args[0] if args else None)
        # psql -l connects to "postgres" unless a database is named on the command line — not
        # through PGDATABASE (the psql reference page, -l).
        default = "postgres" if p.get("list") else env.get("PGDATABASE") or user
        db = named or default
        if p.get("dbname") and "=" in p.get("dbname", ""):
            info = _conninfo(p.get("dbname"))
            host, db, user = info.get("host", host), info.get("dbname", db), info.get("user", user)
        servers = self.s["servers"]
        if not host or host.startswith("/"):
            sock = f"{host or '/var/run/postgresql'}/.s.PGSQL.{port}"
            if "localhost" not in servers:
                raise self.ctx.fail(
                    2,
                    f'psql: error: connection to server on socket "{sock}" failed: No such file or directory\n\tIs the server running locally and accepting connections on that socket?',
                )
            host = "localhost"
        srv = servers.get(host)
        if srv is None:
            match = [h for h, sv in servers.items() if host in sv.get("aliases", []) or sv.get("address") == host]
            if match:
                host = match[0]
                srv = servers[host]
        if srv is None:
            raise self.ctx.fail(
                2, f'psql: error: could not translate host name "{host}" to address: Name or service not known'
            )
        where = f'connection to server at "{host}" ({srv["address"]}), port {port} failed'
        if str(srv.get("port", 5432)) != str(port):
            raise self.ctx.fail(
                2,
                f"psql: error: {where}: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?",
            )
        if user not in srv["roles"]:
            raise self.ctx.fail(2, f'psql: error: {where}: FATAL:  role "{user}" does not exist')
        if not srv.get("role_attrs", {}).get(user, {}).get("login", True):
            raise self.ctx.fail(2, f'psql: error: {where}: FATAL:  role "{user}" is not permitted to log in')
        if db not in srv["databases"]:
            raise self.ctx.fail(2, f'psql: error: {where}: FATAL:  database "{db}" does not exist')
        self.ctx.saw(f"db/{host}/{db}")
        return Session(self.ctx, host, srv, db, user)

    def run(self) -> int:
        p = self.p
        if p.get("version"):
            self.ctx.out("psql (PostgreSQL) 15.6 (Debian 15.6-0+deb12u1)")
            return 0
        if p.get("help"):
            self.ctx.out(HELP, end="")
            return 0
        # -P pager=...: output is never paged here, so pager settings are handled by doing nothing;
        # any other printing option is not implemented and stays unread, so the call is refused
        # as psql refuses an option it does not know (suite.emulators.run_call).
        psets = p.values.get("pset") or []
        if psets and all(item.split("=", 1)[0] in ("pager", "pager_min_lines") for item in psets):
            p.get("pset")
        self.session = self.connect()
        if p.get("list"):
            self.meta("\\l")
            return 0
        scripts: list[tuple[str, str]] = []
        for c in p.get("command") or []:
            scripts.append(("-c", c))
        for f in p.get("file") or []:
            if f == "-":
                scripts.append(("<stdin>", self.ctx.call.read_stdin()))
                continue
            data = self.ctx.call.file(f)
            if data.error:
                self.ctx.err(f"psql: error: {f}: No such file or directory")
                return 1
            scripts.append((f, data.content or ""))
        if not scripts:
            scripts.append(("<stdin>", self.ctx.call.read_stdin()))
        if p.get("single_transaction"):
            self.run_one(self.session, {"kind": "begin"}, "", quiet=True)
        code = 0
        for source, text in scripts:
            self.source = source
            self.query, self.offset, cursor = text, 0, 0
            statements = split_statements(text)
            # psql sends a -c string to the server as one query: its statements run in one implicit
            # transaction (unless it controls transactions itself), and the first error skips the
            # rest and undoes what the string did (protocol, "Multiple Statements in a Simple Query").
            one_query = source == "-c" and len(statements) > 1 and not any(s.startswith("\\") for s, _ in statements)
            implicit = (
                one_query and self.session.tx is None and not any(_controls_transaction(s) for s, _ in statements)
            )
            before = copy.deepcopy(self.session.server["databases"]) if implicit else None
            for stmt, line in statements:
                self.line = line
                found = text.find(stmt, cursor)
                self.offset = max(found, 0)
                cursor = self.offset + len(stmt)
                if self.ctx.call.tool and p.get("echo_queries"):
                    self.ctx.out(stmt)
                ok = self.statement(stmt)
                if stmt.strip() in ("\\q", "\\quit"):
                    return code
                if not ok:
                    if source == "-c":
                        code = 1
                        if before is not None:
                            self.session.server["databases"] = before
                        if self.stop:
                            return 1
                        if one_query:
                            break
                    elif self.stop:
                        return 3
        if p.get("single_transaction") and self.session.tx is not None:
            self.run_one(self.session, {"kind": "commit" if not self.errors else "rollback"}, "", quiet=True)
        if self.session.tx is not None:
            # psql exiting with an open transaction: the server aborts it.
            self.session.tx = None
        return code

    def statement(self, text: str) -> bool:
        assert self.session is not None
        if text.startswith("\\"):
            return self.meta(text)
        try:
            stmt = _P(text).statement()
        except SQLError as err:
            self.report(err, text)
            return False
        return self.run_one(self.session, stmt, text)

    def run_one(self, sess: Session, stmt: dict[str, Any], text: str, quiet: bool = False) -> bool:
        snapshot = copy.deepcopy(sess.server["databases"]) if sess.tx is None else None
        try:
            tag, names, rows = sess.execute(stmt)
        except SQLError as err:
            if snapshot is not None:
                sess.server["databases"] = snapshot
            if sess.tx is not None:
                sess.tx_failed = True
            self.report(err, text)
            return False
        if quiet:
            return True
        if names is not None:
            self.print_rows(names, rows)
            # A write with RETURNING: psql prints the rows, then the command's tag.
            if stmt.get("kind") in ("insert", "update", "delete") and not self.p.get("quiet"):
                self.ctx.out(tag)
        elif not self.p.get("quiet"):
            self.ctx.out(tag)
        return True

    def report(self, err: SQLError, text: str) -> None:
        self.errors += 1
        prefix = "" if self.source == "-c" else f"psql:{self.source}:{self.line}: "
        lines = [f"{prefix}ERROR:  {err.message}"]
        if err.detail:
            lines.append(f"DETAIL:  {err.detail}")
        if err.hint:
            lines.append(f"HINT:  {err.hint}")
        if err.pos is not None and text and not err.message.startswith(("database ", "cannot ", "current transaction")):
            # The server quotes the line of the query string that holds the position: for -c that
            # string is the whole argument (psql sends it as one query), so a later statement's
            # position counts from the argument's start.
            query, pos = (self.query, self.offset + err.pos) if self.source == "-c" and self.query else (text, err.pos)
            lines.extend(_error_cursor(query, pos))
        self.ctx.err("\n".join(lines))

    def print_rows(self, names: list[str], rows: list[list[Any]], title: str = "", footer: bool = True) -> None:
        """Rows in the output mode the options chose — for queries and meta-commands alike."""
        p = self.p
        if p.get("csv"):
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            if not p.get("tuples_only"):
                w.writerow(names)
            for r in rows:
                w.writerow([_display(v) for v in r])
            self.ctx.out(buf.getvalue(), end="")
            return
        if p.get("no_align"):
            sep = p.get("field_separator") or "|"
            if not p.get("tuples_only"):
                if title:
                    self.ctx.out(title)
                self.ctx.out(sep.join(names))
            for r in rows:
                self.ctx.out(sep.join(_display(v) for v in r))
            if not p.get("tuples_only") and footer:
                self.ctx.out(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
            return
        if self.expanded:
            if not rows:
                self.ctx.out("(0 rows)")
            width = max((len(n) for n in names), default=0)
            dwidth = max((len(_display(v)) for r in rows for v in r), default=0)
            for i, r in enumerate(rows, 1):
                self.ctx.out(_record_rule(i, width, dwidth))
                for n, v in zip(names, r, strict=True):
                    self.ctx.out(f"{n.ljust(width)} | {_display(v)}")
            if rows:
                self.ctx.out("")
            return
        if p.get("tuples_only"):
            text = aligned(names, rows, footer=False)
            self.ctx.out("\n".join(text.splitlines()[2:]) + "\n", end="")
            return
        self.ctx.out(aligned(names, rows, title, footer))

    def meta(self, line: str) -> bool:
        sess = self.session
        assert sess is not None
        parts = line.split()
        cmd, args = parts[0], parts[1:]
        if cmd in ("\\q", "\\quit"):
            return True
        if cmd == "\\l" or cmd == "\\l+" or cmd == "\\list":
            # PostgreSQL 15's columns (ICU Locale and Locale Provider are new in 15), by name.
            rows = [[d, db["owner"], "UTF8", "C.UTF-8", "C.UTF-8", "", "libc", ""] for d, db in sess.databases.items()]
            rows += [
                [t, "postgres", "UTF8", "C.UTF-8", "C.UTF-8", "", "libc", "=c/postgres"]
                for t in ("template0", "template1")
            ]
            rows.sort(key=lambda r: r[0])
            for d in sess.databases:
                if d != "postgres":
                    self.ctx.saw(f"db/{sess.host}/{d}")
            self.print_rows(
                ["Name", "Owner", "Encoding", "Collate", "Ctype", "ICU Locale", "Locale Provider", "Access privileges"],
                rows,
                "List of databases",
            )
            return True
        if cmd in ("\\dt", "\\dt+", "\\d") and not args:
            tables = sorted(sess.databases[sess.db]["tables"])
            if not tables:
                self.ctx.err("Did not find any relations.")
                return True
            for t in tables:
                self.ctx.saw(f"db/{sess.host}/{sess.db}/table/{t}")
            self.print_rows(
                ["Schema", "Name", "Type", "Owner"],
                [["public", t, "table", sess.databases[sess.db]["owner"]] for t in tables],
                "List of relations",
            )
            return True
        if cmd in ("\\d", "\\d+") and args:
            name = args[0]
            base = name.split(".", 1)[1] if name.startswith("public.") else name
            t = sess.databases[sess.db]["tables"].get(base)
            if t is None:
                self.ctx.err(f'Did not find any relation named "{name}".')
                return False
            self.ctx.saw(f"db/{sess.host}/{sess.db}/table/{base}")
            self.print_rows(
                ["Column", "Type", "Collation", "Nullable", "Default"],
                [[c["name"], c["type"], "", "not null" if c["name"] == "id" else "", ""] for c in t["columns"]],
                f'Table "public.{base}"',
                footer=False,
            )
            return True
        if cmd in ("\\du", "\\du+", "\\dg"):
            store = sess.role_store()
            rows = []
            for r in sorted(store["roles"]):
                a = store["role_attrs"].get(r, {})
                words = [
                    label
                    for key, label in (
                        ("superuser", "Superuser"),
                        ("createrole", "Create role"),
                        ("createdb", "Create DB"),
                    )
                    if a.get(key)
                ]
                if not a.get("inherit", True):
                    words.append("No inheritance")
                if not a.get("login", True):
                    words.append("Cannot login")
                words += [
                    label for key, label in (("replication", "Replication"), ("bypassrls", "Bypass RLS")) if a.get(key)
                ]
                limit = a.get("connection_limit", -1)
                if limit >= 0:
                    words.append(f"{limit} connection{'s' if limit != 1 else ''}")
                if a.get("valid_until"):
                    words.append(f"Password valid until {a['valid_until']}")
                rows.append([r, ", ".join(words), "{}"])
                self.ctx.saw(f"db/{sess.host}/role/{r}")
            self.print_rows(["Role name", "Attributes", "Member of"], rows, "List of roles", footer=False)
            return True
        if cmd == "\\password":
            # Without a terminal psql's prompts read stdin; the new password is sent pre-encrypted.
            target = args[0] if args else sess.user
            first, _, rest = self.ctx.call.read_stdin(prompt=f'Enter new password for user "{target}": ').partition(
                "\n"
            )
            second = rest.partition("\n")[0]
            if first != second:
                self.ctx.err("Passwords didn't match.")
                return False
            stmt = {"kind": "alter_role", "name": target, "options": {"password": _verifier(sess.host, target, first)}}
            return self.run_one(sess, stmt, f"ALTER USER {target} PASSWORD '...'", quiet=True)
        if cmd in ("\\c", "\\connect"):
            if not args:
                self.ctx.out(f'You are now connected to database "{sess.db}" as user "{sess.user}".')
                return True
            db = args[0]
            if db not in sess.server["databases"]:
                self.ctx.err(
                    f'connection to server at "{sess.host}" ({sess.server["address"]}), port {sess.server["port"]} failed: FATAL:  database "{db}" does not exist\nPrevious connection kept'
                )
                return False
            sess.db = db
            if len(args) > 1:
                sess.user = args[1]
            self.ctx.saw(f"db/{sess.host}/{db}")
            self.ctx.out(f'You are now connected to database "{db}" as user "{sess.user}".')
            return True
        if cmd == "\\conninfo":
            self.ctx.out(
                f'You are connected to database "{sess.db}" as user "{sess.user}" on host "{sess.host}" (address "{sess.server["address"]}") at port "{sess.server["port"]}".'
            )
            return True
        if cmd == "\\x":
            self.expanded = not self.expanded if not args else args[0] in ("on", "auto")
            self.ctx.out(f"Expanded display is {'on' if self.expanded else 'off'}.")
            return True
        if cmd == "\\echo":
            self.ctx.out(" ".join(args))
            return True
        if cmd in ("\\timing", "\\pset", "\\set", "\\unset", "\\encoding", "\\pager"):
            if cmd == "\\set" and len(args) >= 2 and args[0] == "ON_ERROR_STOP":
                self.stop = args[1].lower() in ("1", "on", "true")
            return True
        self.ctx.err(f"invalid command {cmd}\nTry \\? for help.")
        return False


def _conninfo(text: str) -> dict[str, str]:
    if text.startswith(("postgresql://", "postgres://")):
        m = re.match(r"^postgres(?:ql)?://(?:([^:@/]+)(?::[^@/]*)?@)?([^:/?]*)(?::(\d+))?(?:/([^?]*))?", text)
        if not m:
            return {}
        out = {"user": m.group(1), "host": m.group(2), "port": m.group(3), "dbname": m.group(4)}
        return {k: v for k, v in out.items() if v}
    return dict(item.split("=", 1) for item in text.split() if "=" in item)


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    try:
        p = parse_gnu(call.argv, OPTS)
    except ArgError as e:
        flag = e.flag if e.kind != "unknown_short" else "-" + e.flag
        msg = {
            "unknown": f"psql: error: unrecognized option '{e.flag}'",
            "unknown_short": f"psql: error: invalid option -- '{e.flag}'",
            "needs_value": f"psql: error: option requires an argument -- '{e.flag.lstrip('-')}'",
        }.get(e.kind, f"psql: error: invalid argument for {flag}")
        return ctx.finish(ctx.fail(1, msg + '\npsql: hint: Try "psql --help" for more information.'))
    client = _Client(ctx, p)
    try:
        code = client.run()
    except ToolExit as exc:
        return ctx.finish(exc)
    return ctx.result(code)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"psql": run}
