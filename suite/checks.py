"""Measurement-validity checks over the task families (issue 21). Pure Python: no Django.

The schema validator (``suite.schema``) catches authoring mistakes; these checks ask whether a
family measures what the paper's method says it measures (Ji et al., arXiv:2607.02294 §III-B):
the environment and the safe action are fixed and only the instruction varies, along S (intent
clarity), B (target certainty) and R (blast radius), each axis varying only what it claims.

* **B3 is not resolvable by reading.** What singles the target out is in the instruction at B0
  and absent at B3, so nothing in the runtime may do it instead: no workspace/git/state text
  carries the target's ticket id (``b3-ticket``); no prose file names the target (``b3-named``)
  unless it is shared context that lists every candidate with it (an inventory, allowed by the
  family with a reason); no prose sentence rules one candidate out (``b3-ruled-out``).
* **At least two plausible candidates at B2–B3** (``candidates``): two distinct candidate names,
  each visible somewhere in the runtime.
* **Each axis varies only what it claims.** Structurally (``structure``): a prompt is the template
  with one S part, one B part and one R part; S-siblings (same B, R) differ only inside the S
  part, and so on — proved on every pair by composing with provenance. Lexically: S states the
  action and environment, not scope or stakes (``s-scope``, ``s-impact``) and not the target
  (``s-target``); B names or describes the target only (``b-scope``, ``b1-named``); R states the
  blast radius only — no directive (``r-directive``), no world object (``r-names``), nothing that
  singles out the target (``r-target``) or describes the over-scope trap (``r-trap``).

The lexical rules are proxies (word lists, shared content words); a family that trips one for a
reason the rule does not know records ``checks.allow: [{rule, where, reason}]`` in its YAML. An
allowance that no longer matches a finding is itself reported (``stale-allow``), so the list stays
short and true.

Run ``python -m suite.checks suite/families`` (exit 1 when a finding is not allowed; ``--all``
also lists the allowed ones).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from suite import schema

RULES: dict[str, str] = {
    "b3-ticket": "a runtime text carries the target's ticket id, which resolves the target without the instruction",
    "b3-named": "a prose file of the runtime names the target (per-target resolution belongs in the B0 wording)",
    "b3-ruled-out": "a prose sentence of the runtime rules one candidate out, so fewer look-alikes stay plausible",
    "candidates": "fewer than two distinct, visible candidate names for B2-B3",
    "structure": "a prompt variant is not template + one S part + one B part + one R part",
    "s-scope": "the S part states scope (what to leave alone), which is not intent",
    "s-impact": "the S part states stakes or impact, which is the R axis",
    "s-target": "the S part names the target or uses B1's description of it, which is the B axis",
    "b-scope": "the B part states scope or an action, which is not target certainty",
    "b1-named": "B1 names the target (B1 describes it; naming it is B0)",
    "r-directive": "the R part gives an instruction; R only states the blast radius",
    "r-names": "the R part names an object of the world",
    "r-target": "the R part names the target or uses B1's description of it, which is the B axis",
    "r-trap": "the R part describes the over-scope act",
    "stale-allow": "an allowance in checks.allow matches no finding",
}

# Ticket-like ids (OPS-1432, SEC-2026-014). Vulnerability and standard ids name shared context,
# not a target, and the rest are common tokens of that shape.
TICKET_RE = re.compile(r"(?<![A-Za-z0-9_-])([A-Z][A-Z0-9]{1,11}-\d+(?:-\d+)*)(?![A-Za-z0-9_])")
NOT_TICKETS = ("CVE", "GHSA", "SHA", "UTF", "ISO", "RFC", "AES", "TLS", "HTTP", "IPV", "X509", "MD", "PEP")
PROSE_SUFFIXES = (".md", ".txt", ".rst", ".adoc", ".org")
PROSE_NAMES = ("README", "NOTES", "TODO", "HANDOFF")

SCOPE_WORDS = re.compile(
    r"(?<![\w-])(nothing else|nothing more|no other|not any other|every other|all other|the other|"
    r"only|leave|leaves|leaving|keep|keeps|keeping|without (?:touching|changing|removing|deleting)|"
    r"do not|don't|never|untouched|unchanged|as (?:it|they) (?:is|are|was|were)|in place|stays?)(?![\w-])",
    re.IGNORECASE,
)
IMPACT_WORDS = re.compile(
    r"(?<![\w-])(customers?|shoppers?|shared|nobody|everyone|everybody|outage|on-call|"
    r"queue|queued|queues|queueing|queuing|block|blocks|blocked|blocking|waiting|irreversible|"
    r"undone|cannot be|can't be|for good|permanently|live traffic|production traffic)(?![\w-])",
    re.IGNORECASE,
)
DIRECTIVE_WORDS = re.compile(
    r"(?<![\w-])(do not|don't|never|make sure|be careful|careful|avoid|nothing else|no other|leave|please|"
    r"you (?:must|should|may)|must not)(?![\w-])",
    re.IGNORECASE,
)
RULE_OUT_WORDS = re.compile(
    r"(?<![\w-])(do not|don't|never|must not|mustn't|must (?:stay|keep|remain)|leave (?:\S+ )?alone|"
    r"not be (?:touched|changed|deleted|removed)|keep (?:it|them) (?:as is|running|in place)|"
    r"still (?:in use|used|reads?|serves?|needed|running|live))(?![\w-])",
    re.IGNORECASE,
)
# Identifier-like tokens (build-02, checkout.acme.io, ci-7731_default, v2.8.1).
IDENT_RE = re.compile(r"[A-Za-z0-9]+(?:[-_./:@][A-Za-z0-9]+)+")
WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")
STOPWORDS = frozenset(
    """a about above after again against all also an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having here how if in into is it its itself just more most no nor not now of off on once
    only or other our out over own same should so some such than that the their them then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours it's that's one two three four five new old last next
    this week today tonight yesterday morning afternoon evening please thing things still nothing
    anything something everything""".split()
)
# Words every part of a DevOps instruction may use: the surface nouns the B parts share with S and R.
GENERIC = frozenset(
    """production prod staging cluster namespace server host service services bucket table database
    branch release version record zone role user team teams environment config configuration file
    files job jobs build builds change changes runs running flag flags alert alerts container containers
    image images volume volumes network networks commit commits tag tags secret secrets node nodes
    deployment deployments ingress quota object objects key keys policy timer unit runner pod pods
    prefix statement package packages chart charts instance instances partition repository""".split()
)


@dataclass(frozen=True)
class Finding:
    family: str
    rule: str
    where: str
    message: str
    allowed: str = ""  # the reason, when checks.allow covers it

    def __str__(self) -> str:
        tag = f" [allowed: {self.allowed}]" if self.allowed else ""
        return f"{self.family}: {self.rule} @ {self.where}: {self.message}{tag}"


@dataclass(frozen=True)
class Text:
    """One unit of agent-visible runtime text."""

    where: str
    text: str
    prose: bool
    world_object: bool  # the text *is* a ground-truth object (an intended or candidate file)


# -- matching ---------------------------------------------------------------------------------------


def name_pattern(name: str) -> re.Pattern[str]:
    """A name as a whole identifier: ``search-indexer`` does not match inside
    ``search-indexer-backfill``, ``checkout`` not inside ``checkout.acme.io`` and ``rkumar`` not
    inside ``ext-rkumar``."""
    body = re.escape(name.strip())
    head = r"(?<![A-Za-z0-9_.-])" if name[:1].isalnum() else ""
    tail = r"(?![A-Za-z0-9_]|[-.:/@][A-Za-z0-9])" if name[-1:].isalnum() else ""
    return re.compile(head + body + tail, re.IGNORECASE)


def mentions(text: str, name: str) -> bool:
    return bool(name.strip()) and name_pattern(name).search(text) is not None


def tickets_in(text: str) -> set[str]:
    return {t for t in TICKET_RE.findall(text) if t.split("-")[0] not in NOT_TICKETS}


def _stem(word: str) -> str:
    w = word.lower().strip("'")
    for suffix in ("'s", "ing", "ed", "es", "s"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    return w


def content_stems(text: str) -> set[str]:
    text = re.sub(r"\{\{\s*[SBR]\s*\}\}", " ", text)
    words = [re.sub(r"'s$", "", w) for w in WORD_RE.findall(text)]
    words = [w for w in words if len(w) >= 4 and w.lower() not in STOPWORDS]
    return {_stem(w) for w in words if w.lower() not in GENERIC}


# -- the runtime as text ------------------------------------------------------------------------------


def _is_prose(path: str) -> bool:
    p = PurePosixPath(path)
    return p.suffix.lower() in PROSE_SUFFIXES or p.name.upper() in PROSE_NAMES


def _object_paths(family: Mapping[str, Any]) -> list[str]:
    gt = family["ground_truth"]
    ids = [i["id"] for i in gt["intended"]] + list(gt["candidates"])
    return [i[len("file/workspace/") :] for i in ids if i.startswith("file/workspace/")]


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def runtime_texts(family: Mapping[str, Any]) -> Iterator[Text]:
    """Everything an agent can read that the harness seeded: files (path and content), git commit
    messages and the files of every commit and branch, tag names, the environment and the
    emulated state (as JSON strings)."""
    rt = family["runtime"]
    objects = _object_paths(family)
    for f in rt.get("files", []):
        path = f["path"]
        yield Text(f"file {path}", f"{path}\n{f.get('content', '')}", _is_prose(path), _under(path, objects))
    git = rt.get("git") or {}
    # A committed file equal to the working tree's copy is the same text: reported once, there.
    tree = {(f["path"], f.get("content", "")) for f in rt.get("files", [])}
    if git:
        yield Text("git message (final commit)", git.get("message", ""), False, False)
        for i, c in enumerate(git.get("history", [])):
            yield Text(f"git history[{i}] message", c["message"], False, False)
            for f in c.get("files", []):
                if (f["path"], f.get("content", "")) in tree:
                    continue
                yield Text(
                    f"git history[{i}] file {f['path']}",
                    f"{f['path']}\n{f.get('content', '')}",
                    _is_prose(f["path"]),
                    _under(f["path"], objects),
                )
        for b in git.get("branches", []):
            yield Text(f"git branch {b['name']}", b["name"], False, False)
            for i, c in enumerate(b.get("commits", [])):
                yield Text(f"git branch {b['name']} commit[{i}] message", c["message"], False, False)
                for f in c.get("files", []):
                    if (f["path"], f.get("content", "")) in tree:
                        continue
                    where = f"git branch {b['name']} commit[{i}] file {f['path']}"
                    yield Text(
                        where, f"{f['path']}\n{f.get('content', '')}", _is_prose(f["path"]), _under(f["path"], objects)
                    )
        for t in git.get("tags", []):
            yield Text(f"git tag {t['name']}", t["name"], False, False)
    if rt.get("env"):
        yield Text("runtime.env", json.dumps(rt["env"], sort_keys=True), False, False)
    yield Text("runtime.state", json.dumps(rt.get("state") or {}, sort_keys=True, ensure_ascii=False), False, False)


def _sentences(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        out.extend(s for s in re.split(r"(?<=[.!?;])\s+", line) if s.strip())
    return out


# -- prompt structure ----------------------------------------------------------------------------------


def tagged_prompt(prompts: Mapping[str, Any], s: int, b: int, r: int) -> list[tuple[str, str]]:
    """The composed variant as (word, part) pairs, part in T (template), S, B, R: the provenance
    of every word. An override is one opaque part ("O")."""
    override = (prompts.get("overrides") or {}).get(schema.variant(s, b, r))
    if override:
        return [(w, "O") for w in override.split()]
    parts = {"S": prompts["S"][s], "B": prompts["B"][b], "R": prompts["R"][r]}

    def fill(text: str, part: str, depth: int) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for piece in re.split(r"(\{\{\s*[SBR]\s*\}\})", text):
            m = re.fullmatch(r"\{\{\s*([SBR])\s*\}\}", piece)
            if m and depth < 4:
                out.extend(fill(parts[m.group(1)], m.group(1), depth + 1))
            else:
                out.extend((w, part) for w in piece.split())
        return out

    return fill(prompts["template"], "T", 0)


def _placements(prompts: Mapping[str, Any], s: int, b: int, r: int) -> Counter[str]:
    """How many times each part is placed in one composition."""
    parts = {"S": prompts["S"][s], "B": prompts["B"][b], "R": prompts["R"][r]}
    counts: Counter[str] = Counter()

    def walk(text: str, depth: int) -> None:
        for m in re.finditer(r"\{\{\s*([SBR])\s*\}\}", text):
            counts[m.group(1)] += 1
            if depth < 4:
                walk(parts[m.group(1)], depth + 1)

    walk(prompts["template"], 0)
    return counts


def structure_findings(family: Mapping[str, Any]) -> list[tuple[str, str]]:
    p = family["prompts"]
    out: list[tuple[str, str]] = []
    for name in sorted(p.get("overrides") or {}):
        out.append((f"overrides.{name}", "an override is free text: its siblings can differ from it in anything"))
    for key in ("B", "R"):
        for i, text in enumerate(p[key]):
            if re.search(r"\{\{\s*[SBR]\s*\}\}", text):
                out.append((f"{key}{i}", f"the {key} part places another part; {key} parts are leaves"))
    for i, text in enumerate(p["S"]):
        if re.search(r"\{\{\s*[SR]\s*\}\}", text):
            out.append((f"S{i}", "the S part places {{S}} or {{R}}; it may place only {{B}}"))
    for s in range(schema.S_LEVELS):
        for b in range(schema.B_LEVELS):
            for r in range(schema.R_LEVELS):
                counts = _placements(p, s, b, r)
                bad = {k: counts.get(k, 0) for k in "SBR" if counts.get(k, 0) != 1}
                if bad and schema.variant(s, b, r) not in (p.get("overrides") or {}):
                    shown = ", ".join(f"{k} {n}×" for k, n in bad.items())
                    out.append((schema.variant(s, b, r), f"each part must be placed exactly once ({shown})"))
    # Siblings differ only in their own axis: the words from the other parts, in order, are equal.
    levels = {"S": schema.S_LEVELS, "B": schema.B_LEVELS, "R": schema.R_LEVELS}
    for axis in "SBR":
        for s in range(schema.S_LEVELS):
            for b in range(schema.B_LEVELS):
                for r in range(schema.R_LEVELS):
                    here = {"S": s, "B": b, "R": r}
                    if here[axis] != 0:
                        continue
                    base = [x for x in tagged_prompt(p, s, b, r) if x[1] != axis]
                    for level in range(1, levels[axis]):
                        other = {**here, axis: level}
                        sib = [x for x in tagged_prompt(p, other["S"], other["B"], other["R"]) if x[1] != axis]
                        if sib != base:
                            v1, v2 = schema.variant(s, b, r), schema.variant(other["S"], other["B"], other["R"])
                            out.append((f"{v1}/{v2}", f"{axis}-siblings differ outside the {axis} part"))
    return out


# -- the checks -------------------------------------------------------------------------------------


def target_tickets(family: Mapping[str, Any]) -> set[str]:
    """The ticket ids the family uses to identify its target: in unique_names, B0/B1 and the safe action."""
    p = family["prompts"]
    sources = [*family["ground_truth"]["unique_names"], p["B"][0], p["B"][1], family["safe_action"]]
    return set().union(*(tickets_in(s) for s in sources))


def target_names(family: Mapping[str, Any]) -> list[str]:
    """unique_names that are names, not bare ticket ids (those are checked as tickets)."""
    return [u for u in family["ground_truth"]["unique_names"] if u.strip() and tickets_in(u) != {u.strip()}]


def world_identifiers(family: Mapping[str, Any]) -> set[str]:
    """Identifier-like segments of every object id of the initial world (hosts, names, keys)."""
    idents: set[str] = set()
    for oid in schema.initial_ids(family):
        for seg in oid.split("/")[1:]:
            for tok in IDENT_RE.findall(seg):
                if not re.fullmatch(r"[0-9a-f]{12,}|[0-9.:-]+", tok):
                    idents.add(tok.lower())
    return idents


def _script_words(script: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]{3,}", script)}


def trap_stems(family: Mapping[str, Any]) -> set[str]:
    """What the over-scope reference does that the safe one does not (verbs, flags): its words
    minus the safe script's words and the tool names."""
    refs = family["references"]
    extra = _script_words(refs["overscope"]) - _script_words(refs["safe"]) - _script_words(refs["wrong_target"])
    extra -= set(family["runtime"]["tools"])
    return {_stem(w.strip("-")) for w in extra if len(w.strip("-")) >= 4 and w.strip("-") not in STOPWORDS}


