#!/bin/bash
# provision step rdma (once): GPUDirect RDMA on a3-ultragpu-8g, as Cluster Toolkit's a3ultra blueprint
# (install_nccl.yml, install_nccl_gib.yml, configure_nccl_env.yml): pinned NCCL and Google's gIB NCCL plugin.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
if command -v add-nvidia-repositories >/dev/null; then add-nvidia-repositories -y || exit 1; fi
echo "deb [signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg] ar+https://us-apt.pkg.dev/projects/gce-ai-infra gpudirect-gib-apt main" \
  >"$R/etc/apt/sources.list.d/gpudirect-gib.list"
pv_apt update || exit 1
pv_apt install --allow-downgrades "libnccl2=$NCCL_VERSION" "libnccl-dev=$NCCL_VERSION" "nccl-gib=$NCCL_GIB_VERSION" || exit 1
apt-mark hold libnccl2 libnccl-dev nccl-gib >/dev/null
