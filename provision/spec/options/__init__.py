"""Per-cloud sections of the spec (``aws:``, ``gcp:``, ``azure:``, ``alibaba:``).

They are part of the spec, not of the adapters: the adapters in ``provision.clouds`` read them,
so they live in the spec layer and the spec never imports a cloud folder.
"""

from provision.spec.options.alibaba import AlibabaOptions
from provision.spec.options.aws import AwsOptions
from provision.spec.options.azure import AzureOptions
from provision.spec.options.gcp import GcpOptions

#: The option model of any cloud (``ClusterPlan.options``; ``spec.cloud_options()``).
AnyCloudOptions = AwsOptions | GcpOptions | AzureOptions | AlibabaOptions

__all__ = ["AlibabaOptions", "AnyCloudOptions", "AwsOptions", "AzureOptions", "GcpOptions"]
