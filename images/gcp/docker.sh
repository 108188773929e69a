# --- GCP: container runtime for the fabric daemons (Docker + the NVIDIA container toolkit).
# Ubuntu accelerator images ship `add-nvidia-repositories` (used the same way by Cluster Toolkit's
# a3ultra-vm.yaml) to enable NVIDIA's apt repositories for the image's driver branch.
export DEBIAN_FRONTEND=noninteractive
if ! command -v docker >/dev/null; then
  if command -v add-nvidia-repositories >/dev/null; then add-nvidia-repositories -y; fi
  apt-get update -q
  apt-get install -y -q docker.io nvidia-container-toolkit
  nvidia-ctk runtime configure --runtime=docker
  systemctl restart docker
fi
