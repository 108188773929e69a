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
# The plugin's directory on the loader's path of EVERY process, not only login shells: NCCL_NET=gIB is in
# /etc/nccl.conf and /etc/environment, and NCCL refuses a named network whose plugin it cannot dlopen
# ("network gIB not found"). Google adds the directory by hand wherever gIB runs (NeMo Dockerfile: ld.so.conf.d;
# cluster-toolkit a3-ultragpu-8g run-nccl-tests.sh: LD_LIBRARY_PATH=/usr/local/gib/lib64).
mkdir -p "$R/etc/ld.so.conf.d"
echo /usr/local/gib/lib64 >"$R/etc/ld.so.conf.d/provision-gib.conf"
ldconfig || exit 1
