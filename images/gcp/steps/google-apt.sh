#!/bin/bash
# provision step google-apt (once): Google's apt repositories with their keys. Ubuntu images carry neither key,
# and apt refuses an unsigned repository, so both keys go to /etc/apt/keyrings and every Google source names
# its key with signed-by: the Artifact Registry key signs the ar+https repositories (gIB, TCPXO, Lustre client),
# the Cloud packages key signs packages.cloud.google.com, which ships the ar+https transport (Artifact Registry
# "Debian packages" docs).
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
mkdir -p "$R/etc/apt/keyrings" "$R/etc/apt/sources.list.d"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -s "$R/etc/apt/keyrings/gcp-ar-repo.gpg" ]; then
  pv_fetch https://us-apt.pkg.dev/doc/repo-signing-key.gpg "$tmp/ar.asc" || exit 1
  gpg --dearmor --yes -o "$R/etc/apt/keyrings/gcp-ar-repo.gpg" "$tmp/ar.asc" || exit 1
fi
if [ ! -s "$R/etc/apt/keyrings/google-cloud-packages.gpg" ]; then
  pv_fetch https://packages.cloud.google.com/apt/doc/apt-key.gpg "$tmp/cloud.asc" || exit 1
  gpg --dearmor --yes -o "$R/etc/apt/keyrings/google-cloud-packages.gpg" "$tmp/cloud.asc" || exit 1
fi
echo "deb [signed-by=/etc/apt/keyrings/google-cloud-packages.gpg] https://packages.cloud.google.com/apt apt-transport-artifact-registry-stable main" \
  >"$R/etc/apt/sources.list.d/artifact-registry.list"
pv_apt update || exit 1
pv_apt install apt-transport-artifact-registry
