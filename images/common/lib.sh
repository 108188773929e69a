# shellcheck shell=bash
# provision node library, sourced by every bootstrap step (images/*/steps/*.sh).
#
# Steps are static text: no value is ever substituted into them. Cluster values come from
# /etc/provision/bootstrap.env, whose lines provision/planning/bootstrap.py renders as KEY='value' after
# validating each value against a strict pattern for its kind and quoting it with shlex.quote.
# PROVISION_ROOT prefixes every path a step writes (empty on a node; a sandbox in tests).
R=${PROVISION_ROOT:-}
export DEBIAN_FRONTEND=noninteractive
if [ -r "$R/etc/provision/bootstrap.env" ]; then
  # shellcheck source=/dev/null
  . "$R/etc/provision/bootstrap.env"
fi

pv_log() { printf 'provision[%s]: %s\n' "${PV_STEP:-bootstrap}" "$*" >&2; }

# pv_retry ATTEMPTS DELAY CMD...: run CMD until it succeeds, at most ATTEMPTS times, waiting DELAY*n seconds
# after the n-th failure. Network fetches and package installs go through it: a first boot races mirrors,
# NAT gateways and DNS that are still coming up.
pv_retry() {
  local attempts=$1 delay=$2 n=1
  shift 2
  until "$@"; do
    if [ "$n" -ge "$attempts" ]; then
      pv_log "gave up after $n attempts: $*"
      return 1
    fi
    pv_log "attempt $n of $attempts failed: $*; retrying in $((delay * n)) s"
    sleep $((delay * n))
    n=$((n + 1))
  done
}

# pv_wait_dpkg: wait up to 10 minutes for apt-daily / unattended-upgrades to release the dpkg locks
# (slurm-gcp's managed_lustre role waits the same way before installing; apt alone fails at once).
pv_wait_dpkg() {
  local _
  for _ in $(seq 1 120); do
    if ! fuser "$R/var/lib/dpkg/lock-frontend" "$R/var/lib/dpkg/lock" "$R/var/lib/apt/lists/lock" >/dev/null 2>&1; then
      return 0
    fi
    sleep 5
  done
  pv_log "the dpkg lock is still held after 10 minutes"
  return 1
}

# pv_apt ARGS...: apt-get after the dpkg lock is free, with apt's own lock timeout and bounded retries.
pv_apt() {
  pv_wait_dpkg || return 1
  pv_retry 3 15 apt-get -o DPkg::Lock::Timeout=600 -y -q "$@"
}

# pv_fetch URL OUT [SHA256]: download with bounded retries; with SHA256, keep the file only when it matches.
pv_fetch() {
  local url=$1 out=$2 sha=${3:-}
  pv_retry 5 10 curl -fsSL --connect-timeout 20 --max-time 600 -o "$out" "$url" || return 1
  if [ -n "$sha" ] && ! printf '%s  %s\n' "$sha" "$out" | sha256sum -c - >/dev/null 2>&1; then
    pv_log "checksum mismatch for $url"
    rm -f "$out"
    return 1
  fi
}

# pv_block FILE FIRST LAST < CONTENT: replace the lines from marker FIRST to marker LAST in FILE (or prepend them).
pv_block() {
  local file=$1 begin=$2 end=$3 tmp
  tmp=$(mktemp)
  {
    printf '%s\n' "$begin"
    cat
    printf '%s\n' "$end"
    if [ -f "$file" ]; then
      awk -v b="$begin" -v e="$end" '$0 == b {skip = 1} !skip {print} $0 == e {skip = 0}' "$file"
    fi
  } >"$tmp"
  cat "$tmp" >"$file"
  chmod 0644 "$file"
  rm -f "$tmp"
}

# Exit status a step uses to ask for a reboot (kernel modules that only load after one).
PV_REBOOT=100
export PV_REBOOT
