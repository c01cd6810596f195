#!/usr/bin/env bash
# A throw-away PostgreSQL server for the store's tests and benchmark (notebook 11).
#
#   bash scripts/postgres.sh up      install Debian's postgresql if missing (root only), create a cluster
#                                    under build/postgres (or $EVIDENCE_PG_DIR), start it on a free loopback
#                                    port and print the DSN (also written to build/postgres.dsn)
#   bash scripts/postgres.sh dsn     print the DSN of the running server (exit 1 if none)
#   bash scripts/postgres.sh down    stop the server (the cluster stays; `rm -rf build/postgres`, or the /tmp
#                                    folder `up` named, removes it)
#
# Use it:  export EVIDENCE_PG_DSN="$(bash scripts/postgres.sh up | tail -1)"
#
# PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` system user and every
# server command runs under `runuser -u postgres`. When that user cannot enter the checkout (a clone in root's
# home, or in a `mktemp -d` folder: mode 700), the cluster lives in /tmp/evidence-pg-<first 12 hex of the
# sha256 of the checkout's path> instead (owned by postgres, mode 700; `up` says so on stderr), a name `dsn` and
# `down` compute again. The cluster is UTF-8 with LC_CTYPE C.UTF-8 (pg_trgm skips non-ASCII characters under
# LC_CTYPE=C). It listens on 127.0.0.1 only and trusts local connections: a test
# server, never a production one.
set -euo pipefail
cd "$(dirname "$0")/.."

DSN_FILE="${EVIDENCE_PG_DSN_FILE:-$PWD/build/postgres.dsn}"
DB=evidence

say() { echo "postgres: $*" >&2; }

is_root() { [ "$(id -u)" = 0 ]; }

# Can the postgres system user enter folder $1 (and so every folder above it)?
postgres_enters() { id postgres >/dev/null 2>&1 && runuser -u postgres -- test -x "$1" 2>/dev/null; }

# Where the cluster lives: $EVIDENCE_PG_DIR; else build/postgres in the checkout; as root, when the postgres
# user cannot reach the checkout's build folder, a folder under /tmp named after the checkout (the same answer
# for up, dsn and down: it depends only on the checkout's path and its folders' modes). Called after the
# install, which creates the postgres user.
resolve_pgdir() {
    FALLBACK=""
    reach=""
    if [ -n "${EVIDENCE_PG_DIR:-}" ]; then
        case "$EVIDENCE_PG_DIR" in /*) PGDIR="$EVIDENCE_PG_DIR" ;; *) PGDIR="$PWD/$EVIDENCE_PG_DIR" ;; esac
    else
        PGDIR="$PWD/build/postgres"
        if is_root && id postgres >/dev/null 2>&1; then
            reach="$PWD"
            [ -d "$PWD/build" ] && reach="$PWD/build"
            [ -d "$PGDIR" ] && reach="$PGDIR"
            if ! postgres_enters "$reach"; then
                FALLBACK=1
                PGDIR="/tmp/evidence-pg-$(printf '%s' "$(pwd -P)" | sha256sum | cut -c1-12)"
            fi
        fi
    fi
    DATA="$PGDIR/data"
}

pg_bin() {
    local d
    d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
    [ -n "$d" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}

install_if_missing() {
    if [ -n "$(pg_bin || true)" ] && ls /usr/share/postgresql/*/extension/pg_trgm.control >/dev/null 2>&1; then
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        say "PostgreSQL is not installed. Install it (Debian/Ubuntu: sudo apt-get install postgresql postgresql-contrib)"
        say "and run this again, or set EVIDENCE_PG_DSN to a server you have."
        exit 1
    fi
    say "installing Debian's postgresql and postgresql-contrib with apt-get (about a minute)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    # The package would start its own cluster on 5432; policy-rc.d keeps services from starting.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d.evidence && chmod +x /usr/sbin/policy-rc.d.evidence
    [ -e /usr/sbin/policy-rc.d ] || cp /usr/sbin/policy-rc.d.evidence /usr/sbin/policy-rc.d
    apt-get install -y -qq postgresql postgresql-contrib >&2
    cmp -s /usr/sbin/policy-rc.d /usr/sbin/policy-rc.d.evidence && rm -f /usr/sbin/policy-rc.d
    rm -f /usr/sbin/policy-rc.d.evidence
}

