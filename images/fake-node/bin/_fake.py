"""Shared by the fake node tools (images/fake-node/bin): a mocked node's facts.

A mocked node is a sandbox (PROVISION_ROOT) holding the files the real bootstrap writes; the node's
hardware answers come from what the plan expects (/etc/provision/health.json) minus the faults
injected for this node (FAKE_BROKEN, a comma-separated list of check names).
"""

import json
import os

ROOT = os.environ.get("PROVISION_ROOT", "")
BROKEN = set(filter(None, os.environ.get("FAKE_BROKEN", "").split(",")))


def expect():
    with open(ROOT + "/etc/provision/health.json", encoding="utf-8") as f:
        return json.load(f)


def broken(check):
    return check in BROKEN
