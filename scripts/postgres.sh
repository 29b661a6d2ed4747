#!/usr/bin/env bash
# Start a local PostgreSQL for optiforge (tests or shared use) and print its SQLAlchemy URL.
#
#   export OPTIFORGE_TEST_POSTGRES_URL="$(sudo scripts/postgres.sh)"
#
# Settings (environment): OPTIFORGE_PG_PORT (5432), OPTIFORGE_PG_USER (optiforge),
# OPTIFORGE_PG_PASSWORD, OPTIFORGE_PG_DATABASE (optiforge_test), OPTIFORGE_PG_MODE
# (auto|cluster|pg_ctl), OPTIFORGE_PG_DATA (pg_ctl mode's data folder).
#
# Run as root on Debian/Ubuntu. Installs the `postgresql` package if missing (apt-get), starts
# a cluster listening on 127.0.0.1:$PGPORT, creates the login role $PGUSER (password
# $PGPASSWORD, CREATEDB so tests can make scratch databases) and the database $PGDATABASE owned
# by it. Idempotent: re-running reuses what exists. Only the URL goes to stdout; progress goes
# to stderr.
set -euo pipefail

PGPORT="${OPTIFORGE_PG_PORT:-5432}"
PGUSER="${OPTIFORGE_PG_USER:-optiforge}"
PGPASSWORD="${OPTIFORGE_PG_PASSWORD:-optiforge-test-pw}"
PGDATABASE="${OPTIFORGE_PG_DATABASE:-optiforge_test}"
# "auto": Debian's pg_ctlcluster when present, else initdb + pg_ctl in $OPTIFORGE_PG_DATA.
MODE="${OPTIFORGE_PG_MODE:-auto}"

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 2; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs and starts PostgreSQL)"
for v in "$PGUSER" "$PGDATABASE"; do
  [[ "$v" =~ ^[a-z_][a-z0-9_]*$ ]] || die "invalid identifier: $v"
done
[[ "$PGPASSWORD" != *"'"* ]] || die "the password must not contain a single quote"

pg_bin_dir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

if [ -z "$(pg_bin_dir)" ]; then
  command -v apt-get >/dev/null || die "PostgreSQL is not installed and apt-get is not available"
  log "installing postgresql (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi
BIN="$(pg_bin_dir)"
VERSION="$(basename "$(dirname "$BIN")")"
mkdir -p /var/run/postgresql && chown postgres:postgres /var/run/postgresql

as_postgres() { su postgres -s /bin/sh -c "$*"; }

if [ "$MODE" = auto ]; then
  if command -v pg_ctlcluster >/dev/null; then MODE=cluster; else MODE=pg_ctl; fi
fi
[ "$MODE" = cluster ] || [ "$MODE" = pg_ctl ] || die "OPTIFORGE_PG_MODE must be auto, cluster or pg_ctl"

if [ "$MODE" = cluster ]; then
  # Debian's wrapper: one cluster "main" per installed version.
  if ! pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main"{f=1} END{exit !f}'; then
    log "creating cluster $VERSION/main on port $PGPORT"
    pg_createcluster "$VERSION" main -p "$PGPORT" >&2
  fi
  port="$(pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main"{print $3}')"
  [ "$port" = "$PGPORT" ] || die "cluster $VERSION/main uses port $port, not $PGPORT (set OPTIFORGE_PG_PORT=$port)"
  status="$(pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main"{print $4}')"
  if [ "$status" != "online" ]; then
    log "starting cluster $VERSION/main"
    pg_ctlcluster "$VERSION" main start >&2
  fi
else
  DATA="${OPTIFORGE_PG_DATA:-/var/lib/optiforge-postgres}"
  if [ ! -s "$DATA/PG_VERSION" ]; then
    log "initdb $DATA"
    mkdir -p "$DATA" && chown postgres:postgres "$DATA"
    as_postgres "'$BIN/initdb' -D '$DATA' --auth-local=peer --auth-host=scram-sha-256" >&2
  fi
  if ! as_postgres "'$BIN/pg_ctl' -D '$DATA' status" >/dev/null 2>&1; then
    log "starting $DATA"
    as_postgres "'$BIN/pg_ctl' -D '$DATA' -l '$DATA/server.log' -w -o \"-p $PGPORT -c listen_addresses=127.0.0.1\" start" >&2
  fi
fi

for _ in $(seq 1 60); do
  "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" && break
  sleep 0.5
done
"$BIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" || die "server is not accepting connections on 127.0.0.1:$PGPORT"

psql_admin() { as_postgres "psql -X -q -v ON_ERROR_STOP=1 -p $PGPORT -d postgres $*"; }

psql_admin >&2 <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$PGUSER') THEN
    CREATE ROLE $PGUSER LOGIN CREATEDB PASSWORD '$PGPASSWORD';
  ELSE
    ALTER ROLE $PGUSER LOGIN CREATEDB PASSWORD '$PGPASSWORD';
  END IF;
END
\$\$;
SQL
if [ "$(psql_admin -tAc "\"SELECT 1 FROM pg_database WHERE datname = '$PGDATABASE'\"")" != "1" ]; then
  log "creating database $PGDATABASE"
  psql_admin -c "\"CREATE DATABASE $PGDATABASE OWNER $PGUSER\"" >&2
fi

# Check the printed URL really works over TCP with the password before handing it out.
PGPASSWORD="$PGPASSWORD" "$BIN/psql" -X -q -h 127.0.0.1 -p "$PGPORT" -U "$PGUSER" -d "$PGDATABASE" \
  -tAc "SELECT 1" >/dev/null || die "cannot log in as $PGUSER over TCP"

echo "postgresql+psycopg://$PGUSER:$PGPASSWORD@127.0.0.1:$PGPORT/$PGDATABASE"
