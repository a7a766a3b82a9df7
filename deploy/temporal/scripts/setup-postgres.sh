#!/bin/sh
# Creates Temporal's two PostgreSQL databases and brings their schemas up to date.
# Adapted from temporalio/samples-server compose/scripts/setup-postgres.sh (the
# successor of temporalio/docker-compose); credentials come from the environment.
# Safe to run on every start: "create" ignores an existing database, setup-schema
# skips a schema already past 0.0 and update-schema applies only missing versions.
set -eu

: "${POSTGRES_SEEDS:=temporal-postgresql}"
: "${DB_PORT:=5432}"
: "${POSTGRES_USER:=temporal}"
: "${SQL_PASSWORD:?SQL_PASSWORD (the Temporal database password) is required}"
: "${DBNAME:=temporal}"
: "${VISIBILITY_DBNAME:=temporal_visibility}"
export SQL_PASSWORD

SCHEMA_DIR=/etc/temporal/schema/postgresql/v12

echo "Waiting for PostgreSQL at ${POSTGRES_SEEDS}:${DB_PORT}..."
nc -z -w 10 "$POSTGRES_SEEDS" "$DB_PORT"

sql() {
  temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" "$@"
}

echo "Setting up database '${DBNAME}'..."
sql --db "$DBNAME" create
sql --db "$DBNAME" setup-schema -v 0.0
sql --db "$DBNAME" update-schema -d "$SCHEMA_DIR/temporal/versioned"

echo "Setting up visibility database '${VISIBILITY_DBNAME}'..."
sql --db "$VISIBILITY_DBNAME" create
sql --db "$VISIBILITY_DBNAME" setup-schema -v 0.0
sql --db "$VISIBILITY_DBNAME" update-schema -d "$SCHEMA_DIR/visibility/versioned"

echo "PostgreSQL schema setup complete"
