"""The per-cloud host key readers against answers in each API's documented shape."""

from __future__ import annotations

import base64
from typing import Any

import asyncssh
import boto3
from moto import mock_aws

from provision.clouds.alibaba import hostkeys as alibaba
from provision.clouds.aws import hostkeys as aws
from provision.clouds.azure import hostkeys as azure
from provision.clouds.consolekeys import console_host_keys, decode_console, preferred
from provision.clouds.gcp import hostkeys as gcp


def _key(kind: str = "ssh-ed25519") -> str:
    return " ".join(asyncssh.generate_private_key(kind).export_public_key().decode().split()[:2])


ED, ECDSA, OLD = _key(), _key("ecdsa-sha2-nistp256"), _key()


def _console(*keys: str, prefix: str = "") -> str:
    """cloud-init's keys_to_console output (tools/write-ssh-key-fingerprints), optionally prefixed per line."""
    lines = ["-----BEGIN SSH HOST KEY KEYS-----", *(f"{k} root@node" for k in keys), "-----END SSH HOST KEY KEYS-----"]
    return "Booting...\n" + "".join(f"{prefix}{line}\n" for line in lines) + "login: \n"


def test_the_parser_takes_the_last_complete_block_and_prefers_ed25519() -> None:
    text = _console(OLD) + "reboot\n" + _console(ECDSA, ED, prefix="[  12.5] cloud-init[801]: ")
    assert console_host_keys(text) == [ECDSA, ED]
    assert preferred(console_host_keys(text)) == ED
    # A block cut off by the end of the log (still booting) is no block; nor is a fingerprint block.
    assert console_host_keys("-----BEGIN SSH HOST KEY KEYS-----\n" + ED + "\n") == []
    assert console_host_keys("-----BEGIN SSH HOST KEY FINGERPRINTS-----\n256 SHA256:x\n-----END") == []
    assert decode_console(base64.b64encode(_console(ED).encode()).decode()) == _console(ED)
    assert decode_console(None) == ""


def test_aws_reads_the_console_output_through_boto3_and_skips_a_node_still_booting() -> None:
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        ids = [i["InstanceId"] for i in ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1)["Instances"]]
        # moto's console is a fixed kernel log with no cloud-init block: a node that has not printed keys yet.
        assert aws.read_host_keys(ids, "us-east-1", client=ec2) == {}

    class Console:
        def get_console_output(self, InstanceId: str, Latest: bool = False) -> dict[str, Any]:  # noqa: N803
            text = _console(ED) if InstanceId == "i-1" else "still booting"
            return {"InstanceId": InstanceId, "Output": base64.b64encode(text.encode()).decode()}

    assert aws.read_host_keys(["i-0", "i-1"], "us-east-1", client=Console()) == {1: ED}


def test_gcp_reads_the_hostkeys_guest_attributes() -> None:
    calls = []

    def fetch(project: str, zone: str, instance: str) -> dict[str, Any]:
        calls.append((project, zone, instance))
        if instance == "n-1":
            return {}  # 404: the guest agent has not written the namespace yet
        kind, b64 = ED.split()
        return {
            "kind": "compute#guestAttributes",
            "queryPath": "hostkeys/",
            "queryValue": {
                "items": [
                    {"namespace": "hostkeys", "key": "ecdsa-sha2-nistp256", "value": ECDSA.split()[1]},
                    {"namespace": "hostkeys", "key": kind, "value": b64},
                    {"namespace": "other", "key": "ssh-ed25519", "value": OLD.split()[1]},
                ]
            },
        }

    assert gcp.read_host_keys(["n-0", "n-1"], "proj", "us-central1-a", fetch=fetch) == {0: ED}
    assert calls == [("proj", "us-central1-a", "n-0"), ("proj", "us-central1-a", "n-1")]
    assert gcp.GUEST_ATTRIBUTES == {"enable-guest-attributes": "TRUE"}


def test_azure_reads_the_boot_diagnostics_serial_log() -> None:
    logs = {"0": _console(ED, prefix="[    9.1] cloud-init[1]: "), "3": "no keys"}
    found = azure.read_host_keys("rg", "vmss", ["0", "3"], lambda g, s, i: logs[i])
    assert found == {0: ED}


def test_alibaba_reads_the_base64_console_output() -> None:
    def fetch(region: str, instance_id: str) -> dict[str, Any]:
        return {
            "RequestId": "473469C7-AA6F-4DC5-B3DB-A3DC0DE3C83E",
            "InstanceId": instance_id,
            "LastUpdateTime": "2018-03-22 10:04:57",
            "ConsoleOutput": base64.b64encode(_console(ECDSA).encode()).decode(),
        }

    assert alibaba.read_host_keys(["i-a"], "cn-wulanchabu", fetch=fetch) == {0: ECDSA}
