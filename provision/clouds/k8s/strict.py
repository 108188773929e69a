"""Strict rules for Kubernetes objects and Helm releases: what the API server (or Helm) refuses.

The rules are those of :func:`provision.clouds.k8s.mocks.check_object` (object names, namespaces,
labels, pinned charts), reported as violations with their source so the strict mocked cloud lists
them beside the clouds' own rules before the mocked API server would refuse the object.
"""

from __future__ import annotations

from typing import Any

from provision.clouds.k8s.mocks import KubernetesApiError, check_object
from provision.clouds.strict import Coverage, Leaf, Resource, Violation
from provision.clouds.strict import account as account_leaves

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


_SCHEMA_WAIVER = (
    "the object's body is validated by the cluster's API server against the kind's OpenAPI schema (or the CRD "
    "installed by its pinned Helm chart) at apply; the mocked API server holds no schemas. Names, namespaces, "
    "labels and chart pins are checked here"
)

#: What :func:`check_object` checks, and what is left to the real API server.
COVERAGE = Coverage(
    checked={
        "metadata.name": SOURCE,
        "metadata.namespace": SOURCE,
        "metadata.labels": SOURCE,
        "name": SOURCE,  # a Helm release's name
        "version": SOURCE,  # a Helm chart's pinned version
    },
    waived={
        "apiVersion": "the Pulumi Kubernetes SDK sets it from the type token",
        "kind": "the Pulumi Kubernetes SDK sets it from the type token",
        "*": _SCHEMA_WAIVER,
    },
)


def account(res: Resource, ctx: Any) -> list[Leaf]:
    """How every input leaf of one object is accounted for."""
    return account_leaves(res, {}, COVERAGE)
