# --- GCP: Google's apt repositories, trusted explicitly. Ubuntu images do not carry Google's signing keys,
# and apt refuses an unsigned repository (`apt-get update` exits 100, which stops this set -e script), so
# both keys go to /etc/apt/keyrings and every Google source names its key with signed-by: the Artifact
# Registry key signs the ar+https repositories (gIB, TCPXO, Lustre client), the Cloud packages key signs
# packages.cloud.google.com, which ships the ar+https transport (Artifact Registry "Debian packages" docs).
export DEBIAN_FRONTEND=noninteractive
install -d -m 0755 /etc/apt/keyrings
if [ ! -s /etc/apt/keyrings/gcp-ar-repo.gpg ]; then
  curl -fsSL https://us-apt.pkg.dev/doc/repo-signing-key.gpg | gpg --dearmor --yes -o /etc/apt/keyrings/gcp-ar-repo.gpg
fi
if [ ! -s /etc/apt/keyrings/google-cloud-packages.gpg ]; then
  curl -fsSL https://packages.cloud.google.com/apt/doc/apt-key.gpg \
    | gpg --dearmor --yes -o /etc/apt/keyrings/google-cloud-packages.gpg
fi
echo "deb [signed-by=/etc/apt/keyrings/google-cloud-packages.gpg] https://packages.cloud.google.com/apt apt-transport-artifact-registry-stable main" \
  > /etc/apt/sources.list.d/artifact-registry.list
apt-get update -q
apt-get install -y -q apt-transport-artifact-registry
