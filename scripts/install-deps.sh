#!/usr/bin/env bash
# install-deps.sh — install what Runnel's tests need on a fresh Debian machine.
#
# Idempotent: each step checks first and does nothing if its tool is present.
# Run as root (CI runs as root). Prints every action it takes.
#
#   1. PostgreSQL server binaries (initdb, postgres) from Debian's packages,
#      used by internal/testutil/pgtest (metastore, slt and differential tests).
#   2. versitygw, an S3-compatible gateway with a POSIX-directory backend,
#      built from source with `go install` at a pinned version, used by
#      internal/testutil/s3test for the S3 object-store tests. v1.8.0 builds
#      with the repository's Go toolchain (1.26) and needs no network at run
#      time; its posix backend keeps objects as plain files with xattrs.
#   3. kcat (Debian package), an independent Kafka producer/consumer
#      (librdkafka) used by internal/connector/kafka tests against kfake.
#   4. sqlsmith (Debian's package), a random query generator that builds its
#      queries from the server's own catalog; internal/sqlsmithtest points
#      it at a running Runnel.
#   5. chromium (Debian's package), the headless browser that
#      internal/httpapi's dashboard tests drive with chromedp.
#   5b. prometheus (Debian's package: prometheus and promtool, bookworm's
#      2.42.0), the peer of internal/promql's differential tests, remote
#      read test and benchmark.
#   6. The client matrix's runtimes (internal/clienttest): psql (Debian's
#      postgresql-client), psycopg2, SQLAlchemy and pandas for Debian's own
#      /usr/bin/python3, pgjdbc and a JDK (javac compiles the test program),
#      and Node.js with npm. Debian packages are those of the release
#      (bookworm: psycopg2 2.9.5, SQLAlchemy 1.4.46, pandas 1.5.3, pgjdbc
#      42.5.5, OpenJDK 17, Node 18+); the npm drivers are pinned exactly by
#      internal/clienttest/testdata/node/package-lock.json and installed by
#      `npm ci` into that directory (offline if already there).
set -euo pipefail

VERSITYGW_VERSION="v1.8.0"

log() { echo "install-deps: $*"; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- PostgreSQL -------------------------------------------------------------
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
	log "postgresql: found $(ls -d /usr/lib/postgresql/*/bin/initdb | tr '\n' ' ')"
else
	log "postgresql: not found; running apt-get update && apt-get install -y postgresql"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update
	as_root apt-get install -y --no-install-recommends postgresql
fi
# Debian's package starts a system cluster; tests run their own clusters and
# need none. Leave it alone if it runs: it listens on 5432, tests never do.
if ! id postgres >/dev/null 2>&1; then
	log "postgresql: creating OS user 'postgres' (clusters cannot run as root)"
	as_root useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

# --- kcat ------------------------------------------------------------------
if command -v kcat >/dev/null 2>&1; then
	log "kcat: found $(command -v kcat)"
else
	log "kcat: not found; running apt-get install -y kcat"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update
	as_root apt-get install -y --no-install-recommends kcat
fi

# --- versitygw --------------------------------------------------------------
GOBIN_DIR="$(go env GOBIN)"
[ -n "$GOBIN_DIR" ] || GOBIN_DIR="$(go env GOPATH)/bin"
want="versitygw ${VERSITYGW_VERSION}"
have=""
if [ -x "$GOBIN_DIR/versitygw" ]; then
	have="$(go version -m "$GOBIN_DIR/versitygw" 2>/dev/null | awk '$1=="mod" && $2=="github.com/versity/versitygw" {print "versitygw", $3}')"
fi
if [ "$have" = "$want" ]; then
	log "versitygw: found $GOBIN_DIR/versitygw ($have)"
else
	log "versitygw: installing ${VERSITYGW_VERSION} into $GOBIN_DIR (go install; takes ~2 min on 2 cores)"
	# Outside the module so the project's go.mod is neither read nor changed.
	(cd / && go install "github.com/versity/versitygw/cmd/versitygw@${VERSITYGW_VERSION}")
	log "versitygw: installed $GOBIN_DIR/versitygw"
fi
if ! command -v versitygw >/dev/null 2>&1; then
	log "note: $GOBIN_DIR is not on PATH; s3test also looks there and in \$VERSITYGW"
fi
# --- sqlsmith --------------------------------------------------------------
if command -v sqlsmith >/dev/null 2>&1; then
	log "sqlsmith: found $(command -v sqlsmith)"
else
	log "sqlsmith: not found; running apt-get update && apt-get install -y sqlsmith"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update
	as_root apt-get install -y --no-install-recommends sqlsmith
fi
# --- chromium --------------------------------------------------------------
if command -v chromium >/dev/null 2>&1; then
	log "chromium: found $(command -v chromium)"
else
	log "chromium: not found; running apt-get update && apt-get install -y chromium"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update
	as_root apt-get install -y --no-install-recommends chromium
fi
# --- prometheus ------------------------------------------------------------
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
	log "prometheus: found $(command -v prometheus)"
else
	log "prometheus: not found; running apt-get update && apt-get install -y prometheus"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update
	as_root apt-get install -y --no-install-recommends prometheus
fi
# --- client matrix runtimes (internal/clienttest) ---------------------------
need_pkgs=()
command -v psql >/dev/null 2>&1 || need_pkgs+=(postgresql-client)
/usr/bin/python3 -c 'import psycopg2' >/dev/null 2>&1 || need_pkgs+=(python3-psycopg2)
/usr/bin/python3 -c 'import sqlalchemy' >/dev/null 2>&1 || need_pkgs+=(python3-sqlalchemy)
/usr/bin/python3 -c 'import pandas' >/dev/null 2>&1 || need_pkgs+=(python3-pandas)
[ -e /usr/share/java/postgresql.jar ] || need_pkgs+=(libpostgresql-jdbc-java)
command -v javac >/dev/null 2>&1 || need_pkgs+=(default-jdk-headless)
command -v node >/dev/null 2>&1 || need_pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || need_pkgs+=(npm)
command -v mysql >/dev/null 2>&1 || need_pkgs+=(mariadb-client) # internal/mysqlwire's TestMySQLCLI
if [ ${#need_pkgs[@]} -eq 0 ]; then
	log "clients: psql, psycopg2, sqlalchemy, pandas, pgjdbc, javac, node, npm, mysql found"
else
	log "clients: running apt-get install -y ${need_pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get update
	as_root apt-get install -y --no-install-recommends "${need_pkgs[@]}"
fi
node_dir="$(cd "$(dirname "$0")/.." && pwd)/internal/clienttest/testdata/node"
if [ -f "$node_dir/package-lock.json" ]; then
	if (cd "$node_dir" && npm ls --omit=dev >/dev/null 2>&1); then
		log "clients: node drivers found in $node_dir/node_modules"
	else
		log "clients: npm ci in $node_dir (versions from package-lock.json)"
		(cd "$node_dir" && npm ci --no-audit --no-fund)
	fi
fi
log "done"
