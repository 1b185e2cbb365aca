#!/usr/bin/env bash
# Make the pgvector extension ("vector", >= 0.8) available in this machine's
# system PostgreSQL 15 (Debian bookworm, cluster 15/main on 127.0.0.1:5432).
#
# Debian bookworm ships no pgvector package for PostgreSQL 15, and the only
# reachable package sources are the Debian archive, PyPI and npm. So we build
# pgvector from Debian trixie's *source* package against bookworm's
# postgresql-server-dev-15. The trixie deb-src entry lives in a private,
# throw-away apt configuration (own sources list, lists dir and cache dir);
# the system's apt configuration is never modified. The archive URI is read at
# run time from the system's own apt sources.
#
# Idempotent: exits immediately when the extension is already available.
# Needs root (apt-get install, make install).
#
# Environment overrides (all optional):
#   PG_MAJOR (15) PG_CLUSTER (main) PGHOST (127.0.0.1) PGPORT (5432)
#   PGUSER (postgres)  PGVECTOR_MIN_VERSION (0.8)  PGVECTOR_SUITE (trixie)
#   PGVECTOR_DEBIAN_URI (archive URI; default: read from apt sources)
#   PGVECTOR_KEEP_WORKDIR=1 (keep the temporary build dir for debugging)
set -euo pipefail

PG_MAJOR="${PG_MAJOR:-15}"
PG_CLUSTER="${PG_CLUSTER:-main}"
PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config"
export PGHOST="${PGHOST:-127.0.0.1}"
export PGPORT="${PGPORT:-5432}"
export PGUSER="${PGUSER:-postgres}"
MIN_VERSION="${PGVECTOR_MIN_VERSION:-0.8}"
SUITE="${PGVECTOR_SUITE:-trixie}"
SRC_PKG="pgvector"            # Debian source package (binary: postgresql-NN-pgvector)
CHECK_DB="pgvector_check"
DEB822_SOURCES="/etc/apt/sources.list.d/debian.sources"
ONELINE_SOURCES="/etc/apt/sources.list"

log() { printf '[pgvector] %s\n' "$*"; }
die() { printf '[pgvector] ERROR: %s\n' "$*" >&2; exit 1; }

WORK=""
LOG="/dev/null"
cleanup() {
  local rc=$?
  if [[ -n "$WORK" && -d "$WORK" ]]; then
    if [[ "${PGVECTOR_KEEP_WORKDIR:-0}" == 1 ]]; then
      log "keeping work dir $WORK"
    else
      rm -rf "$WORK"
    fi
  fi
  exit "$rc"
}
trap cleanup EXIT

# run DESCRIPTION CMD...: run quietly, output goes to $LOG; show its tail on failure.
run() {
  local desc="$1"; shift
  log "$desc"
  if ! "$@" >>"$LOG" 2>&1; then
    printf '[pgvector] ERROR: failed: %s\n[pgvector] command: %s\n' "$desc" "$*" >&2
    [[ "$LOG" != /dev/null ]] && tail -n 60 "$LOG" >&2
    exit 1
  fi
}

psql_q() { psql -X -v ON_ERROR_STOP=1 -d postgres -tAc "$1"; }

ensure_server_running() {
  if pg_isready -h "$PGHOST" -p "$PGPORT" -q; then
    return 0
  fi
  command -v pg_ctlcluster >/dev/null || die "pg_ctlcluster not found: is postgresql-${PG_MAJOR} installed?"
  log "PostgreSQL not accepting connections on ${PGHOST}:${PGPORT}; starting cluster ${PG_MAJOR}/${PG_CLUSTER}"
  pg_ctlcluster --skip-systemctl-redirect "$PG_MAJOR" "$PG_CLUSTER" start
  local i
  for i in $(seq 1 30); do
    pg_isready -h "$PGHOST" -p "$PGPORT" -q && return 0
    sleep 1
  done
  die "PostgreSQL ${PG_MAJOR}/${PG_CLUSTER} did not become ready within 30 s"
}

