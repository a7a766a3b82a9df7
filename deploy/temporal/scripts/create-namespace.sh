#!/bin/sh
# Creates the application's Temporal namespace if it does not exist yet.
# Adapted from temporalio/samples-server compose/scripts/create-namespace.sh.
set -eu

NAMESPACE=${NAMESPACE:-default}
RETENTION=${NAMESPACE_RETENTION:-72h}
TEMPORAL_ADDRESS=${TEMPORAL_ADDRESS:-temporal:7233}
TEMPORAL_HOST=$(echo "$TEMPORAL_ADDRESS" | cut -d: -f1)
TEMPORAL_PORT=$(echo "$TEMPORAL_ADDRESS" | cut -d: -f2)

echo "Waiting for Temporal at ${TEMPORAL_ADDRESS}..."
nc -z -w 10 "$TEMPORAL_HOST" "$TEMPORAL_PORT"

# Upstream resolves the host to an IPv4 address first (works around gRPC picking
# an unreachable address); do the same.
TEMPORAL_IP=$(getent ahosts "$TEMPORAL_HOST" | grep STREAM | head -1 | awk '{print $1}')
ADDRESS="${TEMPORAL_IP:-$TEMPORAL_HOST}:${TEMPORAL_PORT}"

attempt=0
until temporal operator cluster health --address "$ADDRESS"; do
  attempt=$((attempt + 1))
  if [ "$attempt" -ge 12 ]; then
    echo "Temporal did not become healthy"
    exit 1
  fi
  echo "Temporal not ready yet (attempt ${attempt}/12)"
  sleep 5
done

if temporal operator namespace describe --namespace "$NAMESPACE" --address "$ADDRESS" >/dev/null 2>&1; then
  echo "Namespace '${NAMESPACE}' already exists"
else
  temporal operator namespace create --namespace "$NAMESPACE" --retention "$RETENTION" --address "$ADDRESS"
  echo "Namespace '${NAMESPACE}' created"
fi
