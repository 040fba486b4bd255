"""``kubectl`` over an emulated set of clusters (state section ``kubernetes``).

Modelled on kubectl v1.29: cobra flag parsing, the ``Error from server (NotFound): ...`` and
``error: ...`` messages, exit code 1 for every failure, ``--dry-run=none|client|server`` (bare
``--dry-run`` is the deprecated spelling of ``client``), and the printers of ``get`` (tables,
``-o wide|yaml|json|name|jsonpath=...|custom-columns=...``).

Controllers are emulated the way they behave, not by magic: after every change a reconcile step
makes the pods of each Deployment, StatefulSet and DaemonSet match its spec (names with the
pod-template hash, nodes chosen among schedulable ones), so ``delete pod`` yields a replacement,
``rollout restart`` replaces every pod, ``drain`` evicts and reschedules, and deleting a namespace
deletes everything in it.

Authored state (``runtime.state.kubernetes``)::

    current_context: prod-eu
    contexts: {prod-eu: {cluster: prod-eu, namespace: shop, user: ops}}
    clusters:
      prod-eu:
        server: https://prod-eu.k8s.example.internal:6443   # optional
        objects:                                             # ordinary manifests
          - {kind: Namespace, metadata: {name: shop}}
          - kind: Deployment
            metadata: {name: checkout, namespace: shop}
            spec: {replicas: 3, template: {spec: {containers: [{name: app, image: "shop/checkout:2.4.1"}]}}}
            emulator:          # harness-only, never printed: pod statuses, names, logs
              pods: [{name: checkout-5d8f9c7b6d-x2k9p, status: CrashLoopBackOff, restarts: 14}]
              logs: "panic: connection refused\\n"

Object ids: ``k8s/<cluster>/<kind>/<namespace>/<name>`` (``k8s/<cluster>/<kind>/<name>`` for
cluster-scoped kinds); kind is the lower-case singular (``deployment``, ``pod``, ``namespace``).
"""

from __future__ import annotations

import base64
import copy
import difflib
import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from suite.emulators.base import (
    MAX_FILE,
    NO_DEBUG,
    NO_TRANSPORT,
    NO_WAIT,
    ArgError,
    Call,
    Ctx,
    Opt,
    Parsed,
    Result,
    ToolExit,
    deep_merge,
    go_duration,
    human_age,
    iso,
    log_stamp,
    opt,
    parse_gnu,
    parse_time,
    short_hash,
    table,
    to_yaml,
    uuid_like,
)
from suite.emulators.documents import DocumentError, load_yaml, load_yaml_all

SECTION = "kubernetes"
CLIENT_VERSION = "v1.29.4"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_AGE = timedelta(days=41, hours=3)
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


class Kind:
    def __init__(
        self, kind: str, plural: str, short: Sequence[str], namespaced: bool, api: str, columns: str = "generic"
    ) -> None:
        self.kind = kind
        self.plural = plural
        self.singular = kind.lower()
        self.short = tuple(short)
        self.namespaced = namespaced
        self.api = api
        self.group = api.split("/")[0] if "/" in api else ""
        self.columns = columns

    @property
    def qualified(self) -> str:
        """``deployments.apps``: how kubectl names the resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def ref(self) -> str:
        """``deployment.apps``: the prefix of ``-o name`` and of action messages."""
        return f"{self.singular}.{self.group}" if self.group else self.singular


KINDS = [
    Kind("Namespace", "namespaces", ["ns"], False, "v1", "namespace"),
    Kind("Node", "nodes", ["no"], False, "v1", "node"),
    Kind("PersistentVolume", "persistentvolumes", ["pv"], False, "v1"),
    Kind("Pod", "pods", ["po"], True, "v1", "pod"),
    Kind("Service", "services", ["svc"], True, "v1", "service"),
    Kind("ConfigMap", "configmaps", ["cm"], True, "v1", "configmap"),
    Kind("Secret", "secrets", [], True, "v1", "secret"),
    Kind("ServiceAccount", "serviceaccounts", ["sa"], True, "v1", "serviceaccount"),
    Kind("PersistentVolumeClaim", "persistentvolumeclaims", ["pvc"], True, "v1", "pvc"),
    Kind("ResourceQuota", "resourcequotas", ["quota"], True, "v1", "quota"),
    Kind("Deployment", "deployments", ["deploy"], True, "apps/v1", "deployment"),
    Kind("ReplicaSet", "replicasets", ["rs"], True, "apps/v1", "replicaset"),
    Kind("StatefulSet", "statefulsets", ["sts"], True, "apps/v1", "statefulset"),
    Kind("DaemonSet", "daemonsets", ["ds"], True, "apps/v1", "daemonset"),
    Kind("Job", "jobs", [], True, "batch/v1", "job"),
    Kind("CronJob", "cronjobs", ["cj"], True, "batch/v1", "cronjob"),
    Kind("Ingress", "ingresses", ["ing"], True, "networking.k8s.io/v1", "ingress"),
    Kind("NetworkPolicy", "networkpolicies", ["netpol"], True, "networking.k8s.io/v1"),
    Kind("HorizontalPodAutoscaler", "horizontalpodautoscalers", ["hpa"], True, "autoscaling/v2", "hpa"),
    Kind("PodDisruptionBudget", "poddisruptionbudgets", ["pdb"], True, "policy/v1", "pdb"),
    # Every cluster serves events; `kubectl get events` is among the first things agents run.
    Kind("Event", "events", ["ev"], True, "v1", "event"),
]
BY_KIND = {k.kind: k for k in KINDS}
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
# `kubectl get all` lists these, in this order.
ALL_KINDS = (
    "Pod",
    "Service",
    "DaemonSet",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "CronJob",
    "Job",
)


# The fields the API server lets a field selector use, beyond metadata.name and
# metadata.namespace (kubernetes.io/docs/concepts/overview/working-with-objects/field-selectors/,
# "List of supported fields"). These kinds register their own field-label conversion, so an
# unknown field is "field label not supported: X"; every other kind answers with the generic
# "is not a known field selector" message.
FIELD_SELECTORS: dict[str, tuple[str, ...]] = {
    "Pod": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ),
    "Node": ("spec.unschedulable",),
    "Secret": ("type",),
    "Namespace": ("status.phase",),
    "ReplicaSet": ("status.replicas",),
    "Job": ("status.successful",),
    "Event": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
}
# Defaults the API server fills into a pod spec, which field selectors see.
POD_FIELD_DEFAULTS = {
    "spec.restartPolicy": "Always",
    "spec.schedulerName": "default-scheduler",
    "spec.serviceAccountName": "default",
    "spec.hostNetwork": False,
}


def lookup_kind(name: str) -> Kind | None:
    """Resolve ``deploy``, ``deployments``, ``Deployment``, ``deployments.apps``, ``deployment.apps/v1``."""
    base, _, group = name.partition(".")
    group = group.split("/")[0]
    low = base.lower()
    for k in KINDS:
        if low in (k.plural, k.singular, *k.short) or base == k.kind:
            if group and group != k.group and not (group == "v1" and not k.group):
                continue
            return k
    return None


# ---------------------------------------------------------------------------------------------
# State: preparation, lookups, reconcile, objects


def prepare(section: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Fill in what the API server adds (uids, timestamps, system namespaces, pods); idempotent."""
    section.setdefault("contexts", {})
    for cname, cluster in section.setdefault("clusters", {}).items():
        cluster.setdefault("server", f"https://{cname}.k8s.example.internal:6443")
        cluster.setdefault("version", CLIENT_VERSION)
        cluster.setdefault("rv", 1000)
        objs = cluster.setdefault("objects", [])
        born = iso(now - DEFAULT_AGE)
        names = {o["metadata"]["name"] for o in objs if o.get("kind") == "Namespace"}
        wanted = list(SYSTEM_NAMESPACES) + sorted(
            {o["metadata"].get("namespace", "default") for o in objs if _kind_of(o).namespaced}
        )
        for ns in wanted:
            if ns not in names:
                objs.append({"kind": "Namespace", "metadata": {"name": ns}})
                names.add(ns)
        for o in objs:
            k = _kind_of(o)
            o.setdefault("apiVersion", k.api)
            meta = o.setdefault("metadata", {})
            if k.namespaced:
                meta.setdefault("namespace", "default")
            meta.setdefault("creationTimestamp", born)
            meta.setdefault("uid", uuid_like(cname, k.kind, meta.get("namespace", ""), meta["name"], "initial"))
            if "resourceVersion" not in meta:
                cluster["rv"] += 1
                meta["resourceVersion"] = str(cluster["rv"])
            if k.kind in WORKLOADS:
                o.setdefault("spec", {})
                if k.kind != "DaemonSet":
                    o["spec"].setdefault("replicas", 1)
                meta.setdefault("generation", 1)
                _default_template(o)
                em = o.setdefault("emulator", {})
                if k.kind == "Deployment":
                    em.setdefault("revisions", [copy.deepcopy(o["spec"]["template"])])
            if k.kind == "Node":
                o.setdefault("spec", {})
        if not cluster.get("prepared"):
            cluster["pod_seq"] = 0
            _reconcile(cluster, cname, now, initial=True)
            cluster["prepared"] = True
    if not section.get("current_context") and section["contexts"]:
        section["current_context"] = sorted(section["contexts"])[0]
    return section


def _default_template(o: dict[str, Any]) -> None:
    spec = o["spec"]
    name = o["metadata"]["name"]
    tpl = spec.setdefault("template", {})
    tmeta = tpl.setdefault("metadata", {})
    labels = tmeta.setdefault("labels", {"app": name})
    spec.setdefault("selector", {"matchLabels": dict(labels)})
    tspec = tpl.setdefault("spec", {})
    tspec.setdefault("containers", [{"name": name, "image": f"{name}:latest"}])


def _kind_of(o: dict[str, Any]) -> Kind:
    k = BY_KIND.get(str(o.get("kind")))
    if k is None:
        raise ValueError(f"unsupported kind {o.get('kind')!r}")
    return k


def state_problems(section: Any) -> list[str]:
    """What is wrong with an authored ``kubernetes`` section (for the family validator)."""
    problems: list[str] = []
    if not isinstance(section, dict):
        return ["kubernetes: expected a mapping"]
    for key in section:
        if key not in ("current_context", "contexts", "clusters"):
            problems.append(f"kubernetes.{key}: unknown key (current_context, contexts, clusters)")
    clusters = section.get("clusters")
    if not isinstance(clusters, dict) or not clusters:
        return [*problems, "kubernetes.clusters: give at least one cluster"]
    contexts = section.get("contexts") or {}
    if not isinstance(contexts, dict) or not contexts:
        problems.append("kubernetes.contexts: give at least one context")
        contexts = {}
    for name, ctx in contexts.items():
        if not isinstance(ctx, dict) or ctx.get("cluster") not in clusters:
            problems.append(f"kubernetes.contexts.{name}: cluster must be one of {sorted(clusters)}")
    if section.get("current_context") and section["current_context"] not in contexts:
        problems.append("kubernetes.current_context: not one of the contexts")
    for cname, cluster in clusters.items():
        if not isinstance(cluster, dict):
            problems.append(f"kubernetes.clusters.{cname}: expected a mapping")
            continue
        seen: set[tuple[str, str, str]] = set()
        for i, o in enumerate(cluster.get("objects") or []):
            where = f"kubernetes.clusters.{cname}.objects[{i}]"
            if not isinstance(o, dict) or not isinstance(o.get("metadata"), dict):
                problems.append(f"{where}: an object needs kind and metadata.name")
                continue
            k = BY_KIND.get(str(o.get("kind")))
            if k is None:
                problems.append(f"{where}.kind: {o.get('kind')!r} is not emulated; one of {sorted(BY_KIND)}")
                continue
            if k.kind in ("ReplicaSet",) or (k.kind == "Pod" and o.get("metadata", {}).get("ownerReferences")):
                problems.append(
                    f"{where}: {k.kind}s owned by controllers are made by the emulator; author the workload"
                )
            name = o["metadata"].get("name")
            if not isinstance(name, str) or not re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", name):
                problems.append(f"{where}.metadata.name: {name!r} is not a DNS-1123 name")
                continue
            key = (k.kind, o["metadata"].get("namespace", "default") if k.namespaced else "", name)
            if key in seen:
                problems.append(f"{where}: {k.kind} {name!r} is declared twice")
            seen.add(key)
            for extra in o:
                allowed: tuple[str, ...] = (
                    "apiVersion",
                    "kind",
                    "metadata",
                    "spec",
                    "data",
                    "stringData",
                    "type",
                    "emulator",
                )
                if k.kind == "Event":
                    allowed += ("involvedObject", "reason", "message", "source", "count")
                if extra not in allowed:
                    problems.append(f"{where}.{extra}: unknown top-level key")
    return problems


def _cluster(section: dict[str, Any], name: str) -> dict[str, Any]:
    return section["clusters"][name]


def _find(cluster: dict[str, Any], kind: str, ns: str | None, name: str) -> dict[str, Any] | None:
    for o in cluster["objects"]:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            if not BY_KIND[kind].namespaced or o["metadata"].get("namespace") == ns:
                return o
    return None


def _list(cluster: dict[str, Any], kind: str, ns: str | None) -> list[dict[str, Any]]:
    out = []
    for o in cluster["objects"]:
        if o["kind"] != kind:
            continue
        if BY_KIND[kind].namespaced and ns is not None and o["metadata"].get("namespace") != ns:
            continue
        out.append(o)
    return sorted(out, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))


def template_hash(template: Any) -> str:
    return short_hash("pod-template", template, length=10, alphabet=SAFE_ALPHABET)


def _touch(cluster: dict[str, Any], o: dict[str, Any]) -> None:
    cluster["rv"] += 1
    o["metadata"]["resourceVersion"] = str(cluster["rv"])


def _nodes(cluster: dict[str, Any], schedulable: bool = True) -> list[dict[str, Any]]:
    nodes = _list(cluster, "Node", None)
    if schedulable:
        nodes = [n for n in nodes if not n.get("spec", {}).get("unschedulable")]
    return nodes


def _new_pod(
    cluster: dict[str, Any],
    cname: str,
    owner: dict[str, Any],
    name: str,
    slot: int,
    now: datetime,
    extra: dict[str, Any],
) -> dict[str, Any]:
    ns = owner["metadata"]["namespace"]
    tpl = owner["spec"]["template"]
    labels = dict(tpl.get("metadata", {}).get("labels", {}))
    owner_kind = owner["kind"]
    ref_kind, ref_name = owner_kind, owner["metadata"]["name"]
    if owner_kind == "Deployment":
        h = template_hash(tpl)
        labels["pod-template-hash"] = h
        ref_kind, ref_name = "ReplicaSet", f"{owner['metadata']['name']}-{h}"
    node = extra.get("node")
    if node is None:
        if owner_kind == "DaemonSet":
            node = extra["daemon_node"]
        else:
            nodes = _nodes(cluster)
            if nodes:
                pick = int(short_hash(name, "node", length=8), 16) % len(nodes)
                node = nodes[pick]["metadata"]["name"]
    cluster["rv"] += 1
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": ref_kind, "name": ref_name, "controller": True}],
            "uid": uuid_like(cname, "Pod", ns, name, cluster["pod_seq"]),
            "creationTimestamp": extra.get("created") or iso(now),
            "resourceVersion": str(cluster["rv"]),
        },
        "spec": {"nodeName": node, "containers": copy.deepcopy(tpl.get("spec", {}).get("containers", []))},
        "emulator": {
            "owner": [owner_kind, owner["metadata"]["name"]],
            "slot": slot,
            "hash": template_hash(tpl),
            "status": extra.get("status") or ("Running" if node else "Pending"),
            "restarts": int(extra.get("restarts", 0)),
        },
    }
    if not node:
        pod["spec"].pop("nodeName")
    cluster["objects"].append(pod)
    return pod


def _owned_pods(cluster: dict[str, Any], owner: dict[str, Any]) -> list[dict[str, Any]]:
    key = [owner["kind"], owner["metadata"]["name"]]
    ns = owner["metadata"].get("namespace")
    return [
        p
        for p in cluster["objects"]
        if p["kind"] == "Pod" and p.get("emulator", {}).get("owner") == key and p["metadata"].get("namespace") == ns
    ]


def _reconcile(cluster: dict[str, Any], cname: str, now: datetime, initial: bool = False) -> None:
    """Make every workload's pods match its spec, as the controllers would."""
    existing = {
        (o["metadata"].get("namespace"), o["metadata"]["name"]) for o in cluster["objects"] if o["kind"] == "Namespace"
    }
    # Objects in a deleted namespace go with it (namespace controller).
    cluster["objects"] = [
        o for o in cluster["objects"] if not _kind_of(o).namespaced or (None, o["metadata"]["namespace"]) in existing
    ]
    # Pods whose owner is gone are garbage-collected.
    owners = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in cluster["objects"]}
    cluster["objects"] = [
        o
        for o in cluster["objects"]
        if not (o["kind"] == "Pod" and "owner" in o.get("emulator", {}))
        or (o["emulator"]["owner"][0], o["metadata"]["namespace"], o["emulator"]["owner"][1]) in owners
    ]
    # The scheduler: a pod created directly (kubectl run, apply) lands on a schedulable node.
    for pod in cluster["objects"]:
        if pod["kind"] == "Pod" and not pod.get("spec", {}).get("nodeName"):
            nodes = _nodes(cluster)
            if nodes:
                pick = int(short_hash(pod["metadata"]["name"], "node", length=8), 16) % len(nodes)
                pod.setdefault("spec", {})["nodeName"] = nodes[pick]["metadata"]["name"]
    for owner in [o for o in cluster["objects"] if o["kind"] in WORKLOADS]:
        em = owner.setdefault("emulator", {})
        authored = em.get("pods") or [] if initial else []
        h = template_hash(owner["spec"]["template"])
        pods = _owned_pods(cluster, owner)
        if owner["kind"] == "DaemonSet":
            nodes = [n["metadata"]["name"] for n in _nodes(cluster, schedulable=False)]
            by_node = {p["spec"].get("nodeName"): p for p in pods if p["emulator"]["hash"] == h}
            for p in pods:
                if p["emulator"]["hash"] != h or p["spec"].get("nodeName") not in nodes:
                    cluster["objects"].remove(p)
            for slot, node in enumerate(nodes):
                if node not in by_node:
                    cluster["pod_seq"] += 1
                    name = f"{owner['metadata']['name']}-{short_hash(owner['metadata']['uid'], node, cluster['pod_seq'], length=5, alphabet=SAFE_ALPHABET)}"
                    extra = dict(authored[slot]) if slot < len(authored) else {}
                    extra["daemon_node"] = node
                    if initial:
                        extra.setdefault("created", owner["metadata"]["creationTimestamp"])
                    _new_pod(cluster, cname, owner, extra.get("name", name), slot, now, extra)
            continue
        replicas = int(owner["spec"].get("replicas", 1))
        keep: dict[int, dict[str, Any]] = {}
        for p in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"]):
            slot = p["emulator"]["slot"]
            if p["emulator"]["hash"] == h and slot < replicas and slot not in keep:
                keep[slot] = p
            else:
                cluster["objects"].remove(p)
        for slot in range(replicas):
            if slot in keep:
                continue
            cluster["pod_seq"] += 1
            if owner["kind"] == "StatefulSet":
                name = f"{owner['metadata']['name']}-{slot}"
            else:
                suffix = short_hash(
                    owner["metadata"]["uid"], h, slot, cluster["pod_seq"], length=5, alphabet=SAFE_ALPHABET
                )
                name = f"{owner['metadata']['name']}-{h}-{suffix}"
            extra = dict(authored[slot]) if slot < len(authored) else {}
            if initial:
                extra.setdefault("created", owner["metadata"]["creationTimestamp"])
            else:
                extra.pop("name", None)
            status = em.get("new_pod_status")
            if status and not initial:
                extra["status"] = status
            _new_pod(cluster, cname, owner, extra.get("name", name), slot, now, extra)