already_available() {
  [[ "$(psql_q "select 1 from pg_available_extensions where name='vector' and default_version >= '${MIN_VERSION}'" 2>/dev/null)" == 1 ]]
}

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Print "URI<TAB>SIGNED_BY" of the system's main Debian archive (the stanza / line
# whose suites include a plain release name, i.e. not *-security / *-updates).
detect_debian_archive() {
  local out=""
  if [[ -r "$DEB822_SOURCES" ]]; then
    out="$(awk '
      BEGIN { RS = ""; FS = "\n" }
      {
        uri = ""; suites = ""; types = ""; sb = ""
        for (i = 1; i <= NF; i++) {
          line = $i
          if (line ~ /^[ \t]*#/) continue
          if (match(line, /^URIs:[ \t]*/))      { split(substr(line, RLENGTH + 1), a, /[ \t]+/); uri = a[1] }
          else if (match(line, /^Suites:[ \t]*/))    { suites = " " substr(line, RLENGTH + 1) " " }
          else if (match(line, /^Types:[ \t]*/))     { types = " " substr(line, RLENGTH + 1) " " }
          else if (match(line, /^Signed-By:[ \t]*/)) { sb = substr(line, RLENGTH + 1) }
          else if (line ~ /^Enabled:[ \t]*no/)       { uri = "" }
        }
        if (uri == "" || types !~ / deb(-src)? /) next
        if (suites ~ / [a-z]+ /) {             # a plain suite name such as "bookworm"
          if (sb !~ /^\//) sb = ""            # ignore inline key blocks
          printf "%s\t%s\n", uri, sb
          exit
        }
      }' "$DEB822_SOURCES")"
  fi
  if [[ -z "$out" && -r "$ONELINE_SOURCES" ]]; then
    out="$(awk '
      $1 ~ /^deb(-src)?$/ {
        i = 2
        if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
        uri = $i; suite = $(i + 1)
        if (suite ~ /^[a-z]+$/) { printf "%s\t\n", uri; exit }
      }' "$ONELINE_SOURCES")"
  fi
  printf '%s' "$out"
}

# ---------------------------------------------------------------------------
[[ "$(id -u)" -eq 0 ]] || die "must run as root (needs apt-get install and make install)"

ensure_server_running

if already_available; then
  ver="$(psql_q "select default_version from pg_available_extensions where name='vector'")"
  log "vector ${ver} already available in PostgreSQL ${PG_MAJOR}; nothing to do"
  exit 0
fi

start_ts=$(date +%s)
WORK="$(mktemp -d /tmp/pgvector-build.XXXXXX)"
chmod 755 "$WORK"
LOG="$WORK/build.log"
log "vector >= ${MIN_VERSION} not available; building pgvector from Debian ${SUITE} sources (work dir ${WORK})"

# 1. Build dependencies from the system's (bookworm) apt configuration.
missing=()
for p in "postgresql-server-dev-${PG_MAJOR}" build-essential dpkg-dev; do
  is_installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  log "installing build dependencies: ${missing[*]} (pulls in clang/llvm; takes a while)"
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$LOG" 2>&1; then
    run "apt-get update (system package lists)" apt-get update -qq
    run "apt-get install ${missing[*]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
fi
[[ -x "$PG_CONFIG" ]] || die "$PG_CONFIG not found after installing postgresql-server-dev-${PG_MAJOR}"

# 2. Private apt configuration holding only the trixie deb-src entry.
archive="$(detect_debian_archive)"
uri="${PGVECTOR_DEBIAN_URI:-${archive%%$'\t'*}}"
signed_by="${archive#*$'\t'}"
[[ -n "$uri" ]] || die "could not read the Debian archive URI from $DEB822_SOURCES or $ONELINE_SOURCES (set PGVECTOR_DEBIAN_URI)"
if [[ -z "$signed_by" || ! -r "$signed_by" ]]; then
  signed_by=""
  [[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] && signed_by=/usr/share/keyrings/debian-archive-keyring.gpg
fi

APT_DIR="$WORK/apt"
mkdir -p "$APT_DIR/sources.list.d" "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
if [[ -n "$signed_by" ]]; then
  echo "deb-src [signed-by=${signed_by}] ${uri} ${SUITE} main" >"$APT_DIR/sources.list"
else
  echo "deb-src ${uri} ${SUITE} main" >"$APT_DIR/sources.list"
fi
log "private apt source: $(cat "$APT_DIR/sources.list")"
APT_OPTS=(
  -o "Dir::Etc::SourceList=$APT_DIR/sources.list"
  -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
  -o "Dir::State::Lists=$APT_DIR/lists"
  -o "Dir::Cache=$APT_DIR/cache"
  -o "APT::Sandbox::User=root"
)
run "apt-get update (private ${SUITE} deb-src list)" apt-get "${APT_OPTS[@]}" update -qq

src_version="$(apt-cache "${APT_OPTS[@]}" showsrc "$SRC_PKG" 2>>"$LOG" \
  | awk -v p="$SRC_PKG" '/^Package:/ { cur = $2 } /^Version:/ && cur == p { print $2 }' \
  | sort -V | tail -n 1)"
[[ -n "$src_version" ]] || die "source package '$SRC_PKG' not found in Debian ${SUITE}"
upstream="${src_version#*:}"; upstream="${upstream%-*}"
dpkg --compare-versions "$upstream" ge "$MIN_VERSION" \
  || die "Debian ${SUITE} has ${SRC_PKG} ${src_version}, older than ${MIN_VERSION}"
log "found source package ${SRC_PKG} ${src_version} in Debian ${SUITE}"

# 3. Download + unpack the source, build and install it for PostgreSQL 15.
mkdir -p "$WORK/src"
cd "$WORK/src"
run "apt-get source ${SRC_PKG}=${src_version}" \
  apt-get "${APT_OPTS[@]}" source -qq "${SRC_PKG}=${src_version}"
cd /
src_dir="$(find "$WORK/src" -mindepth 1 -maxdepth 1 -type d -name "${SRC_PKG}-*" | head -n 1)"
[[ -n "$src_dir" && -f "$src_dir/Makefile" ]] || die "unpacked source tree not found under $WORK/src"

# OPTFLAGS="": upstream defaults to -march=native, which makes the .so
# machine-specific; the generic build is portable (and builds in ~25 s).
build_ts=$(date +%s)
run "make (PG_CONFIG=${PG_CONFIG}, OPTFLAGS=\"\")" \
  make -C "$src_dir" -j"$(nproc)" OPTFLAGS="" PG_CONFIG="$PG_CONFIG"
run "make install" make -C "$src_dir" install OPTFLAGS="" PG_CONFIG="$PG_CONFIG"
log "build + install took $(( $(date +%s) - build_ts )) s"

# 4. Verify in a scratch database.
ensure_server_running
dropdb --if-exists "$CHECK_DB" >>"$LOG" 2>&1 || true
run "createdb ${CHECK_DB}" createdb "$CHECK_DB"
log "verifying CREATE EXTENSION vector, <=> and an HNSW index in ${CHECK_DB}"
if ! verify_out="$(psql -X -q -v ON_ERROR_STOP=1 -d "$CHECK_DB" -tA <<'SQL' 2>&1
CREATE EXTENSION vector;
CREATE TABLE items (id int PRIMARY KEY, embedding vector(3));
INSERT INTO items VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]');
CREATE INDEX ON items USING hnsw (embedding vector_cosine_ops);
SET enable_seqscan = off;
SELECT string_agg(id::text, ',' ORDER BY d) FROM (
  SELECT id, embedding <=> '[1,0,0]' AS d FROM items ORDER BY embedding <=> '[1,0,0]' LIMIT 2
) s;
SELECT extversion FROM pg_extension WHERE extname = 'vector';
SQL
)"; then
  dropdb --if-exists "$CHECK_DB" >/dev/null 2>&1 || true
  die "verification failed: $verify_out"
fi
dropdb --if-exists "$CHECK_DB"
nearest="$(sed -n 1p <<<"$verify_out")"
installed="$(sed -n 2p <<<"$verify_out")"
[[ "$nearest" == "1,3" ]] || die "unexpected cosine nearest-neighbour result '$nearest' (expected 1,3)"
already_available || die "vector still not listed in pg_available_extensions with version >= ${MIN_VERSION}"

log "OK: vector ${installed} installed for PostgreSQL ${PG_MAJOR} (from Debian ${SUITE} source ${SRC_PKG} ${src_version}) in $(( $(date +%s) - start_ts )) s"