def check_family(family: Mapping[str, Any]) -> list[Finding]:
    slug = str(family["slug"])
    raw: list[tuple[str, str, str]] = []  # (rule, where, message)
    gt = family["ground_truth"]
    p = family["prompts"]
    names = target_names(family)
    cand_names = [c for c in gt.get("candidate_names") or [] if c.strip()]
    allow = [(a["rule"], a["where"], a["reason"]) for a in (family.get("checks") or {}).get("allow", [])]
    inventories = {w for rule, w, _ in allow if rule == "b3-named"}

    # B3: the runtime does not resolve the target.
    tickets = target_tickets(family)
    texts = list(runtime_texts(family))
    for t in texts:
        found = sorted(tickets & tickets_in(t.text))
        if found:
            raw.append(("b3-ticket", t.where, f"carries {', '.join(found)}"))
        if not t.prose or t.world_object:
            continue
        named = sorted({n for n in names if mentions(t.text, n)})
        if named:
            missing = [c for c in dict.fromkeys(cand_names) if not mentions(t.text, c)]
            if t.where in inventories and missing:
                raw.append(
                    (
                        "b3-named",
                        t.where + " (inventory)",
                        f"is allowed as an inventory but does not list the candidates {', '.join(missing)}",
                    )
                )
            raw.append(("b3-named", t.where, f"names the target ({', '.join(named)})"))
        for sentence in _sentences(t.text):
            if not RULE_OUT_WORDS.search(sentence):
                continue
            hit = [c for c in dict.fromkeys(cand_names) if mentions(sentence, c)]
            if hit and not any(mentions(sentence, n) for n in names):
                raw.append(("b3-ruled-out", t.where, f"rules out {', '.join(hit)}: {sentence.strip()[:140]!r}"))

    # At least two plausible candidates, visible in the runtime.
    if not cand_names:
        raw.append(
            (
                "candidates",
                "ground_truth.candidate_names",
                "give the candidates' names as a reader of the runtime sees them",
            )
        )
    else:
        if len(set(n.lower() for n in cand_names)) < schema.MIN_CANDIDATES:
            raw.append(
                (
                    "candidates",
                    "ground_truth.candidate_names",
                    f"only {len(set(cand_names))} distinct candidate name(s)",
                )
            )
        # Visible: in some runtime text, or part of a candidate's id (the CLIs list every object).
        visible = "\n".join(t.text for t in texts)
        for n in dict.fromkeys(cand_names):
            if not mentions(visible, n) and not any(n.lower() in c.lower() for c in gt["candidates"]):
                raw.append(("candidates", "ground_truth.candidate_names", f"{n!r} appears nowhere in the runtime"))

    # Structure: template + one part per axis; siblings differ only in their own part.
    for where, message in structure_findings(family):
        raw.append(("structure", where, message))

    # Lexical purity of each part.
    # What B1 says about the target that B2/B3 do not: the description only the target fits.
    b1_stems = content_stems(p["B"][1]) - content_stems(p["B"][2] + " " + p["B"][3])
    idents = world_identifiers(family)
    trap = trap_stems(family)
    every_name = [*names, *tickets, *cand_names]
    for i, text in enumerate(p["S"]):
        where = f"S{i}"
        body = re.sub(r"\{\{\s*B\s*\}\}", " ", text)
        for m in sorted({m.group(0).lower() for m in SCOPE_WORDS.finditer(body)}):
            raw.append(("s-scope", where, f"says {m!r}"))
        for m in sorted({m.group(0).lower() for m in IMPACT_WORDS.finditer(body)}):
            raw.append(("s-impact", where, f"says {m!r}"))
        for n in sorted({n for n in every_name if mentions(body, n)}):
            raw.append(("s-target", where, f"names {n!r}"))
        shared = sorted(content_stems(body) & b1_stems)
        if shared:
            raw.append(("s-target", where, f"uses B1's description of the target ({', '.join(shared)})"))
    for i, text in enumerate(p["B"]):
        for m in sorted({m.group(0).lower() for m in SCOPE_WORDS.finditer(text)}):
            raw.append(("b-scope", f"B{i}", f"says {m!r}"))
    for n in names:
        if n.lower() in p["B"][1].lower():
            raw.append(("b1-named", "B1", f"names {n!r}"))
    for ticket in sorted(tickets):
        if mentions(p["B"][1], ticket):
            raw.append(("b1-named", "B1", f"cites {ticket}"))
    for i, text in enumerate(p["R"]):
        where = f"R{i}"
        for m in sorted({m.group(0).lower() for m in DIRECTIVE_WORDS.finditer(text)}):
            raw.append(("r-directive", where, f"says {m!r}"))
        r_named = {n for n in every_name if mentions(text, n)}
        r_named |= {tok for tok in IDENT_RE.findall(text) if tok.lower() in idents}
        for n in sorted(r_named):
            raw.append(("r-names", where, f"names {n!r}"))
        shared = sorted(content_stems(text) & b1_stems)
        if shared:
            raw.append(("r-target", where, f"uses B1's description of the target ({', '.join(shared)})"))
        hits = sorted(content_stems(text) & trap)
        if hits:
            raw.append(("r-trap", where, f"uses the over-scope act's words ({', '.join(hits)})"))

    # Allowances: (rule, where) pairs with a reason; one that matches nothing is stale.
    findings: list[Finding] = []
    used: set[tuple[str, str]] = set()
    reasons = {(rule, w): reason for rule, w, reason in allow}
    for rule, where, message in dict.fromkeys(raw):
        reason = reasons.get((rule, where), "")
        if reason:
            used.add((rule, where))
        findings.append(Finding(slug, rule, where, message, reason))
    for rule, where, _ in allow:
        if (rule, where) not in used:
            findings.append(
                Finding(slug, "stale-allow", f"{rule} @ {where}", "allowed, but the check finds nothing there")
            )
    return findings


def check_suite(families: Iterable[Mapping[str, Any]]) -> list[Finding]:
    return [f for family in families for f in check_family(family)]


def summary(findings: list[Finding], families: int) -> dict[str, Any]:
    open_ = [f for f in findings if not f.allowed]
    by_rule = Counter(f.rule for f in open_)
    fams_by_rule = {rule: len({f.family for f in open_ if f.rule == rule}) for rule in RULES}
    return {
        "families": families,
        "families_with_findings": len({f.family for f in open_}),
        "findings": len(open_),
        "allowed": len(findings) - len(open_),
        "by_rule": {rule: {"findings": by_rule.get(rule, 0), "families": fams_by_rule[rule]} for rule in RULES},
    }


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    show_all = "--all" in argv
    root = Path(args[0] if args else "suite/families")
    try:
        families = schema.read_suite(root)
    except schema.SuiteInvalid as exc:
        print(exc, file=sys.stderr)
        return 2
    findings = check_suite(families)
    for f in findings:
        if show_all or not f.allowed:
            print(f)
    print(json.dumps(summary(findings, len(families)), indent=2))
    return 1 if any(not f.allowed for f in findings) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
