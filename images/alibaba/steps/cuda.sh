#!/bin/bash
# provision step cuda (once): the CUDA compiler and runtime headers and NCCL that the nccl-tests build needs, from
# NVIDIA's CUDA apt repository. Alibaba's public images carry no CUDA; the console's "install CUDA automatically"
# option is a console-side script, so provision installs a pinned subset itself, the way Alibaba's own eRDMA
# benchmark image does (AliyunContainerService/alibabacloud-erdma-controller docs/erdma-benchmark/Dockerfile
# @2369230, read 2026-12-01: cuda-nvcc-12-x + cuda-cudart-dev-12-x, libnccl2/libnccl-dev pinned with '=' from the
# CUDA repository, Ubuntu's openmpi-bin/libopenmpi-dev, nccl-tests MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi).
# The repository key is checked against NVIDIA's published fingerprint before apt trusts it, and only for this
# repository (signed-by); never trusted=yes.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
# NVIDIA CUDA repository signing key 3bf863cc (rotated 2022-04-28, "Updating the CUDA Linux GPG Repository Key",
# NVIDIA technical blog; read 2026-12-01): its full fingerprint.
fingerprint=EB693B3035CD5710E231E123A4B469963BF863CC
keyring=/etc/apt/keyrings/provision-cuda.gpg
list=/etc/apt/sources.list.d/provision-cuda.list
pkg_version=${CUDA_VERSION//./-}
# link_cuda: /usr/local/cuda -> the pinned toolkit when nothing holds that name (the nccl-tests step builds with
# CUDA_HOME=/usr/local/cuda; NVIDIA's full toolkit packages keep the same link through update-alternatives), and
# its bin on the PATH of login shells.
link_cuda() {
  [ -e "$R/usr/local/cuda" ] || [ -L "$R/usr/local/cuda" ] || ln -s "${CUDA_DIR##*/}" "$R/usr/local/cuda" || return 1
  mkdir -p "$R/etc/profile.d"
  # shellcheck disable=SC2016  # expanded by login shells, not here
  printf '# provision: the CUDA toolkit\ncase ":$PATH:" in *:/usr/local/cuda/bin:*) ;; *) PATH="$PATH:/usr/local/cuda/bin" ;; esac\n' \
    >"$R/etc/profile.d/provision-cuda.sh"
}
if [ -x "$R$CUDA_DIR/bin/nvcc" ] && [ -e "$R/usr/include/nccl.h" ]; then
  pv_log "CUDA $CUDA_VERSION and NCCL already present"
  link_cuda
  exit
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pv_fetch "$CUDA_REPO_URL/3bf863cc.pub" "$tmp/key.pub" || exit 1
found=$(gpg --batch --show-keys --with-colons "$tmp/key.pub" 2>/dev/null | awk -F: '$1 == "fpr" {print $10; exit}')
if [ "$found" != "$fingerprint" ]; then
  pv_log "the CUDA repository key has fingerprint '${found:-none}', not NVIDIA's $fingerprint: not adding it"
  exit 1
fi
mkdir -p "$R/etc/apt/keyrings"
gpg --batch --yes --dearmor -o "$R$keyring" "$tmp/key.pub" || exit 1
chmod 0644 "$R$keyring" 2>/dev/null || true
printf 'deb [signed-by=%s] %s/ /\n' "$keyring" "$CUDA_REPO_URL" >"$R$list.tmp" && mv -f "$R$list.tmp" "$R$list"
pv_apt update || exit 1
pv_apt install --no-install-recommends "cuda-nvcc-$pkg_version" "cuda-cudart-dev-$pkg_version" \
  "libnccl2=$NCCL_VERSION" "libnccl-dev=$NCCL_VERSION" || exit 1
if [ ! -x "$R$CUDA_DIR/bin/nvcc" ]; then
  pv_log "cuda-nvcc-$pkg_version left no $CUDA_DIR/bin/nvcc"
  exit 1
fi
link_cuda || exit 1
pv_log "CUDA $CUDA_VERSION (nvcc, cudart) and NCCL $NCCL_VERSION installed"
