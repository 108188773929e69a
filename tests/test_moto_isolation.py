"""moto's state is the process's: what one test module turns off in it must not reach the next module's mocks."""

from __future__ import annotations

import boto3
from conftest import moto_without_public_amis
from moto import mock_aws

REGION = "us-east-1"


def _ec2_then_autoscaling() -> None:
    boto3.client("ec2", region_name=REGION).describe_images(Owners=["amazon"])
    boto3.client("autoscaling", region_name=REGION).describe_auto_scaling_groups()


def test_a_block_without_public_amis_has_none_though_an_earlier_mock_left_ec2_with_them() -> None:
    # The order that reset leaves EC2's backend behind (see conftest.moto_without_public_amis), built with the list.
    with mock_aws():
        _ec2_then_autoscaling()
    with moto_without_public_amis(), mock_aws():
        assert boto3.client("ec2", region_name=REGION).describe_images(Owners=["amazon"])["Images"] == []


def test_a_block_without_public_amis_leaves_later_mocks_amazons_images() -> None:
    # As tests/test_reaper_aws.py runs: its mocks start and stop inside the block and touch EC2, then autoscaling (the
    # sweeper), whose reset rebuilds EC2's backend after moto has reset and dropped it.
    with moto_without_public_amis(), mock_aws():
        _ec2_then_autoscaling()
    with mock_aws():
        images = boto3.client("ec2", region_name=REGION).describe_images(Owners=["amazon"])["Images"]
    assert images, "a later mock found no public AMIs: the EC2 backend built without them outlived the block"
