# --- GCP: GPUDirect RDMA (a3-ultragpu-8g). Needs NCCL_VERSION and NCCL_GIB_VERSION set above.
# Steps follow Cluster Toolkit's a3ultra blueprint (install_nccl.yml, install_nccl_gib.yml,
# configure_nccl_env.yml): pinned NCCL, Google's gIB NCCL plugin from Artifact Registry, its env script.
# google-apt.sh (the ar+https transport and Google's keys) runs before.
if command -v add-nvidia-repositories >/dev/null; then add-nvidia-repositories -y; fi
echo "deb [signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg] ar+https://us-apt.pkg.dev/projects/gce-ai-infra gpudirect-gib-apt main" \
  > /etc/apt/sources.list.d/gpudirect-gib.list
apt-get update -q
apt-get install -y -q --allow-downgrades "libnccl2=${NCCL_VERSION}" "libnccl-dev=${NCCL_VERSION}" \
  "nccl-gib=${NCCL_GIB_VERSION}"
apt-mark hold libnccl2 libnccl-dev nccl-gib
cat > /etc/profile.d/provision-nccl-gib.sh <<'GIB'
if [ -f /usr/local/gib/scripts/set_nccl_env.sh ]; then . /usr/local/gib/scripts/set_nccl_env.sh; fi
if [ -d /usr/local/gib/lib64 ]; then export LD_LIBRARY_PATH="/usr/local/gib/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
GIB
if [ "$(ls /sys/class/infiniband 2>/dev/null | wc -l)" -lt 8 ]; then
  echo "provision: health check FAILED: fewer than 8 MRDMA devices in /sys/class/infiniband" >&2
  touch /var/run/provision-unhealthy
fi
