"""The mocked Kubernetes API server: answers for ``kubernetes:*`` resources (Helm releases, objects, CRs).

Deterministic: uids derive from the logical name. It refuses what an API server refuses before
anything exists, so a bad object fails under mocks as it would for real:

* ``metadata.name`` must be a DNS-1123 subdomain (at most 253 characters; Namespaces,
  Services and Helm releases: a DNS-1123 label of at most 63, Helm release names 53)
  (Kubernetes "Object Names and IDs"; Helm ``helm install`` name validation);
* namespaced kinds need ``metadata.namespace``; cluster-scoped kinds must not set one;
* labels: keys of at most 63 characters (plus an optional DNS prefix), values of at most 63
  characters of ``[A-Za-z0-9_.-]`` (Kubernetes "Labels and Selectors");
* Helm releases need a pinned ``version``.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi

from provision.clouds.mocking import MockContext

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
#: Kinds that live in a namespace (everything else we create is cluster-scoped).
NAMESPACED = {
    "ServiceAccount",
    "PersistentVolumeClaim",
    "DaemonSet",
    "Deployment",
    "ConfigMap",
    "Secret",
    "LocalQueue",
    "CronJob",
    "Job",
    "TrainJob",
    "TrainingRuntime",
    "Service",
}
#: Kinds whose names must be DNS-1123 labels, not subdomains.
LABEL_NAMED = {"Namespace", "Service", "Release"}


class KubernetesApiError(ValueError):
    """What the API server (or Helm) would answer for an invalid object."""


def _kind(typ: str) -> str:
    return typ.rsplit(":", 1)[-1]


def check_object(typ: str, name: str, inputs: dict[str, Any]) -> None:
    """Raise :class:`KubernetesApiError` for an object the API server would refuse (module docstring)."""
    kind = _kind(typ)
    if kind == "Release":
        rel = str(inputs.get("name") or "")
        if not rel or len(rel) > 53 or not _LABEL.match(rel):
            raise KubernetesApiError(f"{typ} {name}: release name {rel!r} must be a DNS-1123 label of <= 53 characters")
        if not inputs.get("version"):
            raise KubernetesApiError(f"{typ} {name}: chart {inputs.get('chart')!r} has no pinned version")
        return
    meta = inputs.get("metadata") or {}
    obj = str(meta.get("name") or "")
    limit, pattern = (63, _LABEL) if kind in LABEL_NAMED else (253, _SUBDOMAIN)
    if not obj or len(obj) > limit or not pattern.match(obj):
        raise KubernetesApiError(f"{typ} {name}: metadata.name {obj!r} is not a valid {kind} name")
    if kind in NAMESPACED and not meta.get("namespace"):
        raise KubernetesApiError(f"{typ} {name}: a {kind} needs metadata.namespace")
    if kind not in NAMESPACED and meta.get("namespace"):
        raise KubernetesApiError(f"{typ} {name}: a {kind} is cluster-scoped; drop metadata.namespace")
    for key, value in (meta.get("labels") or {}).items():
        local = key.rsplit("/", 1)[-1]
        if len(local) > 63 or not _LABEL_VALUE.match(local) or len(str(value)) > 63 or not _LABEL_VALUE.match(value):
            raise KubernetesApiError(f"{typ} {name}: label {key}={value!r} breaks Kubernetes label rules")


def resource(args: pulumi.runtime.MockResourceArgs, ctx: MockContext) -> tuple[str, dict[str, Any]]:
    """The id and outputs the API server (or Helm) returns for one object."""
    typ, inputs = args.typ, dict(args.inputs)
    check_object(typ, args.name, inputs)
    out: dict[str, Any] = dict(inputs)
    if _kind(typ) == "Release":
        ns, rel = inputs.get("namespace") or "default", inputs["name"]
        out["status"] = {
            "name": rel,
            "namespace": ns,
            "chart": str(inputs["chart"]).rsplit("/", 1)[-1],
            "version": inputs["version"],
            "revision": 1,
            "status": "deployed",
        }
        return f"{ns}/{rel}", out
    meta = dict(inputs.get("metadata") or {})
    meta["uid"] = "-".join(ctx.hex_id(args.name + s, n) for s, n in (("a", 8), ("b", 4), ("c", 4), ("d", 4), ("e", 12)))
    meta.setdefault("resourceVersion", "1")
    out["metadata"] = meta
    ns = meta.get("namespace")
    rid = f"{ns}/{meta['name']}" if ns else str(meta["name"])
    return rid, out


INVOKES: dict[str, Any] = {}
