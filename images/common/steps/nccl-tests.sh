#!/bin/bash
# provision step nccl-tests (once, not critical): leave `all_reduce_perf` and its `mpirun` at one fixed place on
# every node, /usr/local/lib/provision/bin, for `provision nccl-test` (provision/ops/nccl.py) and the health check.
#  - NCCL_TESTS_SOURCE=image: the image ships nccl-tests (DLAMI: /usr/local/cuda-X/efa/test-cuda-X/, release notes;
#    Azure HPC images: /opt/nccl-tests/build or /opt/rccl-tests, azhpc-images install_nccl.sh / install_rccl.sh).
#    NCCL_TESTS_IMAGE_PATH and MPIRUN_IMAGE_PATH may hold '*' for versioned directories; the last match wins.
#  - NCCL_TESTS_SOURCE=build: NVIDIA/nccl-tests at tag v$NCCL_TESTS_VERSION, built with MPI=1 against Ubuntu's
#    Open MPI (nccl-tests README "make MPI=1 MPI_HOME=... CUDA_HOME=... NCCL_HOME=..."). It needs the CUDA toolkit
#    (nvcc) and NCCL's headers on the image; without them the step fails and says so (the health check then names
#    the node's nccl_tests check). The source is the tag's tarball, fetched from NCCL_TESTS_URL_0, _1, ... in order
#    (an in-region copy first, when the spec names one, then NVIDIA's GitHub archive: github.com is slow or
#    unreachable from mainland-China regions) and, with NCCL_TESTS_SHA256, checked before it is unpacked; a copy
#    with another digest is refused and the next source tried. No git is needed.
# `mpirun` is a wrapper that passes Open MPI's --prefix (mpirun(1): "Prefix directory that will be used to set the
# PATH and LD_LIBRARY_PATH on the remote node"), so the remote daemons start from non-login SSH sessions too, and
# OPAL_PREFIX for a relocated installation outside /usr.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
bin="$R/usr/local/lib/provision/bin"
mkdir -p "$bin"

# last_match PATTERN: the last executable (in sorted order) matching an absolute wildcard path, without $R.
last_match() {
  local found="" p
  # shellcheck disable=SC2086  # the pattern is meant to expand
  for p in $R$1; do
    if [ -x "$p" ] && [ ! -d "$p" ]; then found=${p#"$R"}; fi
  done
  [ -n "$found" ] && printf '%s\n' "$found"
}

# fetch_source DIR: the first source tarball that downloads (and matches NCCL_TESTS_SHA256), unpacked into DIR.
fetch_source() {
  local dir=$1 tarball="$R/var/tmp/provision-nccl-tests.tar.gz" i=0 name url
  mkdir -p "$R/var/tmp"
  while name="NCCL_TESTS_URL_$i" && url=${!name:-} && [ -n "$url" ]; do
    i=$((i + 1))
    # pv_fetch keeps the file only when it matches the pin; a copy with another digest is refused
    pv_fetch "$url" "$tarball" "${NCCL_TESTS_SHA256:-}" || continue
    mkdir -p "$dir" && tar -xzf "$tarball" -C "$dir" --strip-components=1 && rm -f "$tarball" && return 0
    pv_log "nccl-tests source from $url did not unpack"
  done
  rm -f "$tarball"
  pv_log "no nccl-tests source could be fetched (tried $i): set image.versions.nccl_tests_url to a copy the nodes reach"
  return 1
}

if [ "${NCCL_TESTS_SOURCE:-}" = build ]; then
  pv_apt install --no-install-recommends build-essential curl openmpi-bin libopenmpi-dev || exit 1
  cuda_home=/usr/local/cuda
  if [ ! -x "$R$cuda_home/bin/nvcc" ] && [ -n "${CUDA_TOOLKIT_PACKAGE:-}" ] && command -v add-nvidia-repositories >/dev/null; then
    # Google's recipe on the Ubuntu accelerator images (cluster-toolkit a3ultra-vm.yaml): NVIDIA's repository through
    # the image's own tool, then the toolkit, and NCCL's headers from the same repository.
    pv_retry 3 15 add-nvidia-repositories -y || exit 1
    pv_apt install --no-install-recommends "$CUDA_TOOLKIT_PACKAGE" || exit 1
    [ -e "$R/usr/include/nccl.h" ] || pv_apt install --no-install-recommends libnccl-dev || exit 1
  fi
  if [ ! -x "$R$cuda_home/bin/nvcc" ]; then
    pv_log "nccl-tests needs the CUDA toolkit ($cuda_home/bin/nvcc), which this image lacks: pin an image with nccl-tests (image.versions.nccl_tests_path) or with CUDA"
    exit 1
  fi
  nccl_home=""
  for d in /usr /usr/local/nccl /var/lib/tcpxo /var/lib/tcpx; do
    if [ -e "$R$d/include/nccl.h" ]; then nccl_home=$d; break; fi
  done
  if [ -z "$nccl_home" ]; then
    pv_log "nccl-tests needs NCCL's headers (nccl.h), which this image lacks"
    exit 1
  fi
  src="/opt/provision/nccl-tests-$NCCL_TESTS_VERSION"
  if [ ! -x "$R$src/build/all_reduce_perf" ]; then
    rm -rf "$R$src"
    fetch_source "$R$src" || exit 1
    make -C "$R$src" -j"$(nproc)" MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi CUDA_HOME="$cuda_home" \
      NCCL_HOME="$nccl_home" >/dev/null || exit 1
  fi
  binary="$src/build/all_reduce_perf"
else
  binary=$(last_match "${NCCL_TESTS_IMAGE_PATH:-}") || {
    pv_log "the image has no all_reduce_perf at ${NCCL_TESTS_IMAGE_PATH:-?}"
    exit 1
  }
fi
mpirun=$(last_match "${MPIRUN_IMAGE_PATH:-/usr/bin/mpirun}") || {
  pv_log "no mpirun at ${MPIRUN_IMAGE_PATH:-/usr/bin/mpirun}"
  exit 1
}
prefix=$(dirname "$(dirname "$mpirun")")
{
  printf '#!/bin/bash\n# provision: the image'"'"'s mpirun, with --prefix for the remote nodes\n'
  if [ "$prefix" != /usr ]; then
    # A relocated Open MPI (HPC-X under /opt/hpcx-*) finds itself through OPAL_PREFIX (hpcx-init.sh sets it);
    # mpirun's rsh launcher exports OPAL_PREFIX to the remote daemons when it is set (plm_rsh setup_launch).
    printf 'export OPAL_PREFIX=%q\n' "$prefix"
  fi
  printf 'exec %q --prefix %q "$@"\n' "$mpirun" "$prefix"
} >"$bin/mpirun.tmp" && chmod 0755 "$bin/mpirun.tmp" && mv -f "$bin/mpirun.tmp" "$bin/mpirun"
{
  printf '#!/bin/bash\n# provision: all_reduce_perf of this node\n'
  if [ -n "${NCCL_TESTS_LIB:-}" ]; then
    # shellcheck disable=SC2016  # expanded by the wrapper, not here
    printf 'export LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$NCCL_TESTS_LIB"
  fi
  printf 'exec %q "$@"\n' "$binary"
} >"$bin/all_reduce_perf.tmp" && chmod 0755 "$bin/all_reduce_perf.tmp" && mv -f "$bin/all_reduce_perf.tmp" "$bin/all_reduce_perf"
pv_log "all_reduce_perf: $binary; mpirun: $mpirun"
