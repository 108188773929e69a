"""The valid base specs, the mutation helper and the ``Case`` row of the bad-spec table (see ``__init__``)."""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import Any

from provision.catalog import load_catalog
from provision.planning.cost import estimate
from provision.planning.resolve import resolve
from provision.spec import load_spec
from provision.spec.errors import BudgetError, Problem, ProblemCollector, SpecError

CATALOG = load_catalog()


def _first_region(cloud: str, gpu: str) -> str:
    """The alphabetically first region the catalog sells ``gpu`` in on ``cloud`` (Alibaba's rows change often)."""
    regions = sorted({r for o in CATALOG.instances_for(cloud, gpu) for r in o.regions})
    return regions[0] if regions else "no-region-in-catalog"


def public_key(seed: int = 7, comment: str = "dev@laptop") -> str:
    """A well-formed OpenSSH ed25519 public key line (the wire encoding adapters may decode)."""
    blob = b"".join(len(x).to_bytes(4, "big") + x for x in (b"ssh-ed25519", bytes([seed]) * 32))
    return f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"


VALID_KEY = public_key()
ALIBABA_REGION = _first_region("alibaba", "H20")
_ACCESS = {"ssh_public_keys": [VALID_KEY]}

BASES: dict[str, dict[str, Any]] = {
    "aws": {"name": "llm-train", "cloud": "aws", "region": "us-east-1", "gpu": "H100", "gpus": 64, "access": _ACCESS},
    "gcp": {"name": "llm-train", "cloud": "gcp", "region": "us-central1", "gpu": "H100", "gpus": 64, "access": _ACCESS},
    "azure": {"name": "llm-train", "cloud": "azure", "region": "eastus", "gpu": "H100", "gpus": 64, "access": _ACCESS},
    # The catalog records no Alibaba zones, and the Alibaba adapter needs one (its vSwitch is zonal).
    "alibaba": {
        "name": "llm-train",
        "cloud": "alibaba",
        "region": ALIBABA_REGION,
        "zone": f"{ALIBABA_REGION}-k",
        "gpu": "H20",
        "gpus": 64,
        "access": _ACCESS,
    },
}

DELETE = object()
#: Fake private keys. The second line of each is "key material" that must never be echoed.
PRIVATE_KEYS = {
    "openssh": "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n",
    "rsa-pem": "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAsecretRSAmaterialDoNotEcho0123456789abcdefABCDEF\n"
    "-----END RSA PRIVATE KEY-----",
    "putty": "PuTTY-User-Key-File-3: ssh-ed25519\n"
    "AAAAC3NzaC1lZDI1NTE5AAAAIPuttySecretMaterialDoNotEcho\n"
    "Private-Lines: 1\n",
    "one-line": "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEOneLineSecretDoNotEcho "
    "-----END OPENSSH PRIVATE KEY-----",
}
SECRET_MATERIAL = {
    "openssh": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    "rsa-pem": "MIIEowIBAAKCAQEAsecretRSAmaterial",
    "putty": "AAAAC3NzaC1lZDI1NTE5AAAAIPuttySecret",
    "one-line": "b3BlbnNzaC1rZXktdjEOneLineSecret",
}


def mutate(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``base`` with ``changes`` applied (``"a.b": v`` sets nested keys; ``DELETE`` removes)."""
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        if value is DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = copy.deepcopy(value)
    return out


@dataclass(frozen=True)
class Case:
    id: str
    cloud: str
    changes: dict[str, Any]
    paths: tuple[str, ...]
    rule: str | None = None
    fix: str | None = None
    stage: str = "spec"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> dict[str, Any]:
        return mutate(BASES[self.cloud], self.changes)


def C(  # noqa: N802  # reads like a table row
    id: str,  # noqa: A002
    cloud: str,
    changes: dict[str, Any],
    paths: str | tuple[str, ...],
    rule: str | None = None,
    fix: str | None = None,
    stage: str = "spec",
) -> Case:
    return Case(id, cloud, changes, (paths,) if isinstance(paths, str) else paths, rule, fix, stage)


def outcome(data: Any) -> tuple[str, tuple[Problem, ...]]:
    """Which stage refuses ``data`` and with which problems: spec, catalog, budget, or ok."""
    try:
        spec = load_spec(data)
    except SpecError as e:
        return "spec", e.problems
    found = ProblemCollector()
    res = resolve(spec, CATALOG, found)
    if found:
        return "catalog", found.problems
    assert res.offer is not None and res.nodes is not None
    storage = (res.storage, res.storage_size_gib, res.storage_throughput) if res.storage else None
    try:
        estimate(spec, CATALOG, res.offer, res.nodes, storage)
    except BudgetError as e:
        return "budget", e.problems
    return "ok", ()
