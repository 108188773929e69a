# --- GCP: the login user. OS Login is on (enable-oslogin=TRUE) and project-wide keys are blocked, so
# metadata ssh-keys are ignored; sshd still reads a local user's ~/.ssh/authorized_keys, which is how
# access.ssh_public_keys (public keys only; never a secret) reach the nodes. Needs SSH_USER and
# SSH_KEYS (newline-separated) set above.
if [ -n "${SSH_KEYS}" ]; then
  id -u "${SSH_USER}" >/dev/null 2>&1 || useradd -m -s /bin/bash "${SSH_USER}"
  home=$(getent passwd "${SSH_USER}" | cut -d: -f6)
  install -d -m 0700 -o "${SSH_USER}" -g "${SSH_USER}" "${home}/.ssh"
  printf '%s\n' "${SSH_KEYS}" > "${home}/.ssh/authorized_keys"
  chown "${SSH_USER}:${SSH_USER}" "${home}/.ssh/authorized_keys" && chmod 0600 "${home}/.ssh/authorized_keys"
  echo "${SSH_USER} ALL=(ALL) NOPASSWD:ALL" > /etc/sudoers.d/90-provision && chmod 0440 /etc/sudoers.d/90-provision
fi
