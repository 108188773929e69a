"""``provision check``: policy rules over a cluster's resource graph, and the same rules as a Pulumi policy pack.

The graph is what the Pulumi program registers under the (strict) mocked cloud: every custom
resource with its type token and the inputs the engine sends. Each rule of
:mod:`provision.ops.policy_rules` runs on every resource; a violation names the rule (stable
id, rationale, checkov/tfsec/KICS ids) and the resource it failed on. A violation is a policy
refusal: ``provision check`` exits 3.

The rules also ship as a Pulumi policy pack (``provision/ops/policy_pack``)::

    pack=$(python -c 'import os, provision.ops.policy_pack as p; print(os.path.dirname(p.__file__))')
    pulumi preview --policy-pack "$pack"      # or pulumi up --policy-pack "$pack"

:func:`pulumi_policies` builds its ``ResourceValidationPolicy`` s, which Pulumi runs on each
resource before creating it; the spec's opt-ins become the pack's config
(``allow_world_ssh``, ``public_head_node``, ``gcp_os_login``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from provision.ops.policy_images import check_pinned_images
from provision.ops.policy_lifetime import check_lifetime, lifetime_graph
from provision.ops.policy_rules import (
    Context,
    Resource,
    Rule,
    check_azure_inbound_default,
    check_encryption,
    check_identity,
    check_imds,
    check_os_login,
    check_public_ip,
    check_secrets,
    check_ssh_keys_only,
    check_tags,
    check_world_ingress,
)
from provision.spec.models import ClusterSpec

if TYPE_CHECKING:
    from provision.engine.mockrun import PreviewResult

RULES: tuple[Rule, ...] = (
    Rule(
        "PRV-IMDS-001",
        "Instance metadata requires session tokens (IMDSv2 on AWS, token mode on Alibaba)",
        "Without tokens an SSRF in any node process reads the node role's credentials from the metadata service.",
        ("CKV_AWS_79", "AVD-AWS-0028", "KICS c306ac53-ee5b-41d3-86a9-0fd2722b4e67"),
        check_imds,
    ),
    Rule(
        "PRV-NET-001",
        "No public IP on any node unless access.public_head_node (then node 0 only)",
        "Nodes run as root-capable training hosts; a public address exposes every listening port to scans.",
        ("CKV_AWS_88", "AVD-AWS-0009", "KICS 5a2486aa-facf-477d-a5c1-b010789459ce", "CKV_GCP_40", "AVD-GCP-0031"),
        check_public_ip,
    ),
    Rule(
        "PRV-NET-002",
        "No SSH (unless access.allow_world_ssh) and never all ports from the internet",
        "SSH from 0.0.0.0/0 is brute-forced within minutes; all-ports ingress exposes NCCL, Ray and Jupyter ports.",
        (
            "CKV_AWS_24",
            "CKV_AWS_277",
            "AVD-AWS-0107",
            "KICS 65905cec-d691-4320-b320-2000436cb696",
            "KICS 4728cd65-a20c-49da-8b31-9c08b423e4db",
            "CKV_GCP_2",
            "CKV_AZURE_10",
            "CKV_ALI_2",
        ),
        check_world_ingress,
    ),
    Rule(
        "PRV-NET-003",
        "Azure node NSGs deny all inbound traffic that no rule allows, peered networks included",
        "Azure's default AllowVnetInBound rule admits every port from peered VNets and VPN gateways.",
        (),
        check_azure_inbound_default,
    ),
    Rule(
        "PRV-ENC-001",
        "Disks and filesystems are encrypted at rest",
        "Snapshots and detached volumes outlive the cluster; unencrypted ones leak training data and checkpoints.",
        (
            "CKV_AWS_8",
            "CKV_AWS_3",
            "AVD-AWS-0131",
            "CKV_ALI_7",
            "CKV_ALI_32",
            "KICS 39750e32-3fe9-453b-8c33-dd277acdb2cc",
        ),
        check_encryption,
    ),
    Rule(
        "PRV-IAM-001",
        "The node identity has least privilege on every cloud",
        "Every process on a node holds its identity; broad roles turn one compromised job into an account takeover.",
        (
            "CKV_AWS_274",
            "CKV_AWS_62",
            "CKV_AWS_63",
            "AVD-AWS-0057",
            "CKV_GCP_30",
            "CKV_GCP_31",
            "AVD-GCP-0044",
            "KICS 3cb4af0b-056d-4fb1-8b95-fdc4593625ff",
            "KICS bc280331-27b9-4acb-a010-018e8098aa5d",
        ),
        check_identity,
    ),
    Rule(
        "PRV-GCP-001",
        "GCP nodes use OS Login only (no project-wide or static SSH keys)",
        "OS Login ties SSH to IAM identities that are audited and revoked centrally; static keys are neither.",
        (
            "CKV_GCP_32",
            "CKV_GCP_34",
            "AVD-GCP-0030",
            "AVD-GCP-0036",
            "KICS 32ecd6eb-0711-421f-9627-1a28d9eff217",
        ),
        check_os_login,
    ),
    Rule(
        "PRV-SSH-001",
        "Azure and Alibaba nodes accept SSH keys only (no passwords)",
        "Passwords are guessable and end up in state and logs; keys are neither.",
        ("CKV_AZURE_49", "CKV_AZURE_149", "CKV_AZURE_178", "AVD-AZU-0039", "KICS dafe30ec-325d-4516-85d1-e8e6776f012c"),
        check_ssh_keys_only,
    ),
    Rule(
        "PRV-SEC-001",
        "No private key or token in user data or any other input (they land in plain state)",
        "User data is readable by every process on the node and anyone with describe rights; state is stored in plain.",
        ("CKV_AWS_46", "AVD-AWS-0029", "CKV_AZURE_45", "AVD-AZU-0037"),
        check_secrets,
    ),
    Rule(
        "PRV-TAG-001",
        "Every taggable resource carries provision-cluster, provision-owner and provision-expires-at",
        "The reaper and cost reports find a cluster by these tags, even after its Pulumi state is lost.",
        (),
        check_tags,
    ),
    Rule(
        "PRV-IMG-001",
        "Every container that holds the host (privileged or host namespaces) runs an image pinned by digest",
        "A re-pointed tag runs its new content as root on every GPU node; a digest names the content itself.",
        ("CKV_K8S_43",),
        check_pinned_images,
    ),
    Rule(
        "PRV-TTL-001",
        "Every VM of an ephemeral cluster has a cloud-side lifetime",
        "A crashed CI runner never runs `down`; only a lifetime enforced by the cloud stops the GPU bill.",
        (),
        check_lifetime,
        graph=lifetime_graph,
    ),
)


def rule(rule_id: str) -> Rule:
    """The rule with ``rule_id``."""
    for r in RULES:
        if r.id == rule_id:
            return r
    raise KeyError(rule_id)


def resources_from(items: Iterable[Mapping[str, Any]]) -> list[Resource]:
    """Resources from ``[{"type", "name", "inputs", ["outputs", "id"]}]`` (``provision preview --json``)."""
    return [
        Resource(
            str(i["type"]),
            str(i["name"]),
            dict(i.get("inputs") or {}),
            dict(i.get("outputs") or {}),
            str(i.get("id") or ""),
        )
        for i in items
    ]


@dataclass(frozen=True)
class Violation:
    """One rule broken by one resource."""

    rule: Rule
    resource_type: str
    resource: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule.id,
            "title": self.rule.title,
            "resource_type": self.resource_type,
            "resource": self.resource,
            "message": self.message,
            "anchors": list(self.rule.anchors),
        }

    def __str__(self) -> str:
        return f"{self.rule.id} {self.resource_type} {self.resource!r}: {self.message}"


@dataclass
class CheckReport:
    """The outcome of checking one cluster's graph."""

    stack: str
    cloud: str
    resources: int
    violations: list[Violation] = field(default_factory=list)
    #: What the strict mocked cloud refused (a real cloud would reject it): not a policy matter, exit 1.
    rejected: list[str] = field(default_factory=list)
    rules: tuple[Rule, ...] = RULES
    #: Opt-ins the spec asks for that the operator's policy config does not grant (so they waive nothing).
    not_granted: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.violations and not self.rejected

    def of_rule(self, rule_id: str) -> list[Violation]:
        return [v for v in self.violations if v.rule.id == rule_id]

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of ``provision check --json``."""
        return {
            "stack": self.stack,
            "cloud": self.cloud,
            "resources": self.resources,
            "passed": self.passed,
            "violations": [v.as_dict() for v in self.violations],
            "rejected_by_cloud": list(self.rejected),
            "spec_opt_ins_not_granted": list(self.not_granted),
            "rules": [
                {
                    "id": r.id,
                    "title": r.title,
                    "rationale": r.rationale,
                    "anchors": list(r.anchors),
                    "violations": len(self.of_rule(r.id)),
                }
                for r in self.rules
            ],
        }


def context_for(spec: ClusterSpec) -> Context:
    """The opt-ins ``spec`` asks for. ``provision check`` does not honour them: a gate cannot take its
    exemptions from what it checks (see :func:`operator_context`); they are reported when not granted."""
    opts = spec.cloud_options()
    return Context(
        allow_world_ssh=spec.access.allow_world_ssh,
        public_head_node=spec.access.public_head_node,
        gcp_os_login=bool(getattr(opts, "os_login", True)) if spec.cloud == "gcp" else True,
    )


_OPT_INS = {
    "allow_world_ssh": "access.allow_world_ssh",
    "public_head_node": "access.public_head_node",
    "gcp_os_login": "gcp.os_login",
}


def operator_context(config: Mapping[str, Any] | None = None) -> Context:
    """The rules' context from the operator's policy config, the same as the policy pack's.

    ``config`` is either the pack's keys (``{"allow_world_ssh": true}``) or Pulumi's
    ``--policy-pack-config`` file layout, one entry per policy
    (https://www.pulumi.com/docs/iac/using-pulumi/crossguard/configuration/):
    ``{"PRV-NET-002": {"allow_world_ssh": true}, "all": "mandatory"}``. An entry granting an
    opt-in grants it. No config: no opt-in, OS Login required.
    """
    merged: dict[str, Any] = {}
    for key, value in (config or {}).items():
        if key in _OPT_INS:
            merged[key] = value
        elif isinstance(value, Mapping):
            for k, v in value.items():
                if k in ("allow_world_ssh", "public_head_node") and v is True:
                    merged[k] = True
                elif k == "gcp_os_login" and v is False:
                    merged[k] = False
    return pack_context(merged)


def read_policy_config(path: str) -> Context:
    """:func:`operator_context` of a JSON or YAML policy config file.

    Raises:
        SpecError: the file cannot be read or is not a mapping of the pack's keys.
    """
    from pathlib import Path

    from provision.spec.errors import Problem, SpecError
    from provision.spec.yamlsafe import load_bounded, read_text_bounded

    try:
        data = load_bounded(read_text_bounded(Path(path)))
    except Exception as e:  # noqa: BLE001  # any unreadable file is the same user error
        why = f"cannot be read ({type(e).__name__})"
        raise SpecError(problems=[Problem("--policy-config", path, why, "give a JSON or YAML file")]) from None
    if not isinstance(data, Mapping):
        bad = ["(not a mapping)"]
    else:
        bad = [str(k) for k, v in data.items() if k not in _OPT_INS and not isinstance(v, (Mapping, str))]
    if bad:
        raise SpecError(
            problems=[
                Problem(
                    "--policy-config",
                    path,
                    f"is not a policy config (unexpected {', '.join(bad)})",
                    f"write the pack's keys ({', '.join(_OPT_INS)}), flat or under a rule id",
                )
            ]
        )
    return operator_context(data)


def not_granted(spec: ClusterSpec, ctx: Context) -> list[str]:
    """The spec's opt-ins that ``ctx`` (the operator's) does not grant, as spec paths."""
    asked = context_for(spec)
    out = []
    if asked.allow_world_ssh and not ctx.allow_world_ssh:
        out.append(_OPT_INS["allow_world_ssh"])
    if asked.public_head_node and not ctx.public_head_node:
        out.append(_OPT_INS["public_head_node"])
    if not asked.gcp_os_login and ctx.gcp_os_login:
        out.append(_OPT_INS["gcp_os_login"])
    return out


def evaluate(resources: Iterable[Resource], ctx: Context, rules: Sequence[Rule] = RULES) -> list[Violation]:
    """Every violation of ``rules`` in ``resources``: per-resource rules in graph order, then graph rules."""
    graph = list(resources)
    out: list[Violation] = []
    for res in graph:
        for rule in rules:
            if rule.graph is None:
                out.extend(Violation(rule, res.type, res.name, msg) for msg in rule.check(res, ctx))
    for rule in rules:
        if rule.graph is not None:
            out.extend(Violation(rule, res.type, res.name, msg) for res, msg in rule.graph(graph, ctx))
    return out


def check_spec(
    spec: ClusterSpec,
    stack: str = "check",
    now: datetime | None = None,
    ctx: Context | None = None,
    result: PreviewResult | None = None,
) -> CheckReport:
    """Run the program for ``spec`` under the mocked cloud and evaluate every rule on its graph.

    ``ctx`` holds the exemptions the operator grants (:func:`operator_context`); the spec's own
    opt-ins waive nothing here. ``result``: a mocked run of ``spec`` made already
    (``engine.mockrun.run_program``); its graph is checked instead of running the program again.

    Raises:
        SpecError, BudgetError: the spec is invalid or refused (nothing is registered).
        CloudError: the (strict) mocked cloud refused a resource.
    """
    from provision.clouds.mocking import StrictViolationError
    from provision.engine.mockrun import run_program

    rejected: list[str] = []
    try:
        run = result if result is not None else run_program(spec, stack=stack, now=now, fail_fast=False)
        registered = run.resources
    except StrictViolationError as e:  # the whole program ran; the strict cloud listed what it would refuse
        registered = list(e.partial)
        rejected = [str(v) for v in getattr(e, "violations", ())] or [str(e)]
    graph = [Resource(r.type, r.name, r.inputs, r.outputs, r.id) for r in registered if r.custom]
    ctx = ctx or Context()
    return CheckReport(
        stack, spec.cloud, len(graph), evaluate(graph, ctx), rejected=rejected, not_granted=not_granted(spec, ctx)
    )


# ---------------------------------------------------------------------- the Pulumi policy pack


def pack_config_schema() -> dict[str, dict[str, Any]]:
    """The pack's config: the spec's opt-ins, which a policy pack cannot read from the stack itself."""
    return {
        "allow_world_ssh": {"type": "boolean", "default": False, "description": "access.allow_world_ssh of the spec"},
        "public_head_node": {"type": "boolean", "default": False, "description": "access.public_head_node"},
        "gcp_os_login": {"type": "boolean", "default": True, "description": "gcp.os_login of the spec"},
    }


def _plain(value: Any) -> Any:
    """Policy SDK proxies (and secrets) as plain dicts, lists and values."""
    inner = getattr(value, "value", value) if type(value).__name__ == "Secret" else value
    if isinstance(inner, Mapping):
        return {str(k): _plain(v) for k, v in inner.items()}
    if isinstance(inner, Sequence) and not isinstance(inner, (str, bytes)):
        return [_plain(v) for v in inner]
    return inner


def pack_context(config: Mapping[str, Any]) -> Context:
    """The rules' context from the pack's config (defaults: no opt-in, OS Login on)."""
    return Context(
        allow_world_ssh=bool(config.get("allow_world_ssh", False)),
        public_head_node=bool(config.get("public_head_node", False)),
        gcp_os_login=bool(config.get("gcp_os_login", True)),
    )


def pack_validator(rule: Rule) -> Any:
    """A ``ResourceValidation`` callback that runs ``rule`` on one resource and reports each violation."""

    def validate(args: Any, report_violation: Any) -> None:
        res = Resource(str(args.resource_type), str(args.name), _plain(args.props))
        for message in rule.check(res, pack_context(args.get_config())):
            report_violation(_message(rule, message), None)

    return validate


def _message(rule: Rule, message: str) -> str:
    anchors = f" [{', '.join(rule.anchors)}]" if rule.anchors else ""
    return f"{rule.id}: {message}. {rule.rationale}{anchors}"


def pack_stack_validator(rule: Rule) -> Any:
    """A ``StackValidation`` callback that runs a graph rule over the stack's resources.

    Stack policies see each resource's outputs (which hold its inputs too); ``id`` is among them
    for the bridged providers.
    """
    graph_rule = rule.graph
    assert graph_rule is not None  # noqa: S101

    def validate(args: Any, report_violation: Any) -> None:
        graph, urns = [], {}
        for pr in args.resources:
            props = _plain(pr.props)
            res = Resource(str(pr.resource_type), str(pr.name), props, props, str(props.get("id") or ""))
            graph.append(res)
            urns[id(res)] = pr.urn
        for res, message in graph_rule(graph, pack_context(args.get_config())):
            report_violation(_message(rule, message), urns.get(id(res)))

    return validate


def pulumi_policies(enforcement: str = "mandatory") -> list[Any]:
    """The rules as ``pulumi_policy`` policies (needs ``pip install 'provision[policy]'``).

    Per-resource rules become ``ResourceValidationPolicy`` s (run before each create); graph rules
    (PRV-TTL-001) become ``StackValidationPolicy`` s (run over the whole stack).
    """
    from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationPolicy, StackValidationPolicy

    level = EnforcementLevel(enforcement)
    out: list[Any] = []
    for rule in RULES:
        kind, validate = (
            (ResourceValidationPolicy, pack_validator(rule))
            if rule.graph is None
            else (StackValidationPolicy, pack_stack_validator(rule))
        )
        out.append(
            kind(
                name=rule.id,
                description=f"{rule.title}. {rule.rationale}",
                validate=validate,
                enforcement_level=level,
                config_schema=PolicyConfigSchema(properties=pack_config_schema()),
            )
        )
    return out
