#!/bin/sh
# Writes ./.env (next to docker-compose.yml) from deploy/env.example with fresh
# random secrets. Leaves an existing .env alone.
set -eu
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
env_file="$root/.env"
if [ -e "$env_file" ]; then
  echo "$env_file exists; not overwriting it" >&2
  exit 0
fi
rand() {
  if command -v openssl >/dev/null 2>&1; then
    openssl rand -hex 32
  else
    od -An -N32 -tx1 /dev/urandom | tr -d ' \n'
  fi
}
umask 077
while IFS= read -r line; do
  case "$line" in
    TOKEN_HMAC_KEY=|SESSION_SECRET=|ENCRYPTION_KEY=|APP_DB_PASSWORD=|TEMPORAL_DB_PASSWORD=)
      printf '%s%s\n' "$line" "$(rand)" ;;
    *)
      printf '%s\n' "$line" ;;
  esac
done < "$root/deploy/env.example" > "$env_file"
echo "wrote $env_file"