# Run a server command as the cluster's owner: `postgres` when we are root (from /, a folder it can enter),
# ourselves otherwise.
as_owner() {
    if is_root; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

# The folder under /tmp for a checkout postgres cannot enter: created here (mode 700, then given to postgres),
# or, if it exists, accepted only as a real folder of postgres's with mode 700 (/tmp is everybody's).
make_fallback_dir() {
    if [ ! -e "$PGDIR" ] && ! [ -L "$PGDIR" ]; then
        mkdir -m 700 "$PGDIR"
        chown postgres: "$PGDIR"
    fi
    if [ -L "$PGDIR" ] || [ ! -d "$PGDIR" ] || [ "$(stat -c '%U %a' "$PGDIR")" != "postgres 700" ]; then
        say "$PGDIR is not a folder of user postgres with mode 700; remove it or set EVIDENCE_PG_DIR"
        exit 1
    fi
}

running() { [ -f "$DATA/PG_VERSION" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cmd_up() {
    install_if_missing
    resolve_pgdir
    BIN="$(pg_bin)"
    (umask 022 && mkdir -p "$(dirname "$DSN_FILE")")  # folders made here: enterable by postgres
    if is_root; then
        id postgres >/dev/null 2>&1 || { say "no 'postgres' system user (the Debian package creates it)"; exit 1; }
        if [ -n "$FALLBACK" ]; then
            make_fallback_dir
            say "user postgres cannot enter $reach: keeping the cluster in $PGDIR (owned by postgres, mode 700)"
        else
            (umask 022 && mkdir -p "$PGDIR")
            chown postgres: "$PGDIR"
        fi
        # the postgres user must be able to reach $PGDIR (EVIDENCE_PG_DIR is used as given)
        postgres_enters "$PGDIR" || { say "user postgres cannot enter $PGDIR; set EVIDENCE_PG_DIR elsewhere"; exit 1; }
    else
        mkdir -p "$PGDIR"
    fi
    if [ ! -f "$DATA/PG_VERSION" ]; then
        say "initdb $DATA (UTF8, locale C.UTF-8)"
        as_owner "$BIN/initdb" -D "$DATA" -U postgres --encoding=UTF8 --locale=C.UTF-8 --auth=trust >/dev/null
    fi
    if running; then
        say "already running"
        cat "$DSN_FILE"
        return 0
    fi
    local port tries=0
    until [ "$tries" -ge 5 ]; do
        port="$(free_port)"
        if as_owner "$BIN/pg_ctl" -D "$DATA" -l "$PGDIR/server.log" -w -t 60 \
            -o "-p $port -k $PGDIR -c listen_addresses=127.0.0.1 -c fsync=on" start >/dev/null; then
            break
        fi
        tries=$((tries + 1))
        say "start on port $port failed (see $PGDIR/server.log); retrying"
    done
    running || { say "could not start the server"; tail -20 "$PGDIR/server.log" >&2; exit 1; }
    as_owner "$BIN/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qtAc \
        "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1 \
        || as_owner "$BIN/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DB"
    echo "postgresql://postgres@127.0.0.1:$port/$DB" > "$DSN_FILE"
    say "running on 127.0.0.1:$port (data in $DATA); DSN written to $DSN_FILE"
    cat "$DSN_FILE"
}

cmd_down() {
    resolve_pgdir
    BIN="$(pg_bin || true)"
    if [ -n "$BIN" ] && running; then
        as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
        say "stopped"
    else
        say "not running"
    fi
    rm -f "$DSN_FILE"
}

cmd_dsn() {
    resolve_pgdir
    BIN="$(pg_bin || true)"
    if [ -n "$BIN" ] && running && [ -f "$DSN_FILE" ]; then cat "$DSN_FILE"; else say "not running (bash scripts/postgres.sh up)"; exit 1; fi
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    dsn) cmd_dsn ;;
    *) echo "usage: bash scripts/postgres.sh up|down|dsn" >&2; exit 2 ;;
esac
