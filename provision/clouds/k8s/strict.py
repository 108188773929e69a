"""Strict rules for Kubernetes objects and Helm releases: what the API server (or Helm) refuses.

The rules are those of :func:`provision.clouds.k8s.mocks.check_object` (object names, namespaces,
labels, pinned charts), reported as violations with their source so the strict mocked cloud lists
them beside the clouds' own rules before the mocked API server would refuse the object.
"""

from __future__ import annotations

from typing import Any

from provision.clouds.k8s.mocks import KubernetesApiError, check_object
from provision.clouds.strict import Resource, Violation

SOURCE = (
    'kubernetes.io/docs/concepts/overview/working-with-objects/names ("Object Names and IDs"), '
    '"Labels and Selectors", and Helm\'s release-name validation'
)


def check(res: Resource, ctx: Any) -> list[Violation]:
    """The object's violation, if the API server would refuse it (one per object: the first rule broken)."""
    try:
        check_object(res.type, res.name, res.inputs)
    except KubernetesApiError as e:
        return [Violation(res.type, res.name, "metadata", None, str(e), SOURCE)]
    return []


class _AllKubernetesTypes:
    """Every ``kubernetes:*`` type token: each goes through :func:`check_object`."""

    def __contains__(self, type_token: object) -> bool:
        return isinstance(type_token, str) and type_token.startswith("kubernetes:")


#: Every type this module checks.
KNOWN = _AllKubernetesTypes()
