# provision: Alibaba GPU + eRDMA node setup (inserted into images/common/bootstrap.sh as CLOUD_SETUP).
# Rendered by provision/clouds/alibaba/userdata.py. Holds no secrets: the public keys below are public.
export DEBIAN_FRONTEND=noninteractive
provision_reboot=false

# --- login user: the ECS key pair logs in as root; give the spec's user the same public keys
if ! id -u ${PROVISION_SSH_USER} >/dev/null 2>&1; then
  useradd -m -s /bin/bash ${PROVISION_SSH_USER}
fi
echo "${PROVISION_SSH_USER} ALL=(ALL) NOPASSWD:ALL" > /etc/sudoers.d/90-provision
chmod 0440 /etc/sudoers.d/90-provision
install -d -m 0700 -o ${PROVISION_SSH_USER} -g ${PROVISION_SSH_USER} /home/${PROVISION_SSH_USER}/.ssh
cat > /home/${PROVISION_SSH_USER}/.ssh/authorized_keys <<'KEYS'
${PROVISION_AUTHORIZED_KEYS}
KEYS
chown ${PROVISION_SSH_USER}:${PROVISION_SSH_USER} /home/${PROVISION_SSH_USER}/.ssh/authorized_keys
chmod 0600 /home/${PROVISION_SSH_USER}/.ssh/authorized_keys

# --- GPU driver (pinned branch) and NVIDIA Fabric Manager (8-GPU HGX boards have NVSwitch)
if ! command -v nvidia-smi >/dev/null 2>&1; then
  apt-get update -y
  apt-get install -y "linux-headers-$(uname -r)" ${PROVISION_DRIVER_PACKAGE} ${PROVISION_FABRICMANAGER} \
    "libnvidia-nscq-${PROVISION_DRIVER_BRANCH}"
  modprobe nvidia || provision_reboot=true
  systemctl enable nvidia-fabricmanager
  systemctl start nvidia-fabricmanager || provision_reboot=true
fi

# --- eRDMA stack (GPU mode) from Alibaba's VPC-internal mirror, installer pinned and checked
if [ "${PROVISION_ERDMA}" = "true" ] && ! command -v eadm >/dev/null 2>&1; then
  cd /tmp
  curl -fsSLo erdma_installer.tar.gz "${PROVISION_ERDMA_INSTALLER_URL}"
  echo "${PROVISION_ERDMA_INSTALLER_SHA256}  erdma_installer.tar.gz" | sha256sum -c -
  curl -fsSLo env_setup.sh http://mirrors.cloud.aliyuncs.com/erdma/env_setup.sh
  bash env_setup.sh --egs --url "${PROVISION_ERDMA_INSTALLER_URL}"
  modprobe erdma || provision_reboot=true
fi

# --- every ENI up with an address (the secondary ERI is eth1) and the planned MTU
for dev in /sys/class/net/eth*; do
  ifname=$(basename "$dev")
  ip link set dev "$ifname" mtu ${PROVISION_MTU} || true
  if ! ip -4 addr show dev "$ifname" | grep -q inet; then
    dhclient "$ifname" || true
  fi
done

if [ "$provision_reboot" = "true" ]; then
  echo "provision: kernel modules need a reboot; rebooting in 1 minute"
  shutdown -r +1 "provision: reboot to load the GPU / eRDMA drivers"
fi
