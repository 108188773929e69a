"""Entry point Pulumi runs for ``pulumi preview/up --policy-pack <this folder>``.

Serves the rules of ``provision check`` as mandatory ``ResourceValidationPolicy`` s. The rules
come from the provision this folder belongs to: the checkout or installed package around it.
"""

import sys
from pathlib import Path

# This folder is provision/ops/policy_pack: make its own provision importable first, so the
# pack enforces exactly the rules of the checkout (or installation) it ships in.
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from provision.ops.policy import pulumi_policies  # noqa: E402

PolicyPack(
    name="provision",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=pulumi_policies(),
    description="provision GPU-cluster rules, the same as `provision check`",
)
