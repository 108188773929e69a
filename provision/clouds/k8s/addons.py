"""The shared cluster software of ``scheduler: kubernetes``: pinned Helm charts and their values (pure).

Versions are pinned: an unpinned chart would change a cluster on the next ``up``.

* Kubeflow Trainer v2.2.0, ``oci://ghcr.io/kubeflow/charts/kubeflow-trainer`` (kubeflow/trainer
  CHANGELOG "v2.2.0 (2026-03-19)": one Helm install deploys the controller; the chart brings
  JobSet, which TrainJobs run on). Its default runtimes stay off: each cluster gets its own
  runtime with the fabric wired in (:mod:`provision.clouds.k8s.jobs`).
* Kueue 0.17.7, ``oci://registry.k8s.io/kueue/charts/kueue`` (chart versions carry no ``v``;
  kubernetes-sigs/kueue CHANGELOG/CHANGELOG-0.17.md: v0.17.0 "Add support to Kubeflow Trainer
  v2.2 (#10127)", v0.17.7 the newest patch of that line). TrainJobs are admitted only with the
  ``trainer.kubeflow.org/trainjob`` integration enabled (Kueue "Run A TrainJob"); JobSet and batch
  Jobs stay enabled. The pair must be one ``images/compat.yaml`` (``kueue_trainer``) lists:
  :func:`check_addon_pair` refuses any other, so bumping one without the other fails every plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from provision.planning.kubernetes import AddonPlan


@dataclass(frozen=True)
class Chart:
    """A pinned Helm chart release."""

    release: str
    chart: str
    version: str
    namespace: str
    purpose: str
    repo: str | None = None

    def plan(self) -> AddonPlan:
        source = self.chart if self.repo is None else f"{self.repo} {self.chart}"
        return AddonPlan(
            name=self.release,
            kind="helm",
            source=source,
            version=self.version,
            namespace=self.namespace,
            purpose=self.purpose,
        )


TRAINER = Chart(
    release="kubeflow-trainer",
    chart="oci://ghcr.io/kubeflow/charts/kubeflow-trainer",
    version="2.2.0",
    namespace="kubeflow-system",
    purpose="Kubeflow Trainer v2 (TrainJob) with JobSet for multi-node PyTorch jobs",
)
KUEUE = Chart(
    release="kueue",
    chart="oci://registry.k8s.io/kueue/charts/kueue",
    version="0.17.7",
    namespace="kueue-system",
    purpose="gang admission and GPU quotas (ClusterQueue/LocalQueue) for TrainJobs",
)
#: Kueue integrations (Kueue "Run A TrainJob": enable trainer.kubeflow.org/trainjob).
KUEUE_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob")


def trainer_values() -> dict[str, Any]:
    """Trainer chart values: no default runtimes (the cluster's runtime is created beside it)."""
    return {"runtimes": {"defaultEnabled": False}}


def kueue_values() -> dict[str, Any]:
    """Kueue chart values: the manager configuration with the TrainJob integration.

    The chart takes the whole configuration file as one string
    (``managerConfig.controllerManagerConfigYaml``); fields left out keep Kueue's defaults. The
    configuration API is ``config.kueue.x-k8s.io/v1beta2``, the one the 0.17 chart's own default
    file uses (v1beta1 is deprecated since Kueue 0.16, kubernetes-sigs/kueue PR #8020).
    """
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
    }
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}


def _minor(version: str) -> str:
    return ".".join(version.lstrip("v").split(".")[:2])


def check_addon_pair(kueue: str, trainer: str) -> str | None:
    """Why Kueue ``kueue`` cannot run with Trainer ``trainer`` (compat.yaml ``kueue_trainer``), or ``None``."""
    from provision.planning.images import compat_rules

    rule = compat_rules()["kueue_trainer"]
    supported = rule["by_kueue_minor"].get(_minor(kueue))
    if supported is None:
        return (
            f"Kueue {kueue} is not in images/compat.yaml kueue_trainer (known lines: "
            f"{', '.join(sorted(rule['by_kueue_minor']))}); add its line with the Trainer releases it supports "
            f"and the source ({rule['source']})"
        )
    if _minor(trainer) not in supported:
        return (
            f"Kueue {kueue} supports Kubeflow Trainer {', '.join(supported)} only, not {trainer} "
            f"(images/compat.yaml kueue_trainer, {rule['source']}); bump both together"
        )
    return None


def training_addons() -> list[AddonPlan]:
    """The add-ons every Kubernetes cluster gets, whatever the cloud.

    Raises ``RuntimeError`` when the shipped Kueue and Trainer are not a supported pair (a packaging
    error, not a user one: no plan may ship it)."""
    reason = check_addon_pair(KUEUE.version, TRAINER.version)
    if reason is not None:
        raise RuntimeError(reason)
    jobset = AddonPlan(
        name="jobset",
        kind="helm",
        source=f"{TRAINER.chart} (chart dependency)",
        version=None,
        namespace=TRAINER.namespace,
        purpose="JobSet controller that TrainJobs run on (installed by the Trainer chart)",
    )
    return [TRAINER.plan(), jobset, KUEUE.plan()]
