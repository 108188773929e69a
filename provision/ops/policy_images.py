"""PRV-IMG-001: a container that holds the host runs an image pinned by digest.

A privileged container, or one in the host's PID, network or IPC namespace, is root on every node
it lands on; a tag (``ubuntu:24.04``) can be re-pointed by whoever controls the registry or the
tag, so such a container's image must be named by its content (``repo[:tag]@sha256:<64 hex>``;
the reference grammar: https://github.com/distribution/reference/blob/main/reference.go, and
Kubernetes "Images": https://kubernetes.io/docs/concepts/containers/images/#image-names).
The rule walks every pod template of every Kubernetes object in the graph.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from provision.ops.policy_rules import Context, Resource

#: ``...@sha256:`` and 64 lowercase hex digits.
PINNED = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
_HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")


def _pod_specs(value: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    if depth > 40:
        return
    if isinstance(value, Mapping):
        if isinstance(value.get("containers"), list):
            yield value
        for v in value.values():
            yield from _pod_specs(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from _pod_specs(v, depth + 1)


def holds_the_host(pod: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    """The container is privileged or shares one of the host's namespaces."""
    ctx = container.get("securityContext")
    privileged = isinstance(ctx, Mapping) and ctx.get("privileged") is True
    return privileged or any(pod.get(k) is True for k in _HOST_NAMESPACES)


def check_pinned_images(r: Resource, ctx: Context) -> list[str]:
    """Every host-holding container of ``r``'s pod templates names its image by digest."""
    if not r.type.startswith("kubernetes:"):
        return []
    out = []
    for pod in _pod_specs(dict(r.inputs)):
        for key in ("initContainers", "containers"):
            for c in pod.get(key) or []:
                if not isinstance(c, Mapping) or not holds_the_host(pod, c):
                    continue
                image = c.get("image")
                if not (isinstance(image, str) and PINNED.match(image)):
                    out.append(
                        f"{key[:-1]} {c.get('name')!r} holds the host (privileged or host namespaces) but its image "
                        f"{image!r} is not pinned by digest (@sha256:...)"
                    )
    return out
