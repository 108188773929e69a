#!/bin/bash
# provision step login-user (once): the spec's login user with access.ssh_public_keys in its own home
# (/etc/provision/authorized_keys holds the public keys, written by cloud-init; public keys are not secrets).
# Keys already there (an EC2 key pair's) are kept. SSH_SUDO=true adds NOPASSWD sudo rights (images whose default
# user does not exist yet).
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
[ -s "$R/etc/provision/authorized_keys" ] || exit 0
id -u "$SSH_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$SSH_USER" || exit 1
home=$(getent passwd "$SSH_USER" | cut -d: -f6)
group=$(id -gn "$SSH_USER")
[ -n "$home" ] || exit 1
keys="$R$home/.ssh/authorized_keys"
mkdir -p "$R$home/.ssh"
touch "$keys"
while IFS= read -r key; do
  [ -n "$key" ] && ! grep -qxF -- "$key" "$keys" && printf '%s\n' "$key" >>"$keys"
done <"$R/etc/provision/authorized_keys"
chown -R "$SSH_USER:$group" "$R$home/.ssh"
chmod 0700 "$R$home/.ssh"
chmod 0600 "$keys"
if [ "${SSH_SUDO:-false}" = "true" ]; then
  printf '%s ALL=(ALL) NOPASSWD:ALL\n' "$SSH_USER" >"$R/etc/sudoers.d/90-provision"
  chmod 0440 "$R/etc/sudoers.d/90-provision"
fi