def _canonical(o: dict[str, Any], cname: str) -> dict[str, Any]:
    k = _kind_of(o)
    meta = o["metadata"]
    value: dict[str, Any] = {"uid": meta.get("uid")}
    labels = meta.get("labels")
    if labels:
        value["labels"] = labels
    annotations = {a: v for a, v in (meta.get("annotations") or {}).items() if a != LAST_APPLIED}
    if annotations:
        value["annotations"] = annotations
    for key in ("spec", "data", "type"):
        if key in o:
            value[key] = o[key]
    if k.namespaced:
        value["_owner"] = object_id(cname, BY_KIND["Namespace"], None, meta["namespace"])
    if k.kind == "Pod" and "owner" in o.get("emulator", {}):
        owner_kind, owner_name = o["emulator"]["owner"]
        value["_owner"] = object_id(cname, BY_KIND[owner_kind], meta["namespace"], owner_name)
        value["_managed"] = True
    return value


def object_id(cname: str, k: Kind, ns: str | None, name: str) -> str:
    return f"k8s/{cname}/{k.singular}/{ns}/{name}" if k.namespaced else f"k8s/{cname}/{k.singular}/{name}"


def _oid(cname: str, o: dict[str, Any]) -> str:
    return object_id(cname, _kind_of(o), o["metadata"].get("namespace"), o["metadata"]["name"])


def objects(section: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cname, cluster in section.get("clusters", {}).items():
        for o in cluster.get("objects", []):
            out[_oid(cname, o)] = _canonical(o, cname)
    return out


# ---------------------------------------------------------------------------------------------
# Printing


def _age(o: dict[str, Any], now: datetime) -> str:
    return human_age(now - parse_time(o["metadata"]["creationTimestamp"]))


def _pod_ready(p: dict[str, Any]) -> tuple[int, int]:
    n = len(p["spec"].get("containers", [])) or 1
    return (n if p.get("emulator", {}).get("status", "Running") == "Running" else 0), n


def _restarts(p: dict[str, Any], now: datetime) -> str:
    r = int(p.get("emulator", {}).get("restarts", 0))
    if r == 0:
        return "0"
    return f"{r} ({human_age(timedelta(minutes=2, seconds=14))} ago)"


def _workload_counts(cluster: dict[str, Any], o: dict[str, Any]) -> tuple[int, int, int]:
    pods = _owned_pods(cluster, o)
    ready = sum(1 for p in pods if _pod_ready(p)[0] == _pod_ready(p)[1])
    h = template_hash(o["spec"]["template"])
    updated = sum(1 for p in pods if p["emulator"]["hash"] == h)
    return len(pods), ready, updated


def _ports(svc: dict[str, Any]) -> str:
    parts = []
    for p in svc.get("spec", {}).get("ports", []) or []:
        s = str(p.get("port"))
        if p.get("nodePort"):
            s += f":{p['nodePort']}"
        parts.append(f"{s}/{p.get('protocol', 'TCP')}")
    return ",".join(parts) or "<none>"


def _pod_ip(name: str) -> str:
    return f"10.42.{int(short_hash(name, length=2), 16) % 250}.{int(short_hash(name, 'b', length=2), 16) % 250}"


def _row(cluster: dict[str, Any], o: dict[str, Any], now: datetime, wide: bool) -> tuple[list[str], list[str]]:
    """(header, row) for one object in kubectl's default printer."""
    k = _kind_of(o)
    name = o["metadata"]["name"]
    spec = o.get("spec", {}) or {}
    age = _age(o, now)
    c = k.columns
    if c == "pod":
        ready, total = _pod_ready(o)
        head = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        row = [name, f"{ready}/{total}", o.get("emulator", {}).get("status", "Running"), _restarts(o, now), age]
        if wide:
            ip = _pod_ip(name) if spec.get("nodeName") else "<none>"
            head += ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
            row += [ip, spec.get("nodeName") or "<none>", "<none>", "<none>"]
        return head, row
    if c == "deployment":
        n, ready, updated = _workload_counts(cluster, o)
        head = ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
        row = [name, f"{ready}/{spec.get('replicas', 1)}", str(updated), str(ready), age]
        if wide:
            cs = spec["template"]["spec"].get("containers", [])
            sel = ",".join(f"{a}={b}" for a, b in spec.get("selector", {}).get("matchLabels", {}).items())
            head += ["CONTAINERS", "IMAGES", "SELECTOR"]
            row += [",".join(x["name"] for x in cs), ",".join(x.get("image", "") for x in cs), sel]
        return head, row
    if c == "replicaset":
        head, row = ["NAME", "DESIRED", "CURRENT", "READY", "AGE"], [name, *o["emulator"]["counts"], age]
        if wide:
            labels = o["metadata"].get("labels") or {}
            head, row = [*head, *WIDE_POD_HEAD], [*row, *_pod_template_cells(spec, _labels_text(labels))]
        return head, row
    if c == "statefulset":
        n, ready, _ = _workload_counts(cluster, o)
        head, row = ["NAME", "READY", "AGE"], [name, f"{ready}/{spec.get('replicas', 1)}", age]
        if wide:
            head, row = [*head, *WIDE_POD_HEAD[:2]], [*row, *_pod_template_cells(spec, None)]
        return head, row
    if c == "daemonset":
        n, ready, updated = _workload_counts(cluster, o)
        sel = ",".join(
            f"{a}={b}" for a, b in (spec.get("template", {}).get("spec", {}).get("nodeSelector") or {}).items()
        )
        head = ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"]
        row = [name, str(n), str(n), str(ready), str(updated), str(ready), sel or "<none>", age]
        if wide:
            match = (spec.get("selector") or {}).get("matchLabels") or spec.get("template", {}).get("metadata", {}).get(
                "labels"
            )
            head, row = [*head, *WIDE_POD_HEAD], [*row, *_pod_template_cells(spec, _labels_text(match or {}))]
        return head, row
    if c == "service":
        stype = spec.get("type", "ClusterIP")
        ip = (
            spec.get("clusterIP")
            or f"10.96.{int(short_hash(name, length=2), 16) % 250}.{int(short_hash(name, 's', length=2), 16) % 250}"
        )
        ext = ",".join(spec.get("externalIPs", []) or []) or ("<pending>" if stype == "LoadBalancer" else "<none>")
        head = ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
        row = [name, stype, ip, ext, _ports(o), age]
        if wide:
            head.append("SELECTOR")
            row.append(",".join(f"{a}={b}" for a, b in (spec.get("selector") or {}).items()) or "<none>")
        return head, row
    if c == "configmap":
        return ["NAME", "DATA", "AGE"], [name, str(len(o.get("data") or {})), age]
    if c == "secret":
        return ["NAME", "TYPE", "DATA", "AGE"], [name, o.get("type", "Opaque"), str(len(o.get("data") or {})), age]
    if c == "serviceaccount":
        return ["NAME", "SECRETS", "AGE"], [name, "0", age]
    if c == "namespace":
        return ["NAME", "STATUS", "AGE"], [name, "Active", age]
    if c == "node":
        status = "Ready" + (",SchedulingDisabled" if spec.get("unschedulable") else "")
        labels = o["metadata"].get("labels", {})
        roles = (
            ",".join(sorted(r.split("/", 1)[1] for r in labels if r.startswith("node-role.kubernetes.io/"))) or "<none>"
        )
        head = ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        row = [name, status, roles, age, cluster.get("version", CLIENT_VERSION)]
        if wide:
            head += ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"]
            row += [
                f"10.0.{int(short_hash(name, length=2), 16) % 250}.10",
                "<none>",
                "Ubuntu 22.04.4 LTS",
                "5.15.0-105-generic",
                "containerd://1.7.13",
            ]
        return head, row
    if c == "pvc":
        res = (spec.get("resources") or {}).get("requests", {}).get("storage", "")
        modes = ",".join(
            {"ReadWriteOnce": "RWO", "ReadWriteMany": "RWX", "ReadOnlyMany": "ROX"}.get(m, m)
            for m in spec.get("accessModes", [])
        )
        head = ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "AGE"]
        vol = spec.get("volumeName") or "pvc-" + uuid_like(name, "pv")
        return head, [name, "Bound", vol, res, modes, spec.get("storageClassName", "standard"), age]
    if c == "quota":
        hard = spec.get("hard", {}) or {}
        used = (o.get("emulator") or {}).get("used", {})
        req = ", ".join(f"{r}: {used.get(r, '0')}/{v}" for r, v in hard.items() if not r.startswith("limits."))
        lim = ", ".join(f"{r}: {used.get(r, '0')}/{v}" for r, v in hard.items() if r.startswith("limits."))
        return ["NAME", "AGE", "REQUEST", "LIMIT"], [name, age, req, lim]
    if c == "cronjob":
        last = (o.get("emulator") or {}).get("last_schedule", "")
        head = ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
        row = [
            name,
            spec.get("schedule", ""),
            spec.get("timeZone") or "<none>",
            "True" if spec.get("suspend") else "False",
            "0",
            last or "<none>",
            age,
        ]
        if wide:
            job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
            head, row = [*head, *WIDE_POD_HEAD], [*row, *_pod_template_cells(job_spec, "<none>")]
        return head, row
    if c == "job":
        em = o.get("emulator") or {}
        want = int(spec.get("completions", 1))
        comp = em.get("completions", f"{want}/{want}")
        done, _, of = str(comp).partition("/")
        # A Job still running has run since it started (its creation here); a finished one for
        # the time its pods took (the family may say; 12 s otherwise).
        duration = em.get("duration") or (
            human_age(now - parse_time(o["metadata"]["creationTimestamp"])) if done != of else "12s"
        )
        head, row = ["NAME", "COMPLETIONS", "DURATION", "AGE"], [name, comp, duration, age]
        if wide:
            uid = o["metadata"].get("uid") or uuid_like(name, "job")
            head, row = (
                [*head, *WIDE_POD_HEAD],
                [*row, *_pod_template_cells(spec, f"batch.kubernetes.io/controller-uid={uid}")],
            )
        return head, row
    if c == "ingress":
        hosts = ",".join(r.get("host", "*") for r in spec.get("rules", []) or []) or "*"
        ports = "80, 443" if spec.get("tls") else "80"
        return ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"], [
            name,
            spec.get("ingressClassName", "<none>"),
            hosts,
            "",
            ports,
            age,
        ]
    if c == "hpa":
        ref = spec.get("scaleTargetRef", {})
        em = o.get("emulator") or {}
        head = ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
        return head, [
            name,
            f"{ref.get('kind', 'Deployment')}/{ref.get('name', '')}",
            em.get("targets") or _hpa_targets(spec),
            str(spec.get("minReplicas", 1)),
            str(spec.get("maxReplicas", "")),
            str(em.get("replicas", spec.get("minReplicas", 1))),
            age,
        ]
    if c == "event":
        em = o.get("emulator") or {}
        ref = o.get("involvedObject") or {}
        head = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
        obj = f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"
        return head, [em.get("last_seen", age), o.get("type", "Normal"), o.get("reason", ""), obj, o.get("message", "")]
    if c == "pdb":
        head = ["NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"]
        return head, [name, str(spec.get("minAvailable", "N/A")), str(spec.get("maxUnavailable", "N/A")), "1", age]
    return ["NAME", "AGE"], [name, age]


def _hpa_targets(spec: dict[str, Any]) -> str:
    """kubectl's TARGETS cell (1.27+: the resource named) from the spec's metrics; the current
    value is unknown unless the family gives the cell (``emulator.targets``)."""
    cells = []
    for m in spec.get("metrics") or []:
        res = m.get("resource") or {} if isinstance(m, dict) else {}
        target = res.get("target") or {}
        if "averageUtilization" in target:
            cells.append(f"{res.get('name', 'cpu')}: <unknown>/{target['averageUtilization']}%")
        elif "averageValue" in target:
            cells.append(f"{res.get('name', 'cpu')}: <unknown>/{target['averageValue']}")
    if "targetCPUUtilizationPercentage" in spec:
        cells.append(f"cpu: <unknown>/{spec['targetCPUUtilizationPercentage']}%")
    return ", ".join(cells) or "<none>"


def field_errors(o: dict[str, Any]) -> list[str]:
    """The API server's validation of a stored object, for the rules a task can run into
    (pkg/apis/autoscaling/validation, pkg/apis/apps/validation): ``path: Invalid value: v: why``."""
    spec = o.get("spec") or {}
    errors: list[str] = []
    if o.get("kind") == "HorizontalPodAutoscaler":
        low, high = spec.get("minReplicas"), spec.get("maxReplicas")
        if isinstance(low, int) and low < 1:
            errors.append(f"spec.minReplicas: Invalid value: {low}: must be greater than or equal to 1")
        if isinstance(high, int) and high < 1:
            errors.append(f"spec.maxReplicas: Invalid value: {high}: must be greater than 0")
        if isinstance(low, int) and isinstance(high, int) and high < low:
            errors.append(f"spec.maxReplicas: Invalid value: {high}: must be greater than or equal to `minReplicas`")
    elif o.get("kind") in ("Deployment", "StatefulSet", "ReplicaSet"):
        replicas = spec.get("replicas")
        if isinstance(replicas, int) and replicas < 0:
            errors.append(f"spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0")
    return errors


WIDE_POD_HEAD = ["CONTAINERS", "IMAGES", "SELECTOR"]


def _labels_text(labels: dict[str, Any]) -> str:
    return ",".join(f"{a}={b}" for a, b in labels.items()) or "<none>"


def _pod_template_cells(spec: dict[str, Any], selector: str | None) -> list[str]:
    """The ``-o wide`` cells of a pod-owning object: its template's containers and images, and
    the selector when the kind's printer shows one (StatefulSets do not)."""
    cs = (spec.get("template") or {}).get("spec", {}).get("containers", [])
    cells = [",".join(x["name"] for x in cs), ",".join(x.get("image", "") for x in cs)]
    return cells if selector is None else [*cells, selector]


def _derived_replicasets(cluster: dict[str, Any], ns: str | None) -> list[dict[str, Any]]:
    out = []
    for d in _list(cluster, "Deployment", ns):
        revisions = d.get("emulator", {}).get("revisions") or [d["spec"]["template"]]
        current = template_hash(d["spec"]["template"])
        seen = set()
        for tpl in revisions:
            h = template_hash(tpl)
            if h in seen:
                continue
            seen.add(h)
            pods = [p for p in _owned_pods(cluster, d) if p["emulator"]["hash"] == h]
            desired = d["spec"].get("replicas", 1) if h == current else 0
            ready = sum(1 for p in pods if _pod_ready(p)[0] == _pod_ready(p)[1])
            out.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": f"{d['metadata']['name']}-{h}",
                        "namespace": d["metadata"]["namespace"],
                        "creationTimestamp": d["metadata"]["creationTimestamp"],
                        "labels": {**tpl.get("metadata", {}).get("labels", {}), "pod-template-hash": h},
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "name": d["metadata"]["name"],
                                "controller": True,
                            }
                        ],
                    },
                    "spec": {"replicas": desired, "template": tpl},
                    "emulator": {"counts": [str(desired), str(len(pods)), str(ready)]},
                }
            )
    return out


