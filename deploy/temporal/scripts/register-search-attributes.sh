#!/bin/sh
# Registers the application's custom search attributes (all Keyword) on its
# namespace. Idempotent: an attribute that is already registered is left alone.
set -eu

NAMESPACE=${NAMESPACE:-default}
TEMPORAL_ADDRESS=${TEMPORAL_ADDRESS:-temporal:7233}
SEARCH_ATTRIBUTES=${SEARCH_ATTRIBUTES:-"TeamId ProjectId EnvironmentId TaskKind TaskType TaskId"}
TEMPORAL_HOST=$(echo "$TEMPORAL_ADDRESS" | cut -d: -f1)
TEMPORAL_PORT=$(echo "$TEMPORAL_ADDRESS" | cut -d: -f2)
TEMPORAL_IP=$(getent ahosts "$TEMPORAL_HOST" | grep STREAM | head -1 | awk '{print $1}')
ADDRESS="${TEMPORAL_IP:-$TEMPORAL_HOST}:${TEMPORAL_PORT}"

# The namespace is created by temporal-create-namespace; it can take a moment
# to be visible to every frontend.
attempt=0
until temporal operator namespace describe --namespace "$NAMESPACE" --address "$ADDRESS" >/dev/null 2>&1; do
  attempt=$((attempt + 1))
  if [ "$attempt" -ge 30 ]; then
    echo "Namespace '${NAMESPACE}' not found"
    exit 1
  fi
  sleep 2
done

registered() {
  temporal operator search-attribute list --namespace "$NAMESPACE" --address "$ADDRESS" | grep -qw "$1"
}

for name in $SEARCH_ATTRIBUTES; do
  if registered "$name"; then
    echo "Search attribute ${name} already registered"
    continue
  fi
  if temporal operator search-attribute create --namespace "$NAMESPACE" --address "$ADDRESS" \
       --name "$name" --type Keyword; then
    echo "Search attribute ${name} (Keyword) registered"
  elif registered "$name"; then
    # Registered concurrently, or the server answered "already exists".
    echo "Search attribute ${name} already registered"
  else
    echo "Could not register search attribute ${name}"
    exit 1
  fi
done

temporal operator search-attribute list --namespace "$NAMESPACE" --address "$ADDRESS"
