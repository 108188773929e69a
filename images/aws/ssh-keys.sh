# provision: public SSH keys beyond the EC2 key pair (public keys are not secrets).
# Rendered by provision/clouds/aws/userdata.py.
ssh_user='${SSH_USER}'
id -u "$$ssh_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$$ssh_user"
ssh_home=$$(getent passwd "$$ssh_user" | cut -d: -f6)
install -d -m 0700 -o "$$ssh_user" -g "$$ssh_user" "$$ssh_home/.ssh"
cat >> "$$ssh_home/.ssh/authorized_keys" <<'KEYS'
${KEYS}
KEYS
chown "$$ssh_user:$$ssh_user" "$$ssh_home/.ssh/authorized_keys"
chmod 0600 "$$ssh_home/.ssh/authorized_keys"
