#!/bin/bash
# provision step fsx-source (once; rerun at the next boot if it failed): the FSx mount source, looked up at boot.
# The nodes are requested before the file system exists (a capacity miss then costs no FSx creation), so the user
# data cannot hold its DNS name. The program writes `dns-name@tcp:/mount-name` to the SSM parameter
# $SHARED_SOURCE_PARAMETER once FSx is AVAILABLE; this step waits for it (FSx creation takes minutes) with the
# node role, which may read only that parameter (ssm:GetParameter, provision/clouds/aws/nodes.py), and writes it
# to $SHARED_SOURCE_FILE for the shared-mount step. Only a missing parameter is waited for; a value that is not a
# mount source fails the step at once (and is never logged or used).
# AWS CLI: `aws ssm get-parameter` (AWS CLI Command Reference).
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
tries=$((FSX_WAIT_SECONDS / 20))
while :; do
  value=$(aws ssm get-parameter --region "$AWS_REGION_NAME" --name "$SHARED_SOURCE_PARAMETER" \
    --query Parameter.Value --output text 2>/dev/null || true)
  if [[ $value =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?@tcp:/[A-Za-z0-9]{1,64}$ ]]; then
    mkdir -p "$(dirname "$R$SHARED_SOURCE_FILE")"
    printf '%s\n' "$value" >"$R$SHARED_SOURCE_FILE"
    exit 0
  fi
  if [ -n "$value" ]; then # the program wrote something that is not a mount source: waiting will not change it
    pv_log "no FSx mount source in SSM parameter $SHARED_SOURCE_PARAMETER: its value is not dns-name@tcp:/mount-name"
    exit 1
  fi
  tries=$((tries - 1))
  if [ "$tries" -le 0 ]; then
    pv_log "no FSx mount source in SSM parameter $SHARED_SOURCE_PARAMETER after ${FSX_WAIT_SECONDS}s"
    exit 1
  fi
  sleep 20
done
