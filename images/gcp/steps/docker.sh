#!/bin/bash
# provision step docker (once): Docker + the NVIDIA container toolkit for the fabric daemons. Ubuntu accelerator
# images ship add-nvidia-repositories (used the same way by Cluster Toolkit's a3ultra-vm.yaml) to enable NVIDIA's
# apt repositories for the image's driver branch.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
command -v docker >/dev/null && exit 0
if command -v add-nvidia-repositories >/dev/null; then add-nvidia-repositories -y || exit 1; fi
pv_apt update || exit 1
pv_apt install docker.io nvidia-container-toolkit || exit 1
nvidia-ctk runtime configure --runtime=docker || exit 1
systemctl restart docker