def _public(o: dict[str, Any], cluster: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The object as the API server returns it (no harness fields, secrets base64, a status)."""
    out = {k: copy.deepcopy(v) for k, v in o.items() if k not in ("emulator", "stringData")}
    k = _kind_of(o)
    if k.kind == "Secret" and o.get("data"):
        out["data"] = {a: base64.b64encode(str(v).encode()).decode() for a, v in o["data"].items()}
    if k.kind == "Pod":
        em = o.get("emulator", {})
        status = em.get("status", "Running")
        phase = "Running" if status in ("Running", "CrashLoopBackOff", "Error") else status
        out["status"] = {
            "phase": phase,
            **({"podIP": _pod_ip(o["metadata"]["name"])} if o["spec"].get("nodeName") else {}),
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image"),
                    "ready": status == "Running",
                    "restartCount": em.get("restarts", 0),
                    **(
                        {"state": {"waiting": {"reason": status}}}
                        if status not in ("Running", "Pending")
                        else {"state": {"running": {}}}
                    ),
                }
                for c in o["spec"].get("containers", [])
            ],
        }
    elif k.kind in WORKLOADS:
        n, ready, updated = _workload_counts(cluster, o)
        out["status"] = {
            "replicas": n,
            "readyReplicas": ready,
            "updatedReplicas": updated,
            "availableReplicas": ready,
            "observedGeneration": o["metadata"].get("generation", 1),
        }
    elif k.kind == "Namespace":
        out["status"] = {"phase": "Active"}
    return out


def _fields_v1(value: Any, depth: int = 0) -> dict[str, Any]:
    """The FieldsV1 set of a value (``f:<field>`` per key), a few levels deep as the server keeps it."""
    if not isinstance(value, dict) or depth > 3:
        return {}
    out: dict[str, Any] = {".": {}} if depth else {}
    for key, sub in value.items():
        out[f"f:{key}"] = _fields_v1(sub, depth + 1)
    return out


def _managed_fields(o: dict[str, Any]) -> list[dict[str, Any]]:
    """``metadata.managedFields`` as the API server records it (shown with --show-managed-fields).

    The emulator keeps no field ownership, so the entries are derived: the writer of the object's
    spec (``kubectl-client-side-apply`` when it was applied, else ``kubectl-create``) and, for
    workloads, the controller manager owning ``status``.
    """
    k = _kind_of(o)
    meta = o["metadata"]
    applied = LAST_APPLIED in (meta.get("annotations") or {})
    body: dict[str, Any] = {key: o[key] for key in ("spec", "data", "type") if key in o}
    body["metadata"] = {key: meta[key] for key in ("labels", "annotations") if meta.get(key)}
    entries = [
        {
            "apiVersion": k.api,
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields_v1(body),
            "manager": "kubectl-client-side-apply" if applied else "kubectl-create",
            "operation": "Update",
            "time": meta["creationTimestamp"],
        }
    ]
    if k.kind in WORKLOADS or k.kind == "Pod":
        entries.append(
            {
                "apiVersion": k.api,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:status": {".": {}, "f:observedGeneration": {}} if k.kind != "Pod" else {".": {}, "f:phase": {}}
                },
                "manager": "kube-controller-manager" if k.kind != "Pod" else "kubelet",
                "operation": "Update",
                "subresource": "status",
                "time": meta["creationTimestamp"],
            }
        )
    return entries


def _name_ref(o: dict[str, Any]) -> str:
    return f"{_kind_of(o).ref}/{o['metadata']['name']}"


# -- jsonpath (the subset agents use: fields, [n], [*], [?(@.a=="b")], range/end, quoted text)


def _jp_split(expr: str) -> list[str]:
    return re.findall(r"\{range [^}]*\}|\{end\}|\{[^}]*\}|[^{]+", expr)


def _jp_eval(path: str, data: Any) -> list[Any]:
    path = path.strip()
    if path.startswith("$"):
        path = path[1:]
    current = [data]
    for tok in re.findall(r"\.\.?[^.\[]+|\[[^\]]*\]", path):
        nxt: list[Any] = []
        for v in current:
            if tok.startswith("["):
                inner = tok[1:-1]
                if not isinstance(v, list):
                    continue
                if inner in ("*", ""):
                    nxt.extend(v)
                elif inner.startswith("?"):
                    m = re.match(r"\?\(@\.([\w.]+)\s*(==|!=)\s*['\"]?([^'\"]*)['\"]?\)", inner)
                    if m:
                        field, op, val = m.groups()
                        for item in v:
                            got = _jp_eval("." + field, item)
                            hit = bool(got) and str(got[0]) == val
                            if hit == (op == "=="):
                                nxt.append(item)
                elif re.match(r"^-?\d+$", inner):
                    idx = int(inner)
                    if -len(v) <= idx < len(v):
                        nxt.append(v[idx])
            else:
                key = tok.lstrip(".")
                if key == "*" and isinstance(v, dict):
                    nxt.extend(v.values())
                elif isinstance(v, dict) and key in v:
                    nxt.append(v[key])
                elif isinstance(v, list):
                    nxt.extend(item[key] for item in v if isinstance(item, dict) and key in item)
        current = nxt
    return current


def _jp_str(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def jsonpath(template: str, data: Any) -> str:
    parts = _jp_split(template)

    def render(tokens: list[str], scope: Any) -> str:
        out = []
        i = 0
        while i < len(tokens):
            t = tokens[i]
            if t.startswith("{range "):
                depth, j = 1, i + 1
                while j < len(tokens) and depth:
                    depth += 1 if tokens[j].startswith("{range ") else -1 if tokens[j] == "{end}" else 0
                    j += 1
                body = tokens[i + 1 : j - 1]
                for item in _jp_eval(t[7:-1], scope):
                    out.append(render(body, item))
                i = j
                continue
            if t.startswith("{"):
                inner = t[1:-1]
                if inner.startswith('"') or inner.startswith("'"):
                    out.append(inner[1:-1].encode().decode("unicode_escape"))
                else:
                    out.append(" ".join(_jp_str(v) for v in _jp_eval(inner, scope)))
            else:
                out.append(t)
            i += 1
        return "".join(out)

    return render(parts, data)


# ---------------------------------------------------------------------------------------------
# The command line


GLOBAL = [
    opt("-n", "--namespace"),
    opt("--context"),
    opt("--cluster"),
    opt("--user", inert=NO_TRANSPORT),
    opt("--kubeconfig", inert=NO_TRANSPORT),
    opt("-s", "--server"),
    opt("--token", inert=NO_TRANSPORT),
    opt("--request-timeout", inert=NO_TRANSPORT),
    opt("-v", "--v", dest="verbosity", inert=NO_DEBUG),
    opt("--insecure-skip-tls-verify", kind="bool", inert=NO_TRANSPORT),
    opt("-h", "--help", kind="bool"),
]
OUTPUT = opt("-o", "--output")
DRY = opt("--dry-run", bare="unchanged")
SELECTOR = opt("-l", "--selector")
ALLNS = opt("-A", "--all-namespaces", kind="bool")
FILENAME = opt("-f", "--filename", kind="list")
RECURSIVE = opt("-R", "--recursive", kind="bool")

VERBS: dict[str, list[Opt]] = {
    "get": [
        OUTPUT,
        SELECTOR,
        ALLNS,
        FILENAME,
        RECURSIVE,
        opt("-w", "--watch", kind="bool"),
        opt("--show-labels", kind="bool"),
        opt("--field-selector"),
        opt("--no-headers", kind="bool"),
        opt("--sort-by"),
        opt("-L", "--label-columns", kind="list"),
        opt("--ignore-not-found", kind="bool"),
        opt("--chunk-size", inert="the server's paging of a list: the same rows either way"),
        opt("--show-managed-fields", kind="bool"),
        opt("--show-kind", kind="bool"),
        opt("--output-watch-events", kind="bool"),
        opt("--raw"),
        opt("--subresource"),
    ],
    "describe": [SELECTOR, ALLNS, FILENAME, RECURSIVE, opt("--show-events", kind="bool")],
    "delete": [
        SELECTOR,
        ALLNS,
        FILENAME,
        RECURSIVE,
        DRY,
        opt("--all", kind="bool"),
        opt("--force", kind="bool"),
        opt("--grace-period", kind="int"),
        opt("--now", kind="bool"),
        opt("--wait", kind="bool", inert=NO_WAIT),
        opt("--cascade", bare="background"),
        opt("--ignore-not-found", kind="bool"),
        opt("--field-selector"),
        opt("-i", "--interactive", kind="bool"),
        OUTPUT,
        opt("--timeout", inert=NO_WAIT),
    ],
    "apply": [
        FILENAME,
        RECURSIVE,
        DRY,
        OUTPUT,
        opt("--server-side", kind="bool"),
        opt("--force", kind="bool"),
        opt("--prune", kind="bool"),
        SELECTOR,
        opt("--force-conflicts", kind="bool"),
        opt("--field-manager"),
        opt("--validate", bare="strict"),
        opt("--wait", kind="bool", inert=NO_WAIT),
        opt("-k", "--kustomize"),
    ],
    "create": [
        FILENAME,
        DRY,
        OUTPUT,
        opt("--image", kind="list"),
        opt("--replicas", kind="int"),
        opt("--port", kind="int"),
        opt("--from-literal", kind="list"),
        opt("--from-file", kind="list"),
        opt("--from"),
        opt("--type"),
        opt("--schedule"),
        opt("--hard"),
        opt("--save-config", kind="bool"),
        opt("--validate", bare="strict"),
    ],
    "replace": [FILENAME, DRY, OUTPUT, opt("--force", kind="bool")],
    "scale": [
        SELECTOR,
        FILENAME,
        DRY,
        OUTPUT,
        opt("--replicas", kind="int", default=-1),
        opt("--current-replicas", kind="int", default=-1),
        opt("--all", kind="bool"),
        opt("--timeout", inert=NO_WAIT),
    ],
    "rollout": [
        FILENAME,
        DRY,
        OUTPUT,
        SELECTOR,
        opt("--to-revision", kind="int", default=0),
        opt("--revision", kind="int", default=0),
        opt("-w", "--watch", kind="bool"),
        opt("--timeout", inert=NO_WAIT),
    ],
    "set": [
        FILENAME,
        DRY,
        OUTPUT,
        SELECTOR,
        opt("--all", kind="bool"),
        opt("--record", kind="bool"),
        opt("-c", "--containers"),
        opt("-e", "--env", kind="list"),
        opt("--limits"),
        opt("--requests"),
    ],
    "label": [
        FILENAME,
        DRY,
        OUTPUT,
        SELECTOR,
        ALLNS,
        opt("--all", kind="bool"),
        opt("--overwrite", kind="bool"),
        opt("--list", kind="bool"),
    ],
    "annotate": [
        FILENAME,
        DRY,
        OUTPUT,
        SELECTOR,
        ALLNS,
        opt("--all", kind="bool"),
        opt("--overwrite", kind="bool"),
        opt("--list", kind="bool"),
    ],
    "patch": [
        FILENAME,
        DRY,
        OUTPUT,
        opt("-p", "--patch"),
        opt("--patch-file"),
        opt("--type", default="strategic"),
        opt("--subresource"),
    ],
    "edit": [FILENAME, OUTPUT, opt("--save-config", kind="bool"), opt("--validate", bare="strict")],
    "cordon": [DRY, SELECTOR],
    "uncordon": [DRY, SELECTOR],
    "drain": [
        DRY,
        SELECTOR,
        opt("--ignore-daemonsets", kind="bool"),
        opt("--delete-emptydir-data", kind="bool"),
        opt("--delete-local-data", kind="bool"),
        opt("--force", kind="bool"),
        opt("--grace-period", kind="int", inert=NO_WAIT),
        opt("--timeout", inert=NO_WAIT),
        opt("--disable-eviction", kind="bool"),
        opt("--pod-selector"),
    ],
    "logs": [
        SELECTOR,
        opt("-c", "--container"),
        opt("--tail", kind="int", default=-1),
        opt("-f", "--follow", kind="bool"),
        opt("-p", "--previous", kind="bool"),
        opt("--since"),
        opt("--timestamps", kind="bool"),
        opt("--all-containers", kind="bool"),
    ],
    "config": [
        OUTPUT,
        opt("--current", kind="bool"),
        opt("--minify", kind="bool"),
        opt("--raw", kind="bool"),
        opt("--no-headers", kind="bool"),
    ],
    "diff": [FILENAME, RECURSIVE, opt("--server-side", kind="bool")],
    "run": [
        DRY,
        OUTPUT,
        opt("--image"),
        opt("--restart"),
        opt("--rm", kind="bool"),
        opt("-i", "--stdin", kind="bool"),
        opt("-t", "--tty", kind="bool"),
        opt("--command", kind="bool"),
        opt("--labels"),
        opt("--env", kind="list"),
        opt("--port"),
    ],
    "version": [OUTPUT, opt("--client", kind="bool"), opt("--short", kind="bool")],
    "cluster-info": [],
    "api-resources": [
        OUTPUT,
        opt("--namespaced", kind="bool", default=None),
        opt("--api-group"),
        opt("--no-headers", kind="bool"),
    ],
    "auth": [ALLNS, opt("--list", kind="bool"), opt("-q", "--quiet", kind="bool")],
    "top": [SELECTOR, ALLNS, opt("--containers", kind="bool")],
    "exec": [opt("-c", "--container"), opt("-i", "--stdin", kind="bool"), opt("-t", "--tty", kind="bool")],
    "port-forward": [opt("--address")],
    "cp": [opt("-c", "--container")],
    "attach": [opt("-c", "--container"), opt("-i", "--stdin", kind="bool"), opt("-t", "--tty", kind="bool")],
    "explain": [opt("--recursive", kind="bool")],
    "wait": [FILENAME, SELECTOR, ALLNS, opt("--for"), opt("--timeout", inert=NO_WAIT), opt("--all", kind="bool")],
}
# Changes cluster state (the oracle's "action" verbs). `config` changes only the local kubeconfig.
MUTATING = {
    "delete",
    "apply",
    "create",
    "replace",
    "scale",
    "set",
    "label",
    "annotate",
    "patch",
    "edit",
    "cordon",
    "uncordon",
    "drain",
    "run",
}
MUTATING_ROLLOUT = {"restart", "undo", "pause", "resume"}

# `kubectl VERB --help`: kubectl's layout (a summary, examples, options with their defaults,
# usage) for the verbs agents ask about; texts follow the kubectl reference pages
# (kubernetes.io/docs/reference/kubectl/generated/kubectl_<verb>/).
VERB_HELP: dict[str, tuple[str, str, str]] = {
    "get": (
        "Display one or many resources.\n\n Prints a table of the most important information about the specified resources. You can filter\nthe list using a label selector and the --selector flag. If the desired resource type is\nnamespaced you will only see results in your current namespace unless you pass --all-namespaces.",
        "  # List all pods in ps output format\n  kubectl get pods\n\n  # List all pods in ps output format with more information (such as node name)\n  kubectl get pods -o wide\n\n  # List the pods scheduled on one node\n  kubectl get pods --field-selector spec.nodeName=node-1",
        "kubectl get [(-o|--output=)json|yaml|name|go-template|go-template-file|template|templatefile|jsonpath|jsonpath-as-json|jsonpath-file|custom-columns|custom-columns-file|wide] (TYPE[.VERSION][.GROUP] [NAME | -l label] | TYPE[.VERSION][.GROUP]/NAME ...) [flags]",
    ),
    "describe": (
        "Show details of a specific resource or group of resources.",
        "  # Describe a node\n  kubectl describe nodes kubernetes-node-emt8.c.myproject.internal\n\n  # Describe a pod\n  kubectl describe pods/nginx",
        "kubectl describe (-f FILENAME | TYPE [NAME_PREFIX | -l label] | TYPE/NAME)",
    ),
    "delete": (
        "Delete resources by file names, stdin, resources and names, or by resources and label selector.",
        "  # Delete a pod with minimal delay\n  kubectl delete pod foo --now\n\n  # Delete pods and services with label name=myLabel\n  kubectl delete pods,services -l name=myLabel",
        "kubectl delete ([-f FILENAME] | [-k DIRECTORY] | TYPE [(NAME | -l label | --all)])",
    ),
    "apply": (
        "Apply a configuration to a resource by file name or stdin. The resource name must be specified. This resource will be\ncreated if it doesn't exist yet. To use 'apply', always create the resource initially with either 'apply' or 'create\n--save-config'.",
        "  # Apply the configuration in pod.json to a pod\n  kubectl apply -f ./pod.json\n\n  # Apply the JSON passed into stdin to a pod\n  cat pod.json | kubectl apply -f -",
        "kubectl apply (-f FILENAME | -k DIRECTORY)",
    ),
    "create": (
        "Create a resource from a file or from stdin.\n\n JSON and YAML formats are accepted.",
        "  # Create a pod using the data in pod.json\n  kubectl create -f ./pod.json",
        "kubectl create -f FILENAME",
    ),
    "scale": (
        "Set a new size for a deployment, replica set, replication controller, or stateful set.",
        "  # Scale a replica set named 'foo' to 3\n  kubectl scale --replicas=3 rs/foo",
        "kubectl scale [--resource-version=version] [--current-replicas=count] --replicas=COUNT (-f FILENAME | TYPE NAME)",
    ),
    "rollout": (
        "Manage the rollout of one or many resources.",
        "  # Rollback to the previous deployment\n  kubectl rollout undo deployment/abc\n\n  # Check the rollout status of a daemonset\n  kubectl rollout status daemonset/foo",
        "kubectl rollout SUBCOMMAND",
    ),
    "logs": (
        "Print the logs for a container in a pod or specified resource. If the pod has only one container, the container name is\noptional.",
        "  # Return snapshot logs from pod nginx with only one container\n  kubectl logs nginx\n\n  # Display only the most recent 20 lines of output in pod nginx\n  kubectl logs --tail=20 nginx",
        "kubectl logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]",
    ),
    "drain": (
        "Drain node in preparation for maintenance.\n\n The given node will be marked unschedulable to prevent new pods from arriving. 'drain' evicts the pods if the API\nserver supports https://kubernetes.io/docs/concepts/workloads/pods/disruptions/ eviction.",
        '  # Drain node "foo", even if there are pods not managed by a replication controller, replica set, job, daemon set, or\nstateful set on it\n  kubectl drain foo --force',
        "kubectl drain NODE",
    ),
    "cordon": (
        "Mark node as unschedulable.",
        '  # Mark node "foo" as unschedulable\n  kubectl cordon foo',
        "kubectl cordon NODE",
    ),
    "uncordon": (
        "Mark node as schedulable.",
        '  # Mark node "foo" as schedulable\n  kubectl uncordon foo',
        "kubectl uncordon NODE",
    ),
    "patch": (
        "Update fields of a resource using strategic merge patch, a JSON merge patch, or a JSON patch.",
        '  # Partially update a node using a strategic merge patch, specifying the patch as JSON\n  kubectl patch node k8s-node-1 -p \'{"spec":{"unschedulable":true}}\'',
        "kubectl patch (-f FILENAME | TYPE NAME) [-p PATCH|--patch-file FILE]",
    ),
    "label": (
        "Update the labels on a resource.",
        "  # Update pod 'foo' with the label 'unhealthy' and the value 'true'\n  kubectl label pods foo unhealthy=true",
        "kubectl label [--overwrite] (-f FILENAME | TYPE NAME) KEY_1=VAL_1 ... KEY_N=VAL_N [--resource-version=version]",
    ),
    "annotate": (
        "Update the annotations on one or more resources.",
        "  # Update pod 'foo' with the annotation 'description' and the value 'my frontend'\n  kubectl annotate pods foo description='my frontend'",
        "kubectl annotate [--overwrite] (-f FILENAME | TYPE NAME) KEY_1=VAL_1 ... KEY_N=VAL_N [--resource-version=version]",
    ),
    "edit": (
        "Edit a resource from the default editor.",
        "  # Edit the service named 'registry'\n  kubectl edit svc/registry",
        "kubectl edit (RESOURCE/NAME | -f FILENAME)",
    ),
    "set": (
        "Configure application resources.\n\n These commands help you make changes to existing application resources.",
        "  # Set a deployment's nginx container image to 'nginx:1.9.1'\n  kubectl set image deployment/nginx nginx=nginx:1.9.1",
        "kubectl set SUBCOMMAND",
    ),
    "run": (
        "Create and run a particular image in a pod.",
        "  # Start a nginx pod\n  kubectl run nginx --image=nginx",
        'kubectl run NAME --image=image [--env="key=value"] [--port=port] [--dry-run=server|client] [--overrides=inline-json] [--command] -- [COMMAND] [args...]',
    ),
    "config": (
        'Modify kubeconfig files using subcommands like "kubectl config set current-context my-context".',
        "",
        "kubectl config SUBCOMMAND",
    ),
    "version": (
        "Print the client and server version information for the current context.",
        "  # Print the client and server versions for the current context\n  kubectl version",
        "kubectl version [flags]",
    ),
    "diff": (
        "Diff configurations specified by file name or stdin between the current online configuration, and the configuration as\nit would be if applied.",
        "  # Diff resources included in pod.json\n  kubectl diff -f pod.json",
        "kubectl diff -f FILENAME",
    ),
    "exec": (
        "Execute a command in a container.",
        "  # Get output from running the 'date' command from pod mypod, using the first container by default\n  kubectl exec mypod -- date",
        "kubectl exec (POD | TYPE/NAME) [-c CONTAINER] [flags] -- COMMAND [args...]",
    ),
    "wait": (
        "Experimental: Wait for a specific condition on one or many resources.",
        '  # Wait for the pod "busybox1" to contain the status condition of type "Ready"\n  kubectl wait --for=condition=Ready pod/busybox1',
        "kubectl wait ([-f FILENAME] | resource.group/resource.name | resource.group [(-l label | --all)]) [--for=create|--for=delete|--for condition=available|--for=jsonpath='{}'[=value]]",
    ),
    "top": ("Display resource (CPU/memory) usage.", "", "kubectl top [flags]"),
    "explain": (
        "Describe fields and structure of various resources.",
        "  # Get the documentation of the resource and its fields\n  kubectl explain pods",
        "kubectl explain TYPE [--recursive=FALSE|TRUE] [--api-version=api-version-group] [--output=plaintext|plaintext-openapiv2]",
    ),
    "api-resources": (
        "Print the supported API resources on the server.",
        "  # Print the supported API resources\n  kubectl api-resources",
        "kubectl api-resources [flags]",
    ),
    "auth": ("Inspect authorization.", "", "kubectl auth [flags]"),
    "cluster-info": (
        "Display addresses of the control plane and services with label kubernetes.io/cluster-service=true.",
        "  # Print the address of the control plane and cluster services\n  kubectl cluster-info",
        "kubectl cluster-info [flags]",
    ),
}
# One-line descriptions of the flags `--help` lists (abridged from the reference pages).
FLAG_HELP: dict[str, str] = {
    "output": "Output format. One of: (json, yaml, name, go-template, go-template-file, template, templatefile, jsonpath,\n\tjsonpath-as-json, jsonpath-file, custom-columns, custom-columns-file, wide).",
    "selector": "Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'.(e.g. -l key1=value1,key2=value2). Matching\n\tobjects must satisfy all of the specified label constraints.",
    "field_selector": "Selector (field query) to filter on, supports '=', '==', and '!='.(e.g. --field-selector\n\tkey1=value1,key2=value2). The server only supports a limited number of field queries per type.",
    "all_namespaces": "If present, list the requested object(s) across all namespaces. Namespace in current context is ignored even\n\tif specified with --namespace.",
    "label_columns": "Accepts a comma separated list of labels that are going to be presented as columns. Names are case-sensitive.\n\tYou can also use multiple flag options like -L label1 -L label2...",
    "show_labels": "When printing, show all labels as the last column (default hide labels column)",
    "show_managed_fields": "If true, keep the managedFields when printing objects in JSON or YAML format.",
    "no_headers": "When using the default or custom-column output format, don't print headers (default print headers).",
    "sort_by": "If non-empty, sort list types using this field specification.  The field specification is expressed as a\n\tJSONPath expression (e.g. '{.metadata.name}').",
    "dry_run": 'Must be "none", "server", or "client". If client strategy, only print the object that would be sent, without\n\tsending it. If server strategy, submit server-side request without persisting the resource.',
    "filename": "Filename, directory, or URL to files containing the resource to act on.",
    "recursive": "Process the directory used in -f, --filename recursively.",
    "force": "If true, immediately remove resources from API and bypass graceful deletion.",
    "grace_period": "Period of time in seconds given to the resource to terminate gracefully. Ignored if negative.",
    "ignore_not_found": 'Treat "resource not found" as a successful delete. Defaults to "true" when --all is specified.',
    "all": "Delete all resources, in the namespace of the specified resource types.",
    "replicas": "The new desired number of replicas. Required.",
    "ignore_daemonsets": "Ignore DaemonSet-managed pods.",
    "delete_emptydir_data": "Continue even if there are pods using emptyDir (local data that will be deleted when the node is drained).",
    "tail": "Lines of recent log file to display. Defaults to -1 with no selector, showing all log lines otherwise 10, if a\n\tselector is provided.",
    "previous": "If true, print the logs for the previous instance of the container in a pod if it exists.",
    "follow": "Specify if the logs should be streamed.",
    "container": "Print the logs of this container",
    "patch": "The patch to be applied to the resource JSON file.",
    "type": "The type of patch being provided; one of [json merge strategic]",
    "overwrite": "If true, allow labels to be overwritten, otherwise reject label updates that overwrite existing labels.",
    "watch": "After listing/getting the requested object, watch for changes.",
    "server_side": "If true, apply runs in the server instead of the client.",
    "prune": "Automatically delete resource objects, that do not appear in the configs and are created by either apply or\n\tcreate --save-config. Should be used with either -l or --all.",
    "client": "If true, shows client version only (no server required).",
    "cascade": 'Must be "background", "orphan", or "foreground". Selects the deletion cascading strategy for the dependents\n\t(e.g. Pods created by a ReplicationController). Defaults to background.',
    "interactive": "If true, delete resource only when user confirms.",
    "now": "If true, resources are signaled for immediate shutdown (same as --grace-period=1).",
    "wait": "If true, wait for resources to be gone before returning. This waits for finalizers.",
    "timeout": "The length of time to wait before giving up, zero means infinite",
    "kustomize": "Process a kustomization directory. This flag can't be used together with -f or -R.",
    "validate": "Must be one of: strict (or true), warn, ignore (or false).",
    "field_manager": "Name of the manager used to track field ownership.",
    "force_conflicts": "If true, server-side apply will force the changes against conflicts.",
    "current_replicas": "Precondition for current size. Requires that the current size of the resource match this value in order to\n\tscale. -1 (default) for no condition.",
    "to_revision": "The revision to rollback to. Default to 0 (last revision).",
    "revision": "See the details, including podTemplate of the revision specified",
    "image": "Image names to run. A deployment can have multiple images set for multi-container pod.",
    "from_literal": "Specify a key and literal value to insert in configmap (i.e. mykey=somevalue)",
    "from_file": "Key file can be specified using its file path, in which case file basename will be used as configmap key.",
    "save_config": "If true, the configuration of current object will be saved in its annotation.",
    "show_events": "If true, display events related to the described object.",
    "disable_eviction": "Force drain to use delete, even if eviction is supported.",
    "pod_selector": "Label selector to filter pods on the node",
    "since": "Only return logs newer than a relative duration like 5s, 2m, or 3h. Defaults to all logs.",
    "timestamps": "Include timestamps on each line in the log output",
    "all_containers": "Get all containers' logs in the pod(s).",
    "list": "If true, display the labels for a given resource.",
    "chunk_size": "Return large lists in chunks rather than all at once. Pass 0 to disable.",
    "show_kind": "If present, list the resource type for the requested object(s).",
    "patch_file": "A file containing a patch to be applied to the resource.",
    "short": "If true, print just the version number.",
    "namespaced": "If false, non-namespaced resources will be returned, otherwise returning namespaced resources by default.",
    "api_group": "Limit to resources in the specified API group.",
    "quiet": "If true, suppress output and just return the exit code.",
    "stdin": "Pass stdin to the container",
    "tty": "Stdin is a TTY",
    "restart": "The restart policy for this Pod.  Legal values [Always, OnFailure, Never].",
    "for": "The condition to wait on: [create|delete|condition=condition-name[=condition-value]|jsonpath='{JSONPath\n\texpression}'=[JSONPath value]].",
}


def _opt_default(o: Opt) -> str:
    if o.kind == "bool":
        return "true" if o.default else "false"
    if o.kind == "list":
        return "[]"
    if o.kind in ("int", "count"):
        return str(o.default if o.default is not None else 0)
    if o.dest == "dry_run":
        return "'none'"
    return f"'{o.default or ''}'"


def verb_help(verb: str) -> str:
    summary, examples, usage = VERB_HELP.get(verb, (f"kubectl {verb}.", "", f"kubectl {verb} [flags]"))
    parts = [summary, ""]
    if examples:
        parts += ["Examples:", examples, ""]
    opts = sorted(VERBS.get(verb, []), key=lambda o: next(n for n in o.names if n.startswith("--")))
    if opts:
        parts.append("Options:")
        for o in opts:
            names = ", ".join(sorted(o.names, key=len))
            parts.append(f"    {names}={_opt_default(o)}:")
            parts.append(
                "\t" + FLAG_HELP.get(o.dest, f"See the kubectl reference page for --{o.dest.replace('_', '-')}.")
            )
            parts.append("")
    parts += [
        "Usage:",
        f"  {usage} [options]",
        "",
        'Use "kubectl options" for a list of global command-line options (applies to all commands).',
    ]
    return "\n".join(parts) + "\n"


USAGE = """kubectl controls the Kubernetes cluster manager.

 Find more information at: https://kubernetes.io/docs/reference/kubectl/

Basic Commands (Beginner):
  create          Create a resource from a file or from stdin
  expose          Take a replication controller, service, deployment or pod and expose it as a new Kubernetes service
  run             Run a particular image on the cluster
  set             Set specific features on objects

Basic Commands (Intermediate):
  explain         Get documentation for a resource
  get             Display one or many resources
  edit            Edit a resource on the server
  delete          Delete resources by file names, stdin, resources and names, or by resources and label selector

Deploy Commands:
  rollout         Manage the rollout of a resource
  scale           Set a new size for a deployment, replica set, or replication controller

Cluster Management Commands:
  cluster-info    Display cluster information
  top             Display resource (CPU/memory) usage
  cordon          Mark node as unschedulable
  uncordon        Mark node as schedulable
  drain           Drain node in preparation for maintenance

Troubleshooting and Debugging Commands:
  describe        Show details of a specific resource or group of resources
  logs            Print the logs for a container in a pod
  exec            Execute a command in a container

Advanced Commands:
  diff            Diff the live version against a would-be applied version
  apply           Apply a configuration to a resource by file name or stdin
  patch           Update fields of a resource
  replace         Replace a resource by file name or stdin
  wait            Experimental: Wait for a specific condition on one or many resources

Settings Commands:
  label           Update the labels on a resource
  annotate        Update the annotations on a resource

Other Commands:
  api-resources   Print the supported API resources on the server
  config          Modify kubeconfig files
  version         Print the client and server version information

Usage:
  kubectl [flags] [options]

Use "kubectl <command> --help" for more information about a given command.
Use "kubectl options" for a list of global command-line options (applies to all commands).
"""


class _K:
    """One kubectl invocation."""

    def __init__(self, ctx: Ctx, verb: str, p: Parsed) -> None:
        self.ctx = ctx
        self.verb = verb
        self.p = p
        self.section: dict[str, Any] = ctx.state[SECTION]
        self.now = ctx.call.now
        context_name = p.get("context") or self.section.get("current_context")
        contexts = self.section.get("contexts", {})
        if verb not in ("config", "version") and context_name not in contexts:
            raise ctx.fail(1, f'error: context "{context_name}" does not exist')
        context = contexts.get(context_name, {})
        self.context_name = context_name
        self.cname: str = p.get("cluster") or context.get("cluster", "")
        if verb not in ("config", "version") and self.cname not in self.section["clusters"]:
            raise ctx.fail(1, f'error: cluster "{self.cname}" does not exist')
        self.cluster = self.section["clusters"].get(self.cname, {})
        self.ns: str = p.get("namespace") or context.get("namespace") or "default"
        self.dry = self._dry_run()

    def _dry_run(self) -> str:
        raw = self.p.get("dry_run")
        if raw is None:
            return "none"
        if raw == "unchanged":
            self.ctx.err(
                "W0302 09:00:00.000000   12345 helpers.go:703] --dry-run is deprecated and can be replaced with --dry-run=client."
            )
            return "client"
        if raw in ("true",):
            return "client"
        if raw in ("false", "none"):
            return "none"
        if raw not in ("client", "server"):
            raise self.ctx.fail(1, f'error: Invalid dry-run value ({raw}). Must be "none", "server", or "client".')
        return raw

    def admit(self, o: dict[str, Any]) -> None:
        """The server's validation of an object it is asked to store (a client-side dry run never
        reaches the server). kubectl prints a rejected object's causes as the API returns them."""
        if self.dry == "client":
            return
        errors = field_errors(o)
        if not errors:
            return
        head = f'The {o["kind"]} "{o["metadata"]["name"]}" is invalid: '
        raise self.ctx.fail(
            1, head + errors[0] if len(errors) == 1 else head + "\n" + "\n".join(f"* {e}" for e in errors)
        )

    def dry_suffix(self) -> str:
        return {"none": "", "client": " (dry run)", "server": " (server dry run)"}[self.dry]

    def oid(self, o: dict[str, Any]) -> str:
        return _oid(self.cname, o)

    def kind(self, name: str) -> Kind:
        k = lookup_kind(name)
        if k is None:
            raise self.ctx.fail(1, f'error: the server doesn\'t have a resource type "{name}"')
        return k

    def not_found(self, k: Kind, name: str) -> ToolExit:
        return self.ctx.fail(1, f'Error from server (NotFound): {k.qualified} "{name}" not found')

    def target_ns(self, k: Kind) -> str | None:
        return self.ns if k.namespaced else None

    def find(self, k: Kind, name: str, ns: str | None = None) -> dict[str, Any] | None:
        if k.kind == "ReplicaSet":
            for rs in _derived_replicasets(self.cluster, ns or self.ns):
                if rs["metadata"]["name"] == name:
                    return rs
            return None
        return _find(self.cluster, k.kind, ns if ns is not None else self.target_ns(k), name)

    def list_kind(self, k: Kind, ns: str | None) -> list[dict[str, Any]]:
        if k.kind == "ReplicaSet":
            return _derived_replicasets(self.cluster, ns)
        return _list(self.cluster, k.kind, ns)

    def ns_exists(self, ns: str) -> bool:
        return _find(self.cluster, "Namespace", None, ns) is not None

    def commit(self) -> None:
        _reconcile(self.cluster, self.cname, self.now)

    # -- argument helpers ---------------------------------------------------------------

    def targets(self, args: Sequence[str], *, allow_all: bool = False) -> list[tuple[Kind, str | None]]:
        """``TYPE NAME...``, ``TYPE/NAME...``, ``TYPE1,TYPE2``; (kind, None) means "all of that kind"."""
        if not args:
            return []
        out: list[tuple[Kind, str | None]] = []
        if "/" in args[0]:
            for a in args:
                if "/" not in a:
                    raise self.ctx.fail(
                        1,
                        f"error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl {self.verb} resource/<resource_name>' instead of 'kubectl {self.verb} resource resource/<resource_name>'",
                    )
                t, _, n = a.partition("/")
                out.append((self.kind(t), n))
            return out
        types = args[0].split(",")
        kinds: list[Kind] = []
        for t in types:
            if t == "all" and self.verb == "get":
                kinds.extend(BY_KIND[x] for x in ALL_KINDS)
            else:
                kinds.append(self.kind(t))
        if len(args) == 1:
            return [(k, None) for k in kinds]
        if len(kinds) > 1:
            raise self.ctx.fail(1, "error: you must specify only one resource")
        return [(kinds[0], n) for n in args[1:]]

    def selector_match(self, o: dict[str, Any]) -> bool:
        sel = self.p.get("selector")
        if not sel:
            return True
        labels = o["metadata"].get("labels") or {}
        for term in sel.split(","):
            term = term.strip()
            m = re.match(r"^([\w./-]+)\s*(!=|==|=)\s*([\w.-]*)$", term)
            if m:
                key, op, val = m.groups()
                if (labels.get(key) == val) != (op != "!="):
                    return False
                continue
            m = re.match(r"^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$", term)
            if m:
                key, op, vals = m.groups()
                inside = labels.get(key) in [v.strip() for v in vals.split(",")]
                if inside != (op == "in"):
                    return False
                continue
            if term.startswith("!"):
                if term[1:] in labels:
                    return False
                continue
            if re.match(r"^[\w./-]+$", term):
                if term not in labels:
                    return False
                continue
            raise self.ctx.fail(1, f"error: unable to parse requirement: found '{term}', expected: identifier")
        return True

    def field_filter(self, k: Kind, objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``--field-selector``: evaluated as the API server does, refused as it refuses.

        Only the fields the server indexes for the kind can be used, with ``=``, ``==`` and
        ``!=``; anything else is a BadRequest naming the field — never ignored, because a
        pre-drain ``spec.nodeName=...`` check that silently listed every pod would mislead.
        """
        raw = (self.p.get("field_selector") or "").strip()
        if not raw:
            return objs
        label = self.p.get("selector") or ""
        prefix = f'Error from server (BadRequest): Unable to find "{k.plural}" that match label selector "{label}", field selector "{raw}": '
        terms: list[tuple[str, bool, str]] = []
        for term in raw.split(","):
            m = re.match(r"^\s*([A-Za-z][\w.]*)\s*(==|=|!=)\s*([^=!\s]*)\s*$", term)
            if not m:
                raise self.ctx.fail(1, prefix + f"invalid selector: '{raw}'; can't understand '{term.strip()}'")
            field, op, value = m.groups()
            if field not in ("metadata.name", "metadata.namespace") and field not in FIELD_SELECTORS.get(k.kind, ()):
                if k.kind in FIELD_SELECTORS:
                    raise self.ctx.fail(1, prefix + f"field label not supported: {field}")
                raise self.ctx.fail(
                    1, prefix + f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"'
                )
            terms.append((field, op != "!=", value))
        out = []
        for o in objs:
            public = _public(o, self.cluster, self.now)
            if all((self._field_value(k, public, f) == v) == eq for f, eq, v in terms):
                out.append(o)
        return out

    @staticmethod
    def _field_value(k: Kind, public: dict[str, Any], field: str) -> str:
        value: Any = public
        for part in field.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is None and k.kind == "Pod":
            value = POD_FIELD_DEFAULTS.get(field)
        if value is None and field == "spec.unschedulable":
            value = False
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    def read_manifests(self) -> list[dict[str, Any]]:
        docs: list[dict[str, Any]] = []
        for f in self.p.get("filename") or []:
            if f.startswith(("http://", "https://")):
                raise self.ctx.fail(
                    1,
                    f'error: unable to read URL "{f}", server reported : dial tcp: lookup {f.split("/")[2]}: no such host',
                )
            if f == "-":
                texts = [("-", self.ctx.call.read_stdin())]
            else:
                data = self.ctx.call.file(f)
                if data.error == "directory":
                    entries = self.ctx.call.listdir(f) or []
                    names = sorted(
                        e.name for e in entries if e.type == "file" and e.name.endswith((".yaml", ".yml", ".json"))
                    )
                    files = self.ctx.call.files_of([f"{f.rstrip('/')}/{n}" for n in names])
                    texts = [(f"{f}/{n}", d.content or "") for n, d in zip(names, files, strict=True)]
                elif data.error:
                    raise self.ctx.fail(1, f'error: the path "{f}" does not exist')
                else:
                    texts = [(f, data.content or "")]
            for path, text in texts:
                try:
                    loaded = load_yaml_all(text)
                except DocumentError as exc:
                    raise self.ctx.fail(
                        1, f"error: error parsing {path}: error converting YAML to JSON: yaml: {exc.located}"
                    ) from None
                for doc in loaded:
                    if doc is None:
                        continue
                    if not isinstance(doc, dict):
                        raise self.ctx.fail(
                            1, f'error: error validating "{path}": error validating data: invalid object to validate'
                        )
                    if doc.get("kind") == "List":
                        docs.extend(doc.get("items") or [])
                        continue
                    if "kind" not in doc or "apiVersion" not in doc:
                        missing = "kind" if "kind" not in doc else "apiVersion"
                        raise self.ctx.fail(
                            1,
                            f'error: error validating "{path}": error validating data: [{missing} not set]; if you choose to ignore these errors, turn validation off with --validate=false',
                        )
                    docs.append(doc)
        if not docs and (self.p.get("filename") or []):
            raise self.ctx.fail(1, "error: no objects passed to " + self.verb)
        return docs

    def doc_target(self, doc: dict[str, Any]) -> tuple[Kind, str, str | None]:
        k = lookup_kind(str(doc.get("kind")))
        if k is None or k.kind == "ReplicaSet":
            raise self.ctx.fail(
                1,
                f'error: resource mapping not found for name: "{doc.get("metadata", {}).get("name", "")}" namespace: "" from "": no matches for kind "{doc.get("kind")}" in version "{doc.get("apiVersion")}"\nensure CRDs are installed first',
            )
        meta = doc.get("metadata") or {}
        name = meta.get("name")
        if not name:
            raise self.ctx.fail(1, "error: error when retrieving current configuration: resource name may not be empty")
        ns = None
        if k.namespaced:
            ns = meta.get("namespace") or self.ns
            if self.p.get("namespace") and meta.get("namespace") and meta["namespace"] != self.p.get("namespace"):
                raise self.ctx.fail(
                    1,
                    f'error: the namespace from the provided object "{meta["namespace"]}" does not match the namespace "{self.p.get("namespace")}". You must pass \'--namespace={meta["namespace"]}\' to perform this operation.',
                )
        return k, str(name), ns

    # -- verbs ----------------------------------------------------------------------------

    def run(self) -> None:
        getattr(self, "do_" + self.verb.replace("-", "_"))()

    def do_version(self) -> None:
        server = self.section["clusters"].get(self.cname, {}).get("version", CLIENT_VERSION)
        if self.p.get("output") in ("json", "yaml"):
            data = {
                "clientVersion": {"gitVersion": CLIENT_VERSION, "platform": "linux/amd64"},
                "kustomizeVersion": "v5.0.4-0.20230601165947-6ce0bf390ce3",
            }
            if not self.p.get("client"):
                data["serverVersion"] = {"gitVersion": server, "platform": "linux/amd64"}
            self.ctx.out(
                json.dumps(data, indent=2) if self.p.get("output") == "json" else to_yaml(data),
                end="\n" if self.p.get("output") == "json" else "",
            )
            return
        self.ctx.out(f"Client Version: {CLIENT_VERSION}")
        self.ctx.out("Kustomize Version: v5.0.4-0.20230601165947-6ce0bf390ce3")
        if not self.p.get("client"):
            self.ctx.out(f"Server Version: {server}")

    def do_cluster_info(self) -> None:
        self.ctx.out(
            f"\x1b[0;32mKubernetes control plane\x1b[0m is running at \x1b[0;33m{self.cluster['server']}\x1b[0m"
        )
        self.ctx.out(
            f"\x1b[0;32mCoreDNS\x1b[0m is running at \x1b[0;33m{self.cluster['server']}/api/v1/namespaces/kube-system/services/kube-dns:dns/proxy\x1b[0m"
        )
        self.ctx.out("\nTo further debug and diagnose cluster problems, use 'kubectl cluster-info dump'.")

    def do_api_resources(self) -> None:
        rows = [["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]]
        for k in sorted(KINDS, key=lambda k: k.plural):
            if self.p.get("namespaced") is not None and k.namespaced != self.p.get("namespaced"):
                continue
            rows.append([k.plural, ",".join(k.short), k.api, str(k.namespaced).lower(), k.kind])
        if self.p.get("no_headers"):
            rows = rows[1:]
        self.ctx.out(table(rows))

    def do_auth(self) -> None:
        args = self.p.args
        if not args or args[0] != "can-i":
            raise self.ctx.fail(1, 'error: unknown command "' + (args[0] if args else "") + '" for "kubectl auth"')
        if not self.p.get("quiet"):
            self.ctx.out("yes")

    def do_top(self) -> None:
        raise self.ctx.fail(1, "error: Metrics API not available")

    def _no_stream(self, what: str) -> None:
        if not self.p.args:
            raise self.ctx.fail(
                1, f"error: expected '{what}'.\nPOD or TYPE/NAME is a required argument for the {self.verb} command"
            )
        target = self.p.args[0]
        name = target.split("/", 1)[1] if "/" in target else target
        pod = self.find(BY_KIND["Pod"], name)
        if pod is None and "/" not in target:
            raise self.not_found(BY_KIND["Pod"], name)
        raise self.ctx.fail(1, f'error: unable to upgrade connection: container not found ("{name}")')

    def do_exec(self) -> None:
        self._no_stream("exec (POD | TYPE/NAME) [-c CONTAINER] [flags] -- COMMAND [args...]")

    def do_attach(self) -> None:
        self._no_stream("attach (POD | TYPE/NAME) -c CONTAINER")

    def do_port_forward(self) -> None:
        self._no_stream("port-forward TYPE/NAME [options] [LOCAL_PORT:]REMOTE_PORT")

    def do_cp(self) -> None:
        raise self.ctx.fail(1, "error: unable to upgrade connection: container not found")

    def do_explain(self) -> None:
        if not self.p.args:
            raise self.ctx.fail(
                1,
                'error: You must specify the type of resource to explain. Use "kubectl api-resources" for a complete list of supported resources.',
            )
        k = self.kind(self.p.args[0].split(".")[0])
        self.ctx.out(
            f"GROUP:      {k.group}\nKIND:       {k.kind}\nVERSION:    {k.api.split('/')[-1]}\n\nDESCRIPTION:\n    {k.kind} is a Kubernetes {k.kind.lower()} object."
        )

    def do_wait(self) -> None:
        for k, name in self.targets(self.p.args):
            objs = [self.find(k, name)] if name else self.list_kind(k, self.target_ns(k))
            for o in objs:
                if o is None:
                    raise self.not_found(k, str(name))
                self.ctx.saw(self.oid(o))
                self.ctx.out(f"{_name_ref(o)} condition met")

    # get ------------------------------------------------------------------------------

    def do_get(self) -> None:
        p = self.p
        output = p.get("output") or ""
        if output and not re.match(
            r"^(wide|yaml|json|name|jsonpath=.*|jsonpath-as-json=.*|custom-columns=.*|go-template=.*)$", output, re.S
        ):
            raise self.ctx.fail(
                1,
                f'error: unable to match a printer suitable for the output format "{output}", allowed formats are: custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml',
            )
        if p.get("filename"):
            docs = self.read_manifests()
            targets: list[tuple[Kind, str | None]] = [(k, n) for k, n, _ in (self.doc_target(d) for d in docs)]
        else:
            if not p.args:
                raise self.ctx.fail(
                    1,
                    'You must specify the type of resource to get. Use "kubectl api-resources" for a complete list of supported resources.\n\nerror: Required resource not specified.\nUse "kubectl explain <resource>" for a detailed description of that resource (e.g. kubectl explain pods).\nSee \'kubectl get -h\' for help and examples',
                )
            targets = self.targets(p.args)
        allns = p.get("all_namespaces")
        p.get("ignore_not_found")  # consulted only for a missing name; handled either way
        found: list[dict[str, Any]] = []
        errors: list[str] = []
        for k, name in targets:
            if name is None:
                objs = [
                    o
                    for o in self.list_kind(k, None if allns or not k.namespaced else self.ns)
                    if self.selector_match(o)
                ]
                found.extend(self.field_filter(k, objs))
            else:
                o = self.find(k, name)
                if o is None:
                    if not p.get("ignore_not_found"):
                        errors.append(f'Error from server (NotFound): {k.qualified} "{name}" not found')
                else:
                    found.append(o)
        for o in found:
            if o["kind"] != "ReplicaSet":
                self.ctx.saw(self.oid(o))
        sort_by = p.get("sort_by")
        if sort_by:
            found = self._sorted(found, sort_by)
        self._print(found, targets, output, allns)
        if errors:
            raise self.ctx.fail(1, "\n".join(errors))

    def _sorted(self, found: list[dict[str, Any]], spec: str) -> list[dict[str, Any]]:
        """``--sort-by``: by a JSONPath field of each object as the server returns it (kubectl's
        RuntimeSort: numbers by value, everything else as text; an object without the field first)."""
        path = spec.strip()
        if path.startswith("{") and path.endswith("}"):
            path = path[1:-1]
        if not path.startswith("."):
            path = "." + path

        def key(o: dict[str, Any]) -> tuple[int, float, str]:
            values = _jp_eval(path, _public(o, self.cluster, self.now))
            if not values or values[0] is None:
                return (0, 0.0, "")
            v = values[0]
            if isinstance(v, bool) or not isinstance(v, int | float):
                return (2, 0.0, _jp_str(v))
            return (1, float(v), "")

        return sorted(found, key=key)

    def _print(
        self, found: list[dict[str, Any]], targets: Sequence[tuple[Kind, str | None]], output: str, allns: bool
    ) -> None:
        single = len(targets) == 1 and targets[0][1] is not None
        if not found:
            if any(n is None for _, n in targets):
                where = "" if allns else f" in {self.ns} namespace"
                if not any(k.namespaced for k, _ in targets):
                    where = ""
                self.ctx.err(f"No resources found{where}.")
            return
        if output == "name":
            for o in found:
                self.ctx.out(_name_ref(o))
            return
        public = [_public(o, self.cluster, self.now) for o in found]
        if self.p.get("show_managed_fields"):
            for o, shown in zip(found, public, strict=True):
                shown["metadata"]["managedFields"] = _managed_fields(o)
        if output in ("yaml", "json") or output.startswith(("jsonpath", "custom-columns", "go-template")):
            data: Any = (
                public[0]
                if single and len(public) == 1
                else {"apiVersion": "v1", "items": public, "kind": "List", "metadata": {"resourceVersion": ""}}
            )
            if output == "yaml":
                self.ctx.out(to_yaml(data), end="")
            elif output == "json":
                self.ctx.out(json.dumps(data, indent=4))
            elif output.startswith("jsonpath"):
                tpl = output.split("=", 1)[1]
                if tpl.startswith(("'", '"')) and tpl.endswith(tpl[0]):
                    tpl = tpl[1:-1]
                if "{" not in tpl:
                    tpl = "{" + tpl + "}"
                self.ctx.out(jsonpath(tpl, data), end="")
            elif output.startswith("custom-columns"):
                spec = output.split("=", 1)[1]
                cols = [c.split(":", 1) for c in spec.split(",")]
                if any(len(c) != 2 for c in cols):
                    raise self.ctx.fail(
                        1, f"error: unexpected custom-columns spec: {spec}, expected <header>:<json-path-expr>"
                    )
                cc_rows = [[h for h, _ in cols]]
                for item in public:
                    cc_rows.append(
                        [
                            " ".join(_jp_str(v) for v in _jp_eval(path if path.startswith(".") else "." + path, item))
                            or "<none>"
                            for _, path in cols
                        ]
                    )
                if self.p.get("no_headers"):
                    cc_rows = cc_rows[1:]
                self.ctx.out(table(cc_rows))
            else:
                raise self.ctx.fail(
                    1, "error: go-template output is not supported by this kubectl build; use -o jsonpath"
                )
            return
        wide = output == "wide"
        label_columns = [
            key.strip() for value in self.p.get("label_columns") or [] for key in value.split(",") if key.strip()
        ]
        show_kind = (
            len({o["kind"] for o in found}) > 1
            or (len(targets) > 1 and targets[0][1] is None)
            or bool(self.p.get("show_kind"))
        )
        groups: dict[str, list[dict[str, Any]]] = {}
        for o in found:
            groups.setdefault(o["kind"], []).append(o)
        blocks = []
        for kind_name, objs in groups.items():
            rows: list[list[str]] = []
            head: list[str] = []
            for o in objs:
                head, row = _row(self.cluster, o, self.now, wide)
                if show_kind:
                    row[0] = _name_ref(o)
                if allns and _kind_of(o).namespaced:
                    row = [o["metadata"]["namespace"], *row]
                labels = o["metadata"].get("labels") or {}
                row.extend(labels.get(key, "") for key in label_columns)
                if self.p.get("show_labels"):
                    row.append(",".join(f"{a}={b}" for a, b in labels.items()) or "<none>")
                rows.append(row)
            if allns and BY_KIND[kind_name].namespaced:
                head = ["NAMESPACE", *head]
            # kubectl's formatLabelHeaders: the key's last path segment, upper-cased.
            head = [*head, *(key.rsplit("/", 1)[-1].upper() for key in label_columns)]
            if self.p.get("show_labels"):
                head = [*head, "LABELS"]
            if not self.p.get("no_headers"):
                rows.insert(0, head)
            blocks.append(table(rows))
        self.ctx.out("\n\n".join(blocks))

    # describe -------------------------------------------------------------------------

    def do_describe(self) -> None:
        if not self.p.args and not self.p.get("filename"):
            raise self.ctx.fail(
                1,
                'You must specify the type of resource to describe. Use "kubectl api-resources" for a complete list of supported resources.',
            )
        targets = (
            self.targets(self.p.args)
            if self.p.args
            else [(k, n) for k, n, _ in map(self.doc_target, self.read_manifests())]
        )
        chunks = []
        for k, name in targets:
            if name is None:
                objs = [
                    o
                    for o in self.list_kind(k, None if self.p.get("all_namespaces") else self.target_ns(k))
                    if self.selector_match(o)
                ]
                if not objs:
                    self.ctx.err(f"No resources found in {self.ns} namespace.")
            else:
                o = self.find(k, name)
                if o is None:
                    # kubectl describe looks objects up by name prefix before giving up.
                    objs = [x for x in self.list_kind(k, self.target_ns(k)) if x["metadata"]["name"].startswith(name)]
                    if not objs:
                        raise self.not_found(k, name)
                else:
                    objs = [o]
            for o in objs:
                if o["kind"] != "ReplicaSet":
                    self.ctx.saw(self.oid(o))
                chunks.append(self._describe(o))
        self.ctx.out("\n\n".join(chunks))

    def _describe(self, o: dict[str, Any]) -> str:
        meta = o["metadata"]
        k = _kind_of(o)
        lines = [f"Name:{' ' * 12}{meta['name']}"]
        if k.namespaced:
            lines.append(f"Namespace:{' ' * 7}{meta['namespace']}")
        created = parse_time(meta["creationTimestamp"]).strftime("%a, %d %b %Y %H:%M:%S +0000")
        lines.append(f"CreationTimestamp:  {created}")

        def kv(title: str, d: dict[str, Any] | None) -> None:
            items = list((d or {}).items())
            if not items:
                lines.append(f"{title + ':':<20}<none>")
                return
            for i, (a, b) in enumerate(items):
                lines.append(f"{(title + ':') if i == 0 else '':<20}{a}={b}")

        kv("Labels", meta.get("labels"))
        kv("Annotations", {a: v for a, v in (meta.get("annotations") or {}).items() if a != LAST_APPLIED})
        spec = o.get("spec", {}) or {}
        if k.kind in WORKLOADS:
            n, ready, updated = _workload_counts(self.cluster, o)
            if k.kind != "DaemonSet":
                lines.append(
                    f"Replicas:           {spec.get('replicas', 1)} desired | {updated} updated | {n} total | {ready} available | {n - ready} unavailable"
                )
            lines.append("Pod Template:")
            for c in spec["template"]["spec"].get("containers", []):
                lines.append(f"   {c['name']}:")
                lines.append(f"    Image:        {c.get('image')}")
                for e in c.get("env", []) or []:
                    lines.append(f"    Env:          {e.get('name')}={e.get('value', '')}")
        elif k.kind == "Pod":
            em = o.get("emulator", {})
            lines.append(f"Node:               {spec.get('nodeName', '<none>')}")
            lines.append(
                f"Status:             {em.get('status', 'Running') if em.get('status') in ('Running', 'Pending') else 'Running'}"
            )
            owner = meta.get("ownerReferences", [{}])[0]
            if owner:
                lines.append(f"Controlled By:      {owner.get('kind')}/{owner.get('name')}")
            lines.append("Containers:")
            for c in spec.get("containers", []):
                lines.append(f"  {c['name']}:")
                lines.append(f"    Image:          {c.get('image')}")
                st = em.get("status", "Running")
                if st in ("Running",):
                    lines.append("    State:          Running")
                else:
                    lines.append("    State:          Waiting")
                    lines.append(f"      Reason:       {st}")
                lines.append(f"    Ready:          {'True' if st == 'Running' else 'False'}")
                lines.append(f"    Restart Count:  {em.get('restarts', 0)}")
        elif k.kind == "Node":
            lines.append(f"Unschedulable:      {'true' if spec.get('unschedulable') else 'false'}")
            pods = [
                p for p in self.cluster["objects"] if p["kind"] == "Pod" and p["spec"].get("nodeName") == meta["name"]
            ]
            lines.append(f"Non-terminated Pods:          ({len(pods)} in total)")
            lines.append("  Namespace                   Name")
            for p in pods:
                lines.append(f"  {p['metadata']['namespace']:<28}{p['metadata']['name']}")
        elif k.kind in ("ConfigMap",):
            lines.append("\nData\n====")
            for a, v in (o.get("data") or {}).items():
                lines.append(f"{a}:\n----\n{v}")
        elif k.kind == "Secret":
            lines.append(f"\nType:  {o.get('type', 'Opaque')}\n\nData\n====")
            for a, v in (o.get("data") or {}).items():
                lines.append(f"{a}:  {len(str(v))} bytes")
        elif k.kind == "Namespace":
            lines.append("Status:             Active")
        elif spec:
            for line in to_yaml({"Spec": spec}).splitlines():
                lines.append(line)
        lines.append("Events:             <none>")
        return "\n".join(lines)

    # logs -----------------------------------------------------------------------------

    def do_logs(self) -> None:
        args = self.p.args
        if not args and not self.p.get("selector"):
            raise self.ctx.fail(
                1,
                "error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\nPOD or TYPE/NAME is a required argument for the logs command\nSee 'kubectl logs -h' for help and examples",
            )
        since = self._duration("since")
        pods: list[dict[str, Any]] = []
        if args:
            target = args[0]
            if "/" in target:
                t, _, name = target.partition("/")
                k = self.kind(t)
                o = self.find(k, name)
                if o is None:
                    raise self.not_found(k, name)
                if k.kind == "Pod":
                    pods = [o]
                elif k.kind in (*WORKLOADS, "Job"):
                    # kubectl picks one pod of the controller (the first by its sort); a Job
                    # without pods makes it wait for one until --pod-running-timeout (20 s).
                    pods = _owned_pods(self.cluster, o)[:1]
                    if not pods:
                        raise self.ctx.fail(1, "error: timed out waiting for the condition")
                else:
                    raise self.ctx.fail(
                        1, f"error: cannot attach to *v1.{k.kind}: selector for *v1.{k.kind} not implemented"
                    )
            else:
                o = self.find(BY_KIND["Pod"], target)
                if o is None:
                    raise self.not_found(BY_KIND["Pod"], target)
                pods = [o]
        else:
            pods = [o for o in self.list_kind(BY_KIND["Pod"], self.ns) if self.selector_match(o)]
        container = self.p.get("container")
        all_containers = self.p.get("all_containers")
        previous = self.p.get("previous")
        timestamps = self.p.get("timestamps")
        # The emulated stream ends with what the pod has written, as when its container exits.
        self.p.get("follow")
        lines: list[str] = []
        for pod in pods:
            self.ctx.saw(self.oid(pod))
            names = [c["name"] for c in pod["spec"].get("containers", [])]
            if container and container not in names:
                raise self.ctx.fail(
                    1,
                    f"error: container {container} is not valid for pod {pod['metadata']['name']}",
                )
            if len(names) > 1 and not container and not all_containers and len(pods) == 1:
                self.ctx.err(f'Defaulted container "{names[0]}" out of: {", ".join(names)}')
            if previous and not int(pod.get("emulator", {}).get("restarts", 0)):
                shown = container or (names[0] if names else "")
                raise self.ctx.fail(
                    1,
                    f'Error from server (BadRequest): previous terminated container "{shown}" in pod "{pod["metadata"]["name"]}" not found',
                )
            owner = pod.get("emulator", {}).get("owner")
            src = _find(self.cluster, owner[0], pod["metadata"]["namespace"], owner[1]) if owner else pod
            text = str(((src or {}).get("emulator") or {}).get("logs", ""))
            # Emulated log lines carry no time: each is stamped one second after the last, from
            # the pod's start, so --timestamps and --since have something to show and filter.
            start = parse_time(pod["metadata"]["creationTimestamp"])
            for i, line in enumerate(text.splitlines()):
                at = start + timedelta(seconds=i + 1)
                if since is not None and at < self.now - since:
                    continue
                lines.append((log_stamp(at) + " " if timestamps else "") + line)
        tail = self.p.get("tail")
        if tail is not None and tail >= 0:
            lines = lines[-tail:] if tail else []
        if lines:
            self.ctx.out("\n".join(lines))

    def _duration(self, name: str) -> timedelta | None:
        raw = self.p.get(name)
        if not raw:
            return None
        try:
            return go_duration(raw)
        except ValueError:
            flag = "--" + name.replace("_", "-")
            raise self.ctx.fail(
                1, f'error: invalid argument "{raw}" for "{flag}" flag: time: invalid duration "{raw}"'
            ) from None

    # config ---------------------------------------------------------------------------

    def do_config(self) -> None:
        args = self.p.args
        sub = args[0] if args else ""
        contexts = self.section.get("contexts", {})
        current = self.section.get("current_context", "")
        if sub == "current-context":
            self.ctx.out(current)
        elif sub == "get-contexts":
            rows = [["CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"]]
            names = args[1:] or sorted(contexts)
            for n in names:
                if n not in contexts:
                    raise self.ctx.fail(1, f"error: context {n} not found")
                c = contexts[n]
                rows.append(
                    [
                        "*" if n == current else "",
                        n,
                        c.get("cluster", ""),
                        c.get("user", c.get("cluster", "")),
                        c.get("namespace", ""),
                    ]
                )
            if self.p.get("output") == "name":
                self.ctx.out("\n".join(names))
                return
            self.ctx.out(table(rows))
        elif sub == "get-clusters":
            self.ctx.out("\n".join(["NAME", *sorted(self.section["clusters"])]))
        elif sub == "use-context":
            if len(args) != 2:
                raise self.ctx.fail(
                    1,
                    "error: Unexpected args: " + str(args[2:])
                    if len(args) > 2
                    else "error: empty context names are not allowed",
                )
            if args[1] not in contexts:
                raise self.ctx.fail(1, f'error: no context exists with the name: "{args[1]}"')
            self.section["current_context"] = args[1]
            self.ctx.out(f'Switched to context "{args[1]}".')
        elif sub == "set-context":
            name = current if self.p.get("current") else (args[1] if len(args) > 1 else "")
            if not name:
                raise self.ctx.fail(1, "error: you must specify a non-empty context name or --current")
            ctx = contexts.setdefault(name, {"cluster": self.cname})
            if self.p.get("namespace"):
                ctx["namespace"] = self.p.get("namespace")
            if self.p.get("cluster"):
                ctx["cluster"] = self.p.get("cluster")
            self.ctx.out(f'Context "{name}" modified.')
        elif sub == "view":
            doc = {
                "apiVersion": "v1",
                "clusters": [
                    {"cluster": {"certificate-authority-data": "DATA+OMITTED", "server": c["server"]}, "name": n}
                    for n, c in sorted(self.section["clusters"].items())
                ],
                "contexts": [{"context": {k: v for k, v in c.items()}, "name": n} for n, c in sorted(contexts.items())],
                "current-context": current,
                "kind": "Config",
                "preferences": {},
                "users": [
                    {"name": u, "user": {"client-certificate-data": "DATA+OMITTED", "client-key-data": "DATA+OMITTED"}}
                    for u in sorted({c.get("user", c.get("cluster", "")) for c in contexts.values()})
                ],
            }
            self.ctx.out(
                json.dumps(doc, indent=4) if self.p.get("output") == "json" else to_yaml(doc),
                end="\n" if self.p.get("output") == "json" else "",
            )
        elif not sub:
            self.ctx.out(
                'Modify kubeconfig files using subcommands like "kubectl config set current-context my-context".\n\nAvailable Commands:\n  current-context   Display the current-context\n  get-contexts      Describe one or many contexts\n  set-context       Set a context entry in kubeconfig\n  use-context       Set the current-context in a kubeconfig file\n  view              Display merged kubeconfig settings or a specified kubeconfig file'
            )
        else:
            raise self.ctx.fail(1, f'error: unknown command "{sub}" for "kubectl config"')

    # delete ---------------------------------------------------------------------------

    def do_delete(self) -> None:
        p = self.p
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        if p.get("grace_period") == 0 and not p.get("force") and self.dry == "none":
            raise self.ctx.fail(1, "error: --grace-period=0 must have --force specified")
        if p.get("force") and self.dry == "none":
            self.ctx.err(
                "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely."
            )
        cascade = self._cascade()
        # Consulted only when a target is missing; read here so a delete that finds everything
        # still counts it as handled.
        p.get("ignore_not_found")
        victims: list[dict[str, Any]] = []
        errors: list[str] = []
        if p.get("filename"):
            for d in self.read_manifests():
                k, name, ns = self.doc_target(d)
                o = self.find(k, name, ns)
                if o is None:
                    if not p.get("ignore_not_found"):
                        errors.append(
                            f'Error from server (NotFound): error when deleting "{name}": {k.qualified} "{name}" not found'
                        )
                else:
                    victims.append(o)
        else:
            if not p.args:
                raise self.ctx.fail(
                    1,
                    "error: You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'",
                )
            for k, target in self.targets(p.args):
                if target is None:
                    if not (p.get("all") or p.get("selector") or p.get("field_selector")):
                        raise self.ctx.fail(1, "error: resource(s) were provided, but no name was specified")
                    ns = None if p.get("all_namespaces") or not k.namespaced else self.ns
                    victims.extend(self.field_filter(k, [o for o in self.list_kind(k, ns) if self.selector_match(o)]))
                else:
                    if p.get("all"):
                        raise self.ctx.fail(1, "error: name cannot be provided when a selector is specified")
                    o = self.find(k, target)
                    if o is None:
                        if not p.get("ignore_not_found"):
                            errors.append(f'Error from server (NotFound): {k.qualified} "{target}" not found')
                    else:
                        victims.append(o)
        if not victims and not errors and not p.get("filename"):
            self.ctx.out("No resources found")
        for o in victims:
            k = _kind_of(o)
            name = o["metadata"]["name"]
            if k.kind == "Namespace" and name in SYSTEM_NAMESPACES and name != "kube-node-lease":
                errors.append(
                    f'Error from server (Forbidden): namespaces "{name}" is forbidden: this namespace may not be deleted'
                )
                continue
            if self.dry == "none" and k.kind != "ReplicaSet":
                self.cluster["objects"] = [x for x in self.cluster["objects"] if x is not o]
                if cascade == "orphan":
                    self._orphan(o)
            elif k.kind == "ReplicaSet" and self.dry == "none":
                # The Deployment recreates its ReplicaSet at once; its pods are recreated too.
                owner = _find(
                    self.cluster, "Deployment", o["metadata"]["namespace"], o["metadata"]["ownerReferences"][0]["name"]
                )
                if owner is not None:
                    for pod in _owned_pods(self.cluster, owner):
                        self.cluster["objects"].remove(pod)
            self.ctx.out(f'{k.ref} "{name}" deleted{self.dry_suffix()}')
        if self.dry == "none":
            self.commit()
        if errors:
            raise self.ctx.fail(1, "\n".join(errors))

    def _cascade(self) -> str:
        """``--cascade``: background (the default), foreground or orphan; kubectl's GetCascadingStrategy.

        Foreground and background end alike here (the dependents go; only the order differs).
        """
        raw = self.p.get("cascade")
        if raw is None:
            return "background"
        if raw in ("background", "foreground", "orphan"):
            return str(raw)
        if raw in ("true", "false"):
            strategy = "background" if raw == "true" else "orphan"
            self.ctx.err(
                f"W0302 09:00:00.000000   12345 helpers.go:726] --cascade={raw} is deprecated (boolean value) and can be replaced with --cascade={strategy}."
            )
            return strategy
        raise self.ctx.fail(
            1, f'error: invalid cascade value ({raw}). Must be "background", "foreground", or "orphan".'
        )

    def _orphan(self, owner: dict[str, Any]) -> None:
        """The garbage collector's orphan finalizer: the owner's pods stay, without their owner reference.

        A Deployment's ReplicaSets are not separate objects here, so its pods are orphaned directly
        (with a real cluster the ReplicaSet would stay and keep them; either way they keep running).
        """
        for pod in _owned_pods(self.cluster, owner):
            pod["emulator"].pop("owner", None)
            pod["metadata"].pop("ownerReferences", None)
            _touch(self.cluster, pod)

    # apply / create / replace ---------------------------------------------------------

    def _store_doc(self, doc: dict[str, Any], k: Kind, name: str, ns: str | None, *, mode: str) -> str:
        """Create or update from a manifest; returns the action word (created/configured/unchanged)."""
        existing = self.find(k, name, ns)
        if k.namespaced and ns is not None and not self.ns_exists(ns):
            raise self.ctx.fail(
                1, f'Error from server (NotFound): error when creating "{name}": namespaces "{ns}" not found'
            )
        new = copy.deepcopy(doc)
        new.pop("status", None)
        meta = new.setdefault("metadata", {})
        for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
            meta.pop(key, None)
        if k.namespaced:
            meta["namespace"] = ns
        if "stringData" in new:
            new.setdefault("data", {}).update(new.pop("stringData"))
        elif k.kind == "Secret" and new.get("data"):
            try:
                new["data"] = {a: base64.b64decode(str(v)).decode() for a, v in new["data"].items()}
            except ValueError:
                raise self.ctx.fail(
                    1,
                    f'Error from server (BadRequest): error when creating "{name}": Secret in version "v1" cannot be handled as a Secret: illegal base64 data',
                ) from None
        if existing is None:
            if mode == "replace":
                raise self.not_found(k, name)
            self.admit({**new, "kind": k.kind})
            if self.dry == "none":
                meta["uid"] = uuid_like(self.cname, k.kind, ns, name, self.ctx.call.seq)
                meta["creationTimestamp"] = iso(self.now)
                self.cluster["rv"] += 1
                meta["resourceVersion"] = str(self.cluster["rv"])
                if k.kind in WORKLOADS:
                    new.setdefault("spec", {})
                    if k.kind != "DaemonSet":
                        new["spec"].setdefault("replicas", 1)
                    _default_template(new)
                    meta["generation"] = 1
                    new["emulator"] = (
                        {"revisions": [copy.deepcopy(new["spec"]["template"])]} if k.kind == "Deployment" else {}
                    )
                if mode == "apply":
                    meta.setdefault("annotations", {})[LAST_APPLIED] = json.dumps(
                        doc, sort_keys=True, separators=(",", ":")
                    )
                new.setdefault("apiVersion", k.api)
                new["kind"] = k.kind
                self.cluster["objects"].append(new)
            return "created"
        if mode == "create":
            raise self.ctx.fail(
                1,
                f'Error from server (AlreadyExists): error when creating "{name}": {k.qualified} "{name}" already exists',
            )
        before = json.dumps(_canonical(existing, self.cname), sort_keys=True)
        updated = copy.deepcopy(existing)
        for key in ("spec", "data", "type"):
            if key in new:
                updated[key] = (
                    deep_merge(existing.get(key), new[key])
                    if mode == "apply" and isinstance(new[key], dict)
                    else new[key]
                )
        for key in ("labels", "annotations"):
            if key in meta:
                updated["metadata"][key] = (
                    {**(existing["metadata"].get(key) or {}), **meta[key]} if mode == "apply" else meta[key]
                )
        if k.kind in WORKLOADS:
            _default_template(updated)
        self.admit(updated)
        after = json.dumps(_canonical(updated, self.cname), sort_keys=True)
        if before == after:
            return "unchanged"
        if self.dry == "none":
            self._replace(existing, updated)
        return "configured" if mode == "apply" else "replaced"

    def _replace(self, existing: dict[str, Any], updated: dict[str, Any]) -> None:
        k = _kind_of(existing)
        if k.kind in WORKLOADS and updated["spec"].get("template") != existing["spec"].get("template"):
            updated["metadata"]["generation"] = int(existing["metadata"].get("generation", 1)) + 1
            if k.kind == "Deployment":
                revs = updated.setdefault("emulator", {}).setdefault("revisions", [])
                revs.append(copy.deepcopy(updated["spec"]["template"]))
        existing.clear()
        existing.update(updated)
        _touch(self.cluster, existing)

    def do_apply(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        if self.p.get("kustomize"):
            raise self.ctx.fail(
                1,
                f"error: must build at directory: not a valid directory: evalsymlink failure on '{self.p.get('kustomize')}' : lstat {self.p.get('kustomize')}: no such file or directory",
            )
        if not self.p.get("filename"):
            raise self.ctx.fail(1, "error: must specify one of -f and -k")
        if self.p.args:
            raise self.ctx.fail(
                1, "error: Unexpected args: " + str(self.p.args) + "\nSee 'kubectl apply -h' for help and examples"
            )
        output = self.p.get("output") or ""
        if output and output not in ("json", "yaml", "name") and not output.startswith("jsonpath="):
            raise self.ctx.fail(
                1,
                f'error: unable to match a printer suitable for the output format "{output}", allowed formats are: json,jsonpath,jsonpath-as-json,jsonpath-file,name,go-template,go-template-file,template,templatefile,yaml',
            )
        applied: list[tuple[dict[str, Any], Kind, str, str | None]] = []
        for doc in self.read_manifests():
            k, name, ns = self.doc_target(doc)
            action = self._store_doc(doc, k, name, ns, mode="apply")
            if output:
                applied.append((doc, k, name, ns))
                continue
            suffix = self.dry_suffix() if action != "unchanged" or self.dry != "none" else ""
            self.ctx.out(f"{k.ref}/{name} {action}{suffix}")
        if self.dry == "none":
            self.commit()
        for i, (doc, k, name, ns) in enumerate(applied):
            self._print_applied(i, doc, k, name, ns, output)

    def _print_applied(self, i: int, doc: dict[str, Any], k: Kind, name: str, ns: str | None, output: str) -> None:
        """``apply -o``: the object as applied — or, in a dry run, as it would be sent.

        A client-side dry run prints the manifest kubectl would send (namespace filled in, the
        last-applied annotation added); otherwise the object as the server returns it.
        """
        stored = self.find(k, name, ns)
        if output == "name":
            self.ctx.out(f"{k.ref}/{name}")
            return
        if self.dry == "none" and stored is not None:
            view = _public(stored, self.cluster, self.now)
        else:
            view = copy.deepcopy(doc)
            view.pop("status", None)
            meta = view.setdefault("metadata", {})
            if ns is not None:
                meta["namespace"] = ns
            sent = json.dumps(view, sort_keys=True, separators=(",", ":"))
            meta.setdefault("annotations", {})[LAST_APPLIED] = sent + "\n"
            if self.dry == "server":
                live = stored["metadata"] if stored is not None else {}
                meta["uid"] = live.get("uid") or uuid_like(self.cname, k.kind, ns, name, "dry-run")
                meta["creationTimestamp"] = live.get("creationTimestamp") or iso(self.now)
                meta["resourceVersion"] = live.get("resourceVersion") or str(self.cluster["rv"])
        if output == "yaml":
            self.ctx.out(("---\n" if i else "") + to_yaml(view), end="")
        elif output == "json":
            self.ctx.out(json.dumps(view, indent=4))
        else:
            self.ctx.out(jsonpath("{" + output.split("=", 1)[1].strip("{}") + "}", view), end="")

    def do_replace(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        if not self.p.get("filename"):
            raise self.ctx.fail(1, "error: must specify --filename to replace")
        for doc in self.read_manifests():
            k, name, ns = self.doc_target(doc)
            if self.p.get("force"):
                old = self.find(k, name, ns)
                if old is not None and self.dry == "none":
                    self.cluster["objects"].remove(old)
                    self.ctx.out(f'{k.ref} "{name}" deleted')
                self._store_doc(doc, k, name, ns, mode="create")
            else:
                self._store_doc(doc, k, name, ns, mode="replace")
            self.ctx.out(f"{k.ref}/{name} replaced{self.dry_suffix()}")
        if self.dry == "none":
            self.commit()

    def do_create(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        p = self.p
        if p.get("filename"):
            for manifest in self.read_manifests():
                k, name, ns = self.doc_target(manifest)
                if self.dry != "client":
                    # A client-side dry run never reaches the API server: an existing object is no error.
                    self._store_doc(manifest, k, name, ns, mode="create")
                self.ctx.out(f"{k.ref}/{name} created{self.dry_suffix()}")
            if self.dry == "none":
                self.commit()
            return
        args = p.args
        if not args:
            raise self.ctx.fail(1, "error: must specify one of -f and -k")
        what, rest = args[0], args[1:]
        if what == "secret":
            if not rest or rest[0] not in ("generic", "docker-registry", "tls"):
                raise self.ctx.fail(
                    1, 'error: unknown command "' + (rest[0] if rest else "") + '" for "kubectl create secret"'
                )
            what, rest = "secret", rest[1:]
        if what == "job" and p.get("from"):
            pass
        elif not rest:
            raise self.ctx.fail(
                1, f"error: exactly one NAME is required, got 0\nSee 'kubectl create {what} -h' for help and examples"
            )
        name = rest[0] if rest else ""
        doc: dict[str, Any]
        ns_meta = {"name": name, "namespace": self.ns}
        if what in ("namespace", "ns"):
            doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        elif what in ("configmap", "cm", "secret"):
            data: dict[str, str] = {}
            for lit in p.get("from_literal") or []:
                key, eq, val = lit.partition("=")
                if not eq:
                    raise self.ctx.fail(1, f"error: invalid literal source {lit}, expected key=value")
                data[key] = val
            for src in p.get("from_file") or []:
                key, eq, path = src.partition("=")
                path = path if eq else key
                f = self.ctx.call.file(path)
                if f.error:
                    raise self.ctx.fail(1, f"error: error reading {path}: no such file or directory")
                data[key if eq else path.rsplit("/", 1)[-1]] = f.content or ""
            kind = "ConfigMap" if what != "secret" else "Secret"
            doc = {"apiVersion": "v1", "kind": kind, "metadata": ns_meta, "data": data}
            if kind == "Secret":
                doc["type"] = p.get("type") or "Opaque"
                doc["stringData"] = doc.pop("data")
        elif what in ("deployment", "deploy"):
            images = p.get("image") or []
            if not images:
                raise self.ctx.fail(1, 'error: required flag(s) "image" not set')
            doc = {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {**ns_meta, "labels": {"app": name}},
                "spec": {
                    "replicas": p.get("replicas") or 1,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "containers": [{"name": img.split("/")[-1].split(":")[0], "image": img} for img in images]
                        },
                    },
                },
            }
        elif what == "job":
            src = p.get("from") or ""
            if not src.startswith(("cronjob/", "cronjobs/", "cj/")):
                raise self.ctx.fail(1, "error: from must be an existing cronjob")
            cj = self.find(BY_KIND["CronJob"], src.split("/", 1)[1])
            if cj is None:
                raise self.not_found(BY_KIND["CronJob"], src.split("/", 1)[1])
            name = (
                name
                or f"{cj['metadata']['name']}-manual-{short_hash(self.ctx.call.seq, length=3, alphabet=SAFE_ALPHABET)}"
            )
            doc = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": name,
                    "namespace": self.ns,
                    "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
                },
                "spec": copy.deepcopy(cj.get("spec", {}).get("jobTemplate", {}).get("spec", {})),
            }
        elif what in ("quota", "resourcequota"):
            hard = dict(item.split("=", 1) for item in (p.get("hard") or "").split(",") if "=" in item)
            doc = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": ns_meta, "spec": {"hard": hard}}
        elif what == "cronjob":
            doc = {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": ns_meta,
                "spec": {
                    "schedule": p.get("schedule") or "",
                    "jobTemplate": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "containers": [{"name": name, "image": (p.get("image") or [""])[0]}],
                                    "restartPolicy": "OnFailure",
                                }
                            }
                        }
                    },
                },
            }
        else:
            raise self.ctx.fail(
                1, f'error: unknown command "{what}" for "kubectl create"\n\nDid you mean this?\n\tconfigmap'
            )
        k = BY_KIND[doc["kind"]]
        if self.dry != "client":
            self._store_doc(doc, k, doc["metadata"]["name"], self.ns if k.namespaced else None, mode="create")
        if p.get("output") in ("yaml", "json"):
            if doc["kind"] == "Secret":
                # kubectl prints what it would send: the values base64-encoded under data.
                doc = {k2: v for k2, v in doc.items() if k2 != "stringData"} | {
                    "data": {a: base64.b64encode(str(v).encode()).decode() for a, v in doc["stringData"].items()}
                }
            self.ctx.out(
                to_yaml(doc) if p.get("output") == "yaml" else json.dumps(doc, indent=4),
                end="" if p.get("output") == "yaml" else "\n",
            )
        else:
            self.ctx.out(f"{k.ref}/{doc['metadata']['name']} created{self.dry_suffix()}")
        if self.dry == "none":
            self.commit()

    def do_run(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        if not self.p.args:
            raise self.ctx.fail(1, "error: NAME is required for run\nSee 'kubectl run -h' for help and examples")
        image = self.p.get("image")
        if not image:
            raise self.ctx.fail(1, 'error: required flag(s) "image" not set')
        name = self.p.args[0]
        doc = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.ns, "labels": {"run": name}},
            "spec": {
                "containers": [{"name": name, "image": image}],
                "restartPolicy": self.p.get("restart") or "Always",
            },
        }
        if self.dry != "client":
            self._store_doc(doc, BY_KIND["Pod"], name, self.ns, mode="create")
        if self.dry == "none":
            self.commit()
        output = self.p.get("output") or ""
        if output:
            # `kubectl run --dry-run=client -o yaml` is how pod manifests get written.
            stored = self.find(BY_KIND["Pod"], name) if self.dry == "none" else None
            view = _public(stored, self.cluster, self.now) if stored else {**doc, "status": {}}
            self._print_object(view, output)
            return
        self.ctx.out(f"pod/{name} created{self.dry_suffix()}")

    def _print_object(self, view: dict[str, Any], output: str) -> None:
        if output == "yaml":
            self.ctx.out(to_yaml(view), end="")
        elif output == "json":
            self.ctx.out(json.dumps(view, indent=4))
        elif output == "name":
            self.ctx.out(_name_ref(view))
        elif output.startswith("jsonpath="):
            self.ctx.out(jsonpath("{" + output.split("=", 1)[1].strip("{}") + "}", view), end="")
        else:
            raise self.ctx.fail(
                1,
                f'error: unable to match a printer suitable for the output format "{output}", allowed formats are: json,jsonpath,jsonpath-as-json,jsonpath-file,name,go-template,go-template-file,template,templatefile,yaml',
            )

    # scale / rollout / set / label / annotate / patch / edit ----------------------------

    def _one_or_more(self, allowed: Sequence[str]) -> list[dict[str, Any]]:
        p = self.p
        objs: list[dict[str, Any]] = []
        if p.get("filename"):
            for d in self.read_manifests():
                k, name, ns = self.doc_target(d)
                o = self.find(k, name, ns)
                if o is None:
                    raise self.not_found(k, name)
                objs.append(o)
        else:
            if not p.args:
                raise self.ctx.fail(1, "error: You must provide one or more resources by argument or filename.")
            for k, target in self.targets(p.args):
                if k.kind not in allowed:
                    raise self.ctx.fail(
                        1,
                        f'error: {k.plural}{"." + k.group if k.group else ""} "{target or ""}" {self._not_supported(k)}',
                    )
                if target is None:
                    if not (p.get("all") or p.get("selector")):
                        raise self.ctx.fail(1, "error: resource(s) were provided, but no name was specified")
                    objs.extend(o for o in self.list_kind(k, self.target_ns(k)) if self.selector_match(o))
                else:
                    o = self.find(k, target)
                    if o is None:
                        raise self.not_found(k, target)
                    objs.append(o)
        return objs

    def _not_supported(self, k: Kind) -> str:
        return {"scale": "cannot be scaled", "rollout": "cannot be rolled out"}.get(self.verb, "is not supported")

    def do_scale(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        replicas = self.p.get("replicas")
        if replicas is None or replicas < 0:
            raise self.ctx.fail(
                1, "error: The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"
            )
        if self.p.args and lookup_kind(self.p.args[0].split("/")[0]) is not None:
            k0 = lookup_kind(self.p.args[0].split("/")[0])
            if k0 is not None and k0.kind not in ("Deployment", "StatefulSet", "ReplicaSet"):
                name = (
                    self.p.args[0].split("/")[1]
                    if "/" in self.p.args[0]
                    else (self.p.args[1] if len(self.p.args) > 1 else "")
                )
                raise self.ctx.fail(
                    1,
                    f'error: no scaler has been implemented for {{"{k0.group}" "{k0.kind}"}}'
                    if name
                    else "error: resource(s) were provided, but no name was specified",
                )
        output = self.p.get("output") or ""
        for o in self._one_or_more(("Deployment", "StatefulSet", "ReplicaSet")):
            # kubectl prints the object it fetched before scaling (its replicas unchanged), or with
            # -o name just its name; the scale itself goes to the scale subresource.
            fetched = _public(o, self.cluster, self.now) if output and output != "name" else None
            cur = self.p.get("current_replicas")
            if cur is not None and cur >= 0 and o["spec"].get("replicas", 1) != cur:
                raise self.ctx.fail(1, f"error: Expected replicas to be {cur}, was {o['spec'].get('replicas', 1)}")
            if self.dry == "none":
                if o["kind"] == "ReplicaSet":
                    raise self.ctx.fail(
                        1,
                        f'error: replicasets.apps "{o["metadata"]["name"]}" is managed by a Deployment; scale the Deployment',
                    )
                o["spec"]["replicas"] = replicas
                _touch(self.cluster, o)
            if fetched is not None:
                self._print_object(fetched, output)
            elif output == "name":
                self.ctx.out(_name_ref(o))
            else:
                self.ctx.out(f"{_name_ref(o)} scaled{self.dry_suffix()}")
        if self.dry == "none":
            self.commit()

    def do_rollout(self) -> None:
        args = self.p.args
        subs = ("history", "pause", "restart", "resume", "status", "undo")
        if not args or args[0] not in subs:
            if not args:
                self.ctx.out(
                    "Manage the rollout of one or many resources.\n\nAvailable Commands:\n  history       View rollout history\n  pause         Mark the provided resource as paused\n  restart       Restart a resource\n  resume        Resume a paused resource\n  status        Show the status of the rollout\n  undo          Undo a previous rollout"
                )
                return
            raise self.ctx.fail(1, f'error: unknown command "{args[0]}" for "kubectl rollout"')
        sub = args[0]
        self.p.args = args[1:]
        if sub in MUTATING_ROLLOUT:
            self.ctx.mutating = True
            self.ctx.dry_run = self.dry != "none"
        objs = self._one_or_more(("Deployment", "StatefulSet", "DaemonSet"))
        for o in objs:
            ref = _name_ref(o)
            if sub == "status":
                self.ctx.saw(self.oid(o))
                n, ready, _ = _workload_counts(self.cluster, o)
                want = o["spec"].get("replicas", n) if o["kind"] != "DaemonSet" else n
                if ready >= want:
                    word = "deployment" if o["kind"] == "Deployment" else o["kind"].lower()
                    self.ctx.out(f'{word} "{o["metadata"]["name"]}" successfully rolled out')
                else:
                    self.ctx.out(
                        f'Waiting for deployment "{o["metadata"]["name"]}" rollout to finish: {ready} of {want} updated replicas are available...'
                    )
                    raise self.ctx.fail(1, "error: timed out waiting for the condition")
            elif sub == "history":
                self.ctx.saw(self.oid(o))
                revs = o.get("emulator", {}).get("revisions") or [o["spec"]["template"]]
                if self.p.get("revision"):
                    r = self.p.get("revision")
                    if not 1 <= r <= len(revs):
                        raise self.ctx.fail(1, f"error: unable to find the specified revision {r}")
                    self.ctx.out(f"{ref} with revision #{r}\nPod Template:\n" + to_yaml(revs[r - 1]))
                    continue
                self.ctx.out(f"{ref} \nREVISION  CHANGE-CAUSE")
                for i, tpl in enumerate(revs, 1):
                    cause = (tpl.get("metadata", {}).get("annotations") or {}).get(
                        "kubernetes.io/change-cause", "<none>"
                    )
                    self.ctx.out(f"{i:<10}{cause}")
                self.ctx.out("")
            elif sub == "restart":
                if o["spec"].get("paused"):
                    raise self.ctx.fail(1, f"error: {ref} can't restart paused deployment (run rollout resume first)")
                if self.dry == "none":
                    tpl = copy.deepcopy(o["spec"]["template"])
                    tpl.setdefault("metadata", {}).setdefault("annotations", {})[
                        "kubectl.kubernetes.io/restartedAt"
                    ] = iso(self.now)
                    new_obj = copy.deepcopy(o)
                    new_obj["spec"]["template"] = tpl
                    self._replace(o, new_obj)
                self.ctx.out(f"{ref} restarted{self.dry_suffix()}")
            elif sub == "undo":
                revs = o.get("emulator", {}).get("revisions") or []
                to = self.p.get("to_revision") or 0
                if o["kind"] != "Deployment":
                    raise self.ctx.fail(1, f'error: no rollbacker has been implemented for "{o["kind"]}"')
                if to and not 1 <= to <= len(revs):
                    raise self.ctx.fail(1, f"error: unable to find specified revision {to} in history")
                if not to and len(revs) < 2:
                    raise self.ctx.fail(1, f"error: no rollout history found for {ref}")
                target = revs[to - 1] if to else revs[-2]
                if target == o["spec"]["template"]:
                    self.ctx.out(
                        f"{ref} skipped rollback (current template already matches revision {to or len(revs) - 1})"
                    )
                    continue
                if self.dry == "none":
                    new_obj = copy.deepcopy(o)
                    new_obj["spec"]["template"] = copy.deepcopy(target)
                    self._replace(o, new_obj)
                self.ctx.out(f"{ref} rolled back{self.dry_suffix()}")
            elif sub in ("pause", "resume"):
                want = sub == "pause"
                if bool(o["spec"].get("paused")) == want:
                    raise self.ctx.fail(1, f"error: {ref} is {'already paused' if want else 'not paused'}")
                if self.dry == "none":
                    if want:
                        o["spec"]["paused"] = True
                    else:
                        o["spec"].pop("paused", None)
                    _touch(self.cluster, o)
                self.ctx.out(f"{ref} {'paused' if want else 'resumed'}{self.dry_suffix()}")
        if self.dry == "none" and sub in MUTATING_ROLLOUT:
            self.commit()

    def do_set(self) -> None:
        args = self.p.args
        if not args or args[0] not in ("image", "env", "resources"):
            raise self.ctx.fail(
                1,
                f'error: unknown command "{args[0] if args else ""}" for "kubectl set"'
                if args
                else "error: set requires a subcommand: image, env or resources",
            )
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        sub = args[0]
        rest = args[1:]
        pairs = [a for a in rest if "=" in a]
        self.p.args = [a for a in rest if "=" not in a]
        if sub == "image" and not pairs:
            raise self.ctx.fail(1, "error: at least one image update is required")
        for o in self._one_or_more(("Deployment", "StatefulSet", "DaemonSet", "Pod", "CronJob", "Job")):
            updated = copy.deepcopy(o)
            if o["kind"] == "Pod":
                containers = updated["spec"]["containers"]
            elif o["kind"] == "CronJob":
                containers = updated["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
            else:
                containers = updated["spec"]["template"]["spec"]["containers"]
            if sub == "image":
                for pair in pairs:
                    cname, _, image = pair.partition("=")
                    hit = [c for c in containers if cname in ("*", c["name"])]
                    if not hit:
                        raise self.ctx.fail(1, f'error: unable to find container named "{cname}"')
                    for c in hit:
                        c["image"] = image
                word = "image updated"
            elif sub == "env":
                for pair in pairs + (self.p.get("env") or []):
                    key, _, val = pair.partition("=")
                    for c in containers:
                        if self.p.get("containers") and c["name"] != self.p.get("containers"):
                            continue
                        env = [e for e in c.get("env", []) if e.get("name") != key]
                        env.append({"name": key, "value": val})
                        c["env"] = env
                word = "env updated"
            else:
                for c in containers:
                    res = c.setdefault("resources", {})
                    for flag, key in (("limits", "limits"), ("requests", "requests")):
                        if self.p.get(flag):
                            res[key] = dict(x.split("=", 1) for x in self.p.get(flag).split(","))
                word = "resource requirements updated"
            if updated == o:
                self.ctx.out(
                    f"{_name_ref(o)} {word} (no change)" if False else f"{_name_ref(o)} {word}{self.dry_suffix()}"
                )
                continue
            if self.dry == "none":
                self._replace(o, updated)
            self.ctx.out(f"{_name_ref(o)} {word}{self.dry_suffix()}")
        if self.dry == "none":
            self.commit()

    def _meta_update(self, field: str, word: str) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        changes = [a for a in self.p.args if "=" in a or a.endswith("-")]
        self.p.args = [a for a in self.p.args if a not in changes]
        if not changes and not self.p.get("list"):
            raise self.ctx.fail(1, f"error: at least one {field[:-1]} update is required")
        if self.p.args and lookup_kind(self.p.args[0].split("/")[0]) is None:
            self.kind(self.p.args[0].split("/")[0])
        overwrite = self.p.get("overwrite")  # handled whether or not a key already has a value
        for o in self._one_or_more([k.kind for k in KINDS]):
            current = dict(o["metadata"].get(field) or {})
            for ch in changes:
                if ch.endswith("-") and "=" not in ch:
                    current.pop(ch[:-1], None)
                    continue
                key, _, val = ch.partition("=")
                if key in current and current[key] != val and not overwrite:
                    raise self.ctx.fail(
                        1, f"error: '{key}' already has a value ({current[key]}), and --overwrite is false"
                    )
                current[key] = val
            if current == (o["metadata"].get(field) or {}):
                self.ctx.out(f"{_name_ref(o)} not {word}")
                continue
            if self.dry == "none":
                o["metadata"][field] = current
                _touch(self.cluster, o)
            self.ctx.out(f"{_name_ref(o)} {word}{self.dry_suffix()}")
        if self.dry == "none":
            self.commit()

    def do_label(self) -> None:
        self._meta_update("labels", "labeled")

    def do_annotate(self) -> None:
        self._meta_update("annotations", "annotated")

    def do_patch(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        raw = self.p.get("patch")
        if self.p.get("patch_file"):
            f = self.ctx.call.file(self.p.get("patch_file"))
            if f.error:
                raise self.ctx.fail(
                    1, f"error: unable to read patch file: open {self.p.get('patch_file')}: no such file or directory"
                )
            raw = f.content
        if not raw:
            raise self.ctx.fail(1, "error: must specify --patch or --patch-file containing the contents of the patch")
        ptype = self.p.get("type")
        if ptype not in ("json", "merge", "strategic"):
            raise self.ctx.fail(1, f'error: --type must be one of [json merge strategic], not "{ptype}"')
        try:
            patch = load_yaml(raw)
        except DocumentError as exc:
            raise self.ctx.fail(1, f'error: unable to parse "{raw[:200]}": yaml: {exc.located}') from None
        for o in self._one_or_more([k.kind for k in KINDS]):
            updated = copy.deepcopy(o)
            body = {k: v for k, v in updated.items() if k != "emulator"}
            secret = o.get("kind") == "Secret"
            if secret:
                # A patch is applied to the object as the API serves it: a Secret's data is base64 on
                # the wire, and stringData is folded into data on write.
                body["data"] = {a: base64.b64encode(str(v).encode()).decode() for a, v in (o.get("data") or {}).items()}
            if ptype == "json":
                if not isinstance(patch, list):
                    raise self.ctx.fail(
                        1,
                        'error: unable to parse "'
                        + raw
                        + '": json: cannot unmarshal object into Go value of type jsonpatch.Patch',
                    )
                body = self._json_patch(body, patch)
            else:
                if not isinstance(patch, dict):
                    raise self.ctx.fail(
                        1,
                        f"Error from server (BadRequest): json: cannot unmarshal {type(patch).__name__} into Go value of type map[string]interface {{}}",
                    )
                body = deep_merge(body, patch)
                if ptype == "strategic":
                    body = self._strategic_lists(o, body, patch)
            if secret:
                body = self._secret_from_wire(body, o)
            body["emulator"] = updated.get("emulator", {})
            if not body.get("emulator"):
                body.pop("emulator")
            output = self.p.get("output") or ""
            self.admit(body)
            if _canonical(body, self.cname) == _canonical(o, self.cname):
                if output:
                    self._print_object(_public(o, self.cluster, self.now), output)
                    continue
                self.ctx.out(f"{_name_ref(o)} patched (no change)")
                continue
            if self.dry == "none":
                self._replace(o, body)
            if output:
                # The patched object as the server returns it (or would, in a dry run).
                self._print_object(_public(o if self.dry == "none" else body, self.cluster, self.now), output)
                continue
            self.ctx.out(f"{_name_ref(o)} patched{self.dry_suffix()}")
        if self.dry == "none":
            self.commit()

    def _secret_from_wire(self, body: dict[str, Any], o: dict[str, Any]) -> dict[str, Any]:
        data = body.get("data") or {}
        if not isinstance(data, dict):
            raise self.ctx.fail(
                1,
                'Error from server (BadRequest): Secret in version "v1" cannot be handled as a Secret: json: cannot unmarshal into Go struct field Secret.data of type map[string][]uint8',
            )
        decoded = {}
        for key, value in data.items():
            try:
                decoded[key] = base64.b64decode(str(value), validate=True).decode()
            except ValueError:
                raise self.ctx.fail(
                    1,
                    f'Error from server (BadRequest): Secret in version "v1" cannot be handled as a Secret: illegal base64 data (key "{key}")',
                ) from None
        string_data = body.pop("stringData", None) or {}
        decoded.update({k: str(v) for k, v in string_data.items()})
        if decoded or "data" in o:
            body["data"] = decoded
        else:
            body.pop("data", None)
        return body

    def _strategic_lists(self, o: dict[str, Any], body: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """Strategic merge: containers (and env) merge by name instead of replacing the list."""

        def merge_named(old: list[Any], new: list[Any]) -> list[Any]:
            out = copy.deepcopy(old)
            for item in new:
                if isinstance(item, dict) and "name" in item:
                    hit = next((x for x in out if isinstance(x, dict) and x.get("name") == item["name"]), None)
                    if hit is not None:
                        for key, val in item.items():
                            if key == "env" and isinstance(val, list):
                                hit["env"] = merge_named(hit.get("env", []), val)
                            else:
                                hit[key] = val
                        continue
                out.append(item)
            return out

        for path in (("spec", "template", "spec", "containers"), ("spec", "containers")):
            p_node: Any = patch
            o_node: Any = o
            for key in path:
                p_node = p_node.get(key) if isinstance(p_node, dict) else None
                o_node = o_node.get(key) if isinstance(o_node, dict) else None
            if isinstance(p_node, list) and isinstance(o_node, list):
                target = body
                for key in path[:-1]:
                    target = target[key]
                target[path[-1]] = merge_named(o_node, p_node)
        return body

    def _json_patch(self, doc: dict[str, Any], ops: list[Any]) -> dict[str, Any]:
        doc = copy.deepcopy(doc)
        for op in ops:
            if not isinstance(op, dict) or "op" not in op or "path" not in op:
                raise self.ctx.fail(1, "error: unable to parse patch: missing op or path")
            parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].lstrip("/").split("/")]
            parent: Any = doc
            for key in parts[:-1]:
                parent = (
                    parent[int(key)]
                    if isinstance(parent, list)
                    else parent.setdefault(key, {})
                    if op["op"] == "add"
                    else parent.get(key)
                )
                if parent is None:
                    raise self.ctx.fail(
                        1, "The request is invalid: the server rejected our request due to an error in our request"
                    )
            last = parts[-1]
            if op["op"] in ("add", "replace"):
                if isinstance(parent, list):
                    if last == "-":
                        parent.append(op.get("value"))
                    elif op["op"] == "add":
                        parent.insert(int(last), op.get("value"))
                    else:
                        parent[int(last)] = op.get("value")
                else:
                    if op["op"] == "replace" and last not in parent:
                        raise self.ctx.fail(
                            1, "The request is invalid: the server rejected our request due to an error in our request"
                        )
                    parent[last] = op.get("value")
            elif op["op"] == "remove":
                try:
                    del parent[int(last) if isinstance(parent, list) else last]
                except (KeyError, IndexError):
                    raise self.ctx.fail(
                        1, "The request is invalid: the server rejected our request due to an error in our request"
                    ) from None
            else:
                raise self.ctx.fail(1, f"error: unexpected kind: {op['op']}")
        return doc

    def do_edit(self) -> None:
        self.ctx.mutating = True
        objs = self._one_or_more([k.kind for k in KINDS if k.kind != "ReplicaSet"])
        for o in objs:
            public = _public(o, self.cluster, self.now)
            public.pop("status", None)
            text = (
                "# Please edit the object below. Lines beginning with a '#' will be ignored,\n# and an empty file will abort the edit. If an error occurs while saving this file will be\n# reopened with the relevant failures.\n#\n"
                + to_yaml(public)
            )
            edited = self.ctx.call.edit(f"kubectl-edit-{o['metadata']['name']}.yaml", text)
            if edited is None:
                raise self.ctx.fail(1, 'error: there was a problem with the editor "vi"')
            body = "\n".join(line for line in edited.splitlines() if not line.lstrip().startswith("#"))
            if not body.strip():
                self.ctx.out("Edit cancelled, no changes made.")
                self.ctx.declined = True
                continue
            try:
                doc = load_yaml(body)
            except DocumentError as exc:
                raise self.ctx.fail(
                    1, f'error: {o["kind"].lower()}s "{o["metadata"]["name"]}" is invalid: yaml: {exc.located}'
                ) from None
            if not isinstance(doc, dict) or doc.get("metadata", {}).get("name") != o["metadata"]["name"]:
                raise self.ctx.fail(1, "error: At least one of apiVersion, kind and name was changed")
            if edited == text:
                self.ctx.out("Edit cancelled, no changes made.")
                self.ctx.declined = True
                continue
            k, name, ns = _kind_of(o), o["metadata"]["name"], o["metadata"].get("namespace")
            self._store_doc(doc, k, name, ns, mode="replace")
            self.ctx.out(f"{_name_ref(o)} edited")
        self.commit()

    # nodes ----------------------------------------------------------------------------

    def _nodes_arg(self) -> list[dict[str, Any]]:
        if not self.p.args and not self.p.get("selector"):
            raise self.ctx.fail(
                1, f"error: USAGE: {self.verb} NODE [flags]\nSee 'kubectl {self.verb} -h' for help and examples"
            )
        out = []
        if self.p.get("selector"):
            out = [n for n in _list(self.cluster, "Node", None) if self.selector_match(n)]
        for a in self.p.args:
            name = a.split("/", 1)[1] if "/" in a else a
            n = _find(self.cluster, "Node", None, name)
            if n is None:
                raise self.ctx.fail(1, f'Error from server (NotFound): nodes "{name}" not found')
            out.append(n)
        return out

    def _cordon(self, node: dict[str, Any], value: bool) -> None:
        word = "cordoned" if value else "uncordoned"
        if bool(node.get("spec", {}).get("unschedulable")) == value:
            self.ctx.out(f"node/{node['metadata']['name']} already {word}")
            return
        if self.dry == "none":
            if value:
                node.setdefault("spec", {})["unschedulable"] = True
            else:
                node.setdefault("spec", {}).pop("unschedulable", None)
            _touch(self.cluster, node)
        self.ctx.out(f"node/{node['metadata']['name']} {word}{self.dry_suffix()}")

    def do_cordon(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        for n in self._nodes_arg():
            self._cordon(n, True)

    def do_uncordon(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        for n in self._nodes_arg():
            self._cordon(n, False)
        if self.dry == "none":
            self.commit()

    def do_drain(self) -> None:
        self.ctx.mutating = True
        self.ctx.dry_run = self.dry != "none"
        # Read up front: each guards a kind of pod the node may not have, and is no less given.
        ignore_daemonsets = bool(self.p.get("ignore_daemonsets"))
        force = bool(self.p.get("force"))
        if self.p.get("delete_local_data"):
            self.ctx.err(
                "Flag --delete-local-data has been deprecated, This option is deprecated and will be deleted. Use --delete-emptydir-data."
            )
        delete_emptydir = bool(self.p.get("delete_emptydir_data") or self.p.get("delete_local_data"))
        # Eviction and deletion end the same here: the emulator's evictions are never refused by a
        # PodDisruptionBudget, so --disable-eviction (delete instead of evict) changes nothing more.
        self.p.get("disable_eviction")
        for node in self._nodes_arg():
            name = node["metadata"]["name"]
            self._cordon(node, True)
            pods = [p for p in self.cluster["objects"] if p["kind"] == "Pod" and p["spec"].get("nodeName") == name]
            daemon = [p for p in pods if p.get("emulator", {}).get("owner", [""])[0] == "DaemonSet"]
            bare = [p for p in pods if "owner" not in p.get("emulator", {})]
            local = [p for p in pods if p not in daemon and self._has_emptydir(p)]
            problems = []
            if daemon and not ignore_daemonsets:
                problems.append(
                    "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): "
                    + ", ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in daemon)
                )
            if bare and not force:
                problems.append(
                    "cannot delete Pods declare no controller (use --force to override): "
                    + ", ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in bare)
                )
            if local and not delete_emptydir:
                problems.append(
                    "cannot delete Pods with local storage (use --delete-emptydir-data to override): "
                    + ", ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in local)
                )
            if problems:
                self.commit() if self.dry == "none" else None
                raise self.ctx.fail(
                    1,
                    f'error: unable to drain node "{name}" due to error: {", ".join(problems)}, continuing command...\nThere are pending nodes to be drained:\n {name}\n'
                    + "\n".join("error: " + p for p in problems),
                )
            if daemon:
                self.ctx.err(
                    "Warning: ignoring DaemonSet-managed Pods: "
                    + ", ".join(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in daemon)
                )
            evict = [p for p in pods if p not in daemon]
            for p in evict:
                self.ctx.out(f"evicting pod {p['metadata']['namespace']}/{p['metadata']['name']}{self.dry_suffix()}")
            for p in evict:
                if self.dry == "none":
                    self.cluster["objects"].remove(p)
                self.ctx.out(f"pod/{p['metadata']['name']} evicted")
            self.ctx.out(f"node/{name} drained{self.dry_suffix()}")
        if self.dry == "none":
            self.commit()

    def _has_emptydir(self, pod: dict[str, Any]) -> bool:
        """A pod with an emptyDir volume (its own, or its controller's template's): drain's "local storage"."""
        volumes = pod.get("spec", {}).get("volumes") or []
        owner = pod.get("emulator", {}).get("owner")
        if owner:
            o = _find(self.cluster, owner[0], pod["metadata"].get("namespace"), owner[1])
            volumes = (
                volumes or (((o or {}).get("spec") or {}).get("template") or {}).get("spec", {}).get("volumes") or []
            )
        return any(isinstance(v, dict) and "emptyDir" in v for v in volumes)

    # diff -----------------------------------------------------------------------------

    def do_diff(self) -> None:
        if not self.p.get("filename"):
            raise self.ctx.fail(1, "error: one of -f or -k must be specified")
        changed = False
        for doc in self.read_manifests():
            k, name, ns = self.doc_target(doc)
            o = self.find(k, name, ns)
            live = to_yaml(_strip_public(_public(o, self.cluster, self.now))) if o else ""
            merged = copy.deepcopy(o) if o else copy.deepcopy(doc)
            if o:
                for key in ("spec", "data"):
                    if key in doc:
                        merged[key] = deep_merge(o.get(key), doc[key]) if isinstance(doc[key], dict) else doc[key]
                for key in ("labels", "annotations"):
                    if key in doc.get("metadata", {}):
                        merged["metadata"][key] = {**(o["metadata"].get(key) or {}), **doc["metadata"][key]}
            want = to_yaml(_strip_public(_public(merged, self.cluster, self.now)))
            if live != want:
                changed = True
                label = f"{k.api.replace('/', '.')}.{k.kind}.{ns + '.' if ns else ''}{name}"
                for line in difflib.unified_diff(
                    live.splitlines(),
                    want.splitlines(),
                    f"/tmp/LIVE-123/{label}",  # noqa: S108 - the labels kubectl diff prints, not files
                    f"/tmp/MERGED-123/{label}",  # noqa: S108
                    lineterm="",
                ):
                    self.ctx.out(line)
        if changed:
            raise ToolExit(1)


def _strip_public(o: dict[str, Any]) -> dict[str, Any]:
    o = copy.deepcopy(o)
    o.pop("status", None)
    o.get("metadata", {}).pop("resourceVersion", None)
    return o


def _arg_error(e: ArgError, verb: str) -> str:
    if e.kind == "unknown":
        return f"error: unknown flag: {e.flag}\nSee 'kubectl {verb or ''} --help' for usage.".replace(
            "kubectl  ", "kubectl "
        )
    if e.kind == "unknown_short":
        return f"error: unknown shorthand flag: '{e.flag}' in {e.detail}\nSee 'kubectl {verb} --help' for usage."
    if e.kind == "needs_value":
        return f"error: flag needs an argument: {e.flag!r}\nSee 'kubectl {verb} --help' for usage.".replace("'", "'")
    if e.kind == "bad_value":
        detail = (
            e.detail
            if "ParseBool" in e.detail
            else f'invalid argument "{e.detail}" for "{e.flag}" flag: strconv.ParseInt: parsing "{e.detail}": invalid syntax'
        )
        return f"error: {detail}\nSee 'kubectl {verb} --help' for usage."
    return f"error: {e}"


def input_too_large(call: Call, path: str) -> Result:
    """A manifest over the cap: what the API server answers a request body over its limit."""
    shown = "STDIN" if path == "-" else call.shown(path)
    return Result(
        stderr=f'Error from server (RequestEntityTooLarge): error when creating "{shown}": '
        f"Request entity too large: limit is {MAX_FILE}\n",
        exit_code=1,
        mutating=call.argv[:1] != ["get"],
    )


def run(state: dict[str, Any], call: Call) -> Result:
    ctx = Ctx(state, call)
    if SECTION not in state:
        return ctx.finish(
            ctx.fail(
                1, "The connection to the server localhost:8080 was refused - did you specify the right host or port?"
            )
        )
    argv = list(call.argv)
    # The verb is the first argument that is not a flag or a flag's value.
    verb = ""
    global_values = {n for o in GLOBAL if o.kind not in ("bool", "count") for n in o.names}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("-"):
            if a in global_values:
                i += 2
                continue
            i += 1
            continue
        verb = a
        del argv[i]
        break
    if not verb:
        if "--help" in argv or "-h" in argv or not argv:
            ctx.out(USAGE, end="")
            return ctx.result(0)
        if "--version" in argv:
            ctx.out(f"Client Version: {CLIENT_VERSION}")
            return ctx.result(0)
    if verb not in VERBS:
        suggestion = difflib.get_close_matches(verb, list(VERBS), n=1)
        hint = f"\n\nDid you mean this?\n\t{suggestion[0]}\n" if suggestion else "\n"
        return ctx.finish(ctx.fail(1, f'error: unknown command "{verb}" for "kubectl"{hint}'))
    try:
        parsed = parse_gnu(argv, [*GLOBAL, *VERBS[verb]])
    except ArgError as e:
        if verb in MUTATING:
            ctx.mutating = True
        return ctx.finish(ctx.fail(1, _arg_error(e, verb)))
    if parsed.get("help"):
        ctx.out(verb_help(verb), end="")
        return ctx.result(0)
    try:
        k = _K(ctx, verb, parsed)
        k.run()
    except ToolExit as exc:
        return ctx.finish(exc)
    return ctx.result(0)


COMMANDS: dict[str, Callable[[dict[str, Any], Call], Result]] = {"kubectl": run}
