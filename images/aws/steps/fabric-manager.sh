#!/bin/bash
# provision step fabric-manager (every boot): NVSwitch systems (p4d, p4de, p5, p5e, p5en) need NVIDIA Fabric
# Manager running before CUDA sees the GPUs as one NVLink domain. The Deep Learning Base OSS AMI ships it.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
systemctl list-unit-files nvidia-fabricmanager.service >/dev/null 2>&1 || exit 0
systemctl is-active --quiet nvidia-fabricmanager || systemctl restart nvidia-fabricmanager
