"""The nodes' host keys as EC2 reports them: the console output cloud-init wrote at boot.

``ec2:GetConsoleOutput`` returns the instance's serial console log, base64-encoded; ``Latest=True``
asks for the most recent output (Nitro instances; the others return the buffered output)
(https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_GetConsoleOutput.html). cloud-init prints
the host public keys there at boot (:mod:`provision.clouds.consolekeys`). The call is made with the
user's credentials; the node needs no permission.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from provision.clouds.consolekeys import console_host_keys, decode_console, preferred


def ec2_client(region: str) -> Any:
    import boto3  # lazily: only when a cluster's nodes are first reached

    return boto3.client("ec2", region_name=region)


def read_host_keys(instance_ids: Sequence[str], region: str, client: Any = None) -> dict[int, str]:
    """``rank -> "type base64"`` for each instance whose console shows its host keys (by rank order)."""
    ec2 = client or ec2_client(region)
    out = {}
    for rank, instance_id in enumerate(instance_ids):
        if not instance_id:
            continue
        try:
            answer = ec2.get_console_output(InstanceId=instance_id, Latest=True)
        except Exception as e:  # noqa: BLE001  (Latest is refused on non-Nitro instances: ask again without it)
            if "Latest" not in str(e) and "UnsupportedOperation" not in str(e):
                raise
            answer = ec2.get_console_output(InstanceId=instance_id)
        key = preferred(console_host_keys(decode_console(answer.get("Output"))))
        if key:
            out[rank] = key
    return out
