# --- GCP: Managed Lustre client (kernel modules matching the running kernel), as Cluster Toolkit's
# managed-lustre module installs it (scripts/install-managed-lustre-client.sh).
if ! grep -q lustre /proc/filesystems; then
  . /etc/os-release
  mkdir -p /etc/apt/keyrings
  curl -fsSL https://us-apt.pkg.dev/doc/repo-signing-key.gpg | gpg --dearmor --yes -o /etc/apt/keyrings/gcp-ar-repo.gpg
  echo "deb [ signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg ] https://us-apt.pkg.dev/projects/lustre-client-binaries lustre-client-ubuntu-${UBUNTU_CODENAME} main" \
    > /etc/apt/sources.list.d/lustre-client.list
  pv_apt update
  pv_apt install "lustre-client-modules-$(uname -r)" lustre-client-utils
  modprobe lustre
fi
