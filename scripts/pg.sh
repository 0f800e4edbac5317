#!/usr/bin/env bash
# pg.sh: a throwaway PostgreSQL cluster for tests and benchmarks, or one
# that stays up for development.
#
#   scripts/pg.sh run -- CMD [ARGS...]
#   scripts/pg.sh start | env | stop [--delete]
#
# starts a private cluster in a fresh temporary directory, listening on
# 127.0.0.1 only (and on a unix socket inside that directory), with a database
# named "bourse" and trust authentication; runs CMD with these set:
#
#   DATABASE_URL, BOURSE_TEST_DATABASE_URL
#                 postgres://postgres@127.0.0.1:PORT/bourse?sslmode=disable
#   PGHOST=127.0.0.1 PGPORT=PORT PGUSER=postgres PGDATABASE=bourse
#                 so that psql and pgbench need no flags
#   BOURSE_PG_SETTINGS
#                 the server version and the durability settings in force,
#                 for benchmarks to report
#   PG_POSTMASTER_PID
#                 the server's pid, for benchmarks that weigh its CPU
#   PATH          with the server's bin directory first (psql, pgbench)
#
# and then stops the cluster and removes the directory, whatever happens (CMD
# fails, the script is interrupted or terminated). It exits with CMD's status,
# or 128+N when killed by signal N.
#
# start, env and stop keep a development cluster in $PG_DEV_DIR (default
# /tmp/bourse-pg-dev-USER): start makes it the first time (database
# "bourse", trust authentication on 127.0.0.1, durable settings unless
# PG_DURABLE=0) and starts it, on the port it had before where that is
# free; env prints the same variables as export lines, for
#   eval "$(scripts/pg.sh env)"
# and stop stops it, keeping its data, or with --delete removes it too.
#
# Finding PostgreSQL: $PG_BINDIR if set, else initdb/pg_ctl/postgres on PATH,
# else the newest /usr/lib/postgresql/*/bin. If none is found and we are root
# on a system with apt-get, the "postgresql" package is installed (waiting
# for another apt-get's lock: scripts/apt-install.sh).
#
# Running as root (as CI does): PostgreSQL refuses to run as root, so the
# server runs as the "postgres" system user, which owns the temporary
# directory. Running as another user: the server runs as that user.
#
# Durability: the cluster is thrown away, so by default it runs with
# fsync=off, synchronous_commit=off and full_page_writes=off, which is safe
# here (a crash loses the cluster, which we delete anyway) and much faster.
# Set PG_DURABLE=1 to keep PostgreSQL's durable defaults, e.g. for benchmarks
# that should measure commit latency honestly. BOURSE_PG_SETTINGS says which.
#
# Environment knobs: PG_BINDIR (bin directory to use), PG_DURABLE=1,
# PG_MAX_CONNECTIONS (default 300), PG_KEEP=1 (keep the directory on exit,
# for post-mortems; the server is still stopped), PG_STAT_STATEMENTS=1 (load
# pg_stat_statements, to see where a benchmark's database time goes:
# `CREATE EXTENSION pg_stat_statements`, then query the view).
# shellcheck disable=SC2317 # cleanup and on_signal run from traps
set -euo pipefail

prog=pg.sh

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

log() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

usage() {
	cat >&2 <<'EOF'
usage: scripts/pg.sh run -- CMD [ARGS...]
       scripts/pg.sh start | env | stop [--delete]

run: runs CMD against a throwaway PostgreSQL cluster on 127.0.0.1 (database
"bourse", user "postgres", trust auth), with DATABASE_URL,
BOURSE_TEST_DATABASE_URL, PGHOST, PGPORT, PGUSER and PGDATABASE set, then
stops the cluster and deletes it. Exits with CMD's status.

start, env, stop: a development cluster that stays up, in $PG_DEV_DIR
(default /tmp/bourse-pg-dev-USER): start it (made the first time), print
its variables for eval "$(scripts/pg.sh env)", stop it (--delete: and
remove it).
EOF
	exit 2
}

# has_server_bins DIR: DIR holds initdb, pg_ctl and postgres.
has_server_bins() {
	[[ -x $1/initdb && -x $1/pg_ctl && -x $1/postgres ]]
}

# find_bindir prints the directory of the PostgreSQL server binaries.
find_bindir() {
	local p dir
	if p=$(command -v pg_ctl 2>/dev/null); then
		# Resolve symlinks (/usr/local/bin/pg_ctl -> /usr/lib/postgresql/15/bin)
		# so that initdb and postgres come from the same installation.
		dir=$(dirname -- "$(readlink -f -- "$p")")
		if has_server_bins "$dir"; then
			printf '%s\n' "$dir"
			return 0
		fi
	fi
	# Newest major version first: sort -V orders 9.6 < 10 < 15 < 16.
	for dir in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -rV) /usr/local/pgsql/bin; do
		if has_server_bins "$dir"; then
			printf '%s\n' "$dir"
			return 0
		fi
	done
	return 1
}

install_postgres() {
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
		die "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH or in /usr/lib/postgresql/*/bin.
Install them, e.g. 'sudo apt-get install postgresql' on Debian/Ubuntu, or set PG_BINDIR
to the directory that holds them. (Run this script as root with apt-get available
and it installs the package itself.)"
	fi
	log "PostgreSQL not found; installing the postgresql package with apt-get"
	bash "$(dirname -- "$0")/apt-install.sh" postgresql || die "installing postgresql failed"
}

[[ $# -ge 1 ]] || usage
mode=$1
shift
case $mode in
run)
	[[ ${1:-} == -- ]] && shift
	[[ $# -ge 1 ]] || usage
	;;
start | env) [[ $# -eq 0 ]] || usage ;;
stop) [[ $# -eq 0 || ($# -eq 1 && $1 == --delete) ]] || usage ;;
*) usage ;;
esac

# The development cluster's directory; the postgres user must reach it
# (root hands the server to it), so it is under /tmp.
devdir=${PG_DEV_DIR:-/tmp/bourse-pg-dev-$(id -un)}

# dev_env prints the development cluster's variables as export lines.
dev_env() {
	local port
	port=$(cat "$devdir/port" 2>/dev/null) || die "no development cluster in $devdir: scripts/pg.sh start"
	printf "export DATABASE_URL='postgres://postgres@127.0.0.1:%s/bourse?sslmode=disable'\n" "$port"
	printf 'export BOURSE_TEST_DATABASE_URL="$DATABASE_URL"\n'
	printf 'export PGHOST=127.0.0.1 PGPORT=%s PGUSER=postgres PGDATABASE=bourse\n' "$port"
}

if [[ $mode == env ]]; then
	dev_env
	exit 0
fi

if [[ -n ${PG_BINDIR:-} ]]; then
	has_server_bins "$PG_BINDIR" || die "PG_BINDIR=$PG_BINDIR lacks initdb, pg_ctl or postgres"
	bindir=$PG_BINDIR
elif ! bindir=$(find_bindir); then
	install_postgres
	bindir=$(find_bindir) || die "installed postgresql, but still cannot find initdb, pg_ctl and postgres"
fi

# Who runs the server: root cannot, so root hands it to the postgres user.
if [[ $(id -u) -eq 0 ]]; then
	pg_user=postgres
	if ! id -u "$pg_user" >/dev/null 2>&1; then
		log "creating system user $pg_user to run the server (PostgreSQL refuses to run as root)"
		useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$pg_user" >&2 || die "cannot create user $pg_user"
	fi
else
	pg_user=
fi

# as_pg CMD...: runs CMD as the server's user, from inside the cluster
# directory (the postgres user may not be allowed into the caller's cwd).
as_pg() {
	if [[ -z $pg_user ]]; then
		(cd "$tmp" && "$@")
	elif command -v runuser >/dev/null 2>&1; then
		(cd "$tmp" && runuser -u "$pg_user" -- "$@")
	else
		local q
		q=$(printf '%q ' "$@")
		(cd "$tmp" && su "$pg_user" -s /bin/sh -c "$q")
	fi
}

# The cluster's directory must be reachable by the postgres user and short
# enough for a unix socket path (at most 107 bytes with ".s.PGSQL.PORT").
if [[ $mode == run ]]; then
	base=${TMPDIR:-/tmp}
	if [[ -n $pg_user || ${#base} -gt 60 || ! -d $base || ! -w $base ]]; then
		base=/tmp
	fi
	tmp=$(mktemp -d "$base/bourse-pg.XXXXXXXXXX")
else
	tmp=$devdir
fi
data=$tmp/data
sock=$tmp/sock
logfile=$tmp/postgres.log
child=
started=

# init_cluster makes the cluster: initdb, its settings, database "bourse".
init_cluster() {
	mkdir -p "$sock"
	: >"$logfile"
	if [[ -n $pg_user ]]; then
		chown -R "$pg_user:" "$tmp"
	fi
	chmod 700 "$tmp"
	# No locale from the caller's environment (it may not be installed); UTF-8.
	if ! as_pg "$bindir/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
		>>"$logfile" 2>&1; then
		tail -n 30 "$logfile" >&2 || true
		die "initdb failed (log above)"
	fi

	if [[ ${PG_DURABLE:-} == 1 || ($mode == start && ${PG_DURABLE:-} != 0) ]]; then
		durability="fsync=on synchronous_commit=on full_page_writes=on"
	else
		# A throwaway cluster: durability buys nothing, and costs a lot of time.
		durability="fsync=off synchronous_commit=off full_page_writes=off"
	fi
	{
		echo "# added by scripts/pg.sh"
		echo "listen_addresses = '127.0.0.1'"
		echo "unix_socket_directories = '$sock'"
		echo "max_connections = ${PG_MAX_CONNECTIONS:-300}"
		if [[ ${PG_STAT_STATEMENTS:-} == 1 ]]; then
			echo "shared_preload_libraries = 'pg_stat_statements'"
		fi
		for kv in $durability; do
			echo "${kv%%=*} = ${kv#*=}"
		done
	} >>"$data/postgresql.conf"

	# The database "bourse", created in single-user mode: needs no client tools
	# and no running server.
	if ! echo "CREATE DATABASE bourse;" |
		as_pg "$bindir/postgres" --single -D "$data" postgres >>"$logfile" 2>&1; then
		tail -n 30 "$logfile" >&2 || true
		die "creating database bourse failed (log above)"
	fi
}

stop_cluster() {
	[[ -n $started ]] || return 0
	started=
	if ! as_pg "$bindir/pg_ctl" stop -D "$data" -m immediate -w -t 30 >>"$logfile" 2>&1; then
		# pg_ctl could not stop it: kill the postmaster (its children follow).
		local pid
		pid=$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)
		if [[ $pid =~ ^[0-9]+$ ]]; then
			log "pg_ctl stop failed; killing postmaster $pid"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
}

# The development cluster stays up and stays put, unless starting it
# failed.
if [[ $mode == stop ]]; then
	[[ -d $data ]] || die "no development cluster in $devdir"
	if as_pg "$bindir/pg_ctl" status -D "$data" >/dev/null 2>&1; then
		as_pg "$bindir/pg_ctl" stop -D "$data" -m fast -w -t 60 >>"$logfile" 2>&1 || die "pg_ctl stop failed (see $logfile)"
		log "stopped the development cluster in $devdir"
	fi
	if [[ ${1:-} == --delete ]]; then
		rm -rf -- "$devdir"
		log "deleted $devdir"
	fi
	exit 0
fi

cleanup() {
	local rc=$?
	trap - EXIT INT TERM HUP
	if [[ $mode == start ]]; then
		((rc == 0)) || stop_cluster || true
		exit "$rc"
	fi
	stop_cluster || true
	if [[ ${PG_KEEP:-} == 1 ]]; then
		log "kept $tmp"
	else
		rm -rf -- "$tmp"
	fi
	exit "$rc"
}

# on_signal SIG CODE: pass the signal on to CMD, give it 10s to end, then go.
# (A terminal's ^C reaches CMD directly too; passing it again is harmless.)
on_signal() {
	local sig=$1 code=$2 i
	if [[ -n $child ]] && kill -0 "$child" 2>/dev/null; then
		kill -s "$sig" "$child" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			kill -0 "$child" 2>/dev/null || break
			sleep 0.1
		done
		kill -s KILL "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	exit "$code"
}

trap cleanup EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

version=$("$bindir/postgres" --version)
if [[ $mode == start && -f $data/PG_VERSION ]]; then
	if as_pg "$bindir/pg_ctl" status -D "$data" >/dev/null 2>&1; then
		log "the development cluster in $devdir runs already; its settings: eval \"\$(scripts/pg.sh env)\""
		exit 0
	fi
else
	init_cluster
fi
show_logs() {
	tail -n 20 "$logfile" >&2 || true
	tail -n 3 "$tmp/pg_ctl.log" >&2 || true
}

# port_in_use PORT: something accepts connections on 127.0.0.1:PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Pick a random port below the kernel's ephemeral range (32768-60999 on
# Linux, where client connections get theirs) that nobody listens on. Two
# runs may still pick the same one at the same moment: then one server fails
# to bind, and we try again with another port.
port=
started=1 # from here on, cleanup stops whatever may have started
for ((attempt = 1; attempt <= 20; attempt++)); do
	p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
	if ((attempt == 1)) && [[ $mode == start && -f $tmp/port ]]; then
		p=$(cat "$tmp/port") # the development cluster's URL stays the same
	fi
	port_in_use "$p" && continue
	logsize=$(stat -c %s "$logfile")
	if as_pg "$bindir/pg_ctl" start -D "$data" -l "$logfile" -w -t 60 -o "-p $p" >>"$tmp/pg_ctl.log" 2>&1; then
		port=$p
		break
	fi
	# Lost a race for the port? Look at what this attempt logged.
	if tail -c +"$((logsize + 1))" "$logfile" |
		grep -q -E 'could not bind|could not create any TCP/IP sockets|Address already in use|could not create lock file'; then
		continue
	fi
	log "PostgreSQL failed to start; the end of its log:"
	show_logs
	exit 1
done
if [[ -z $port ]]; then
	log "PostgreSQL failed to start after $((attempt - 1)) attempts (no free port?); the end of its log:"
	show_logs
	exit 1
fi

if [[ $mode == start ]]; then
	echo "$port" >"$tmp/port"
	log "$version on 127.0.0.1:$port, data in $data; stop it with scripts/pg.sh stop"
	log "its settings: eval \"\$(scripts/pg.sh env)\""
	exit 0
fi

export DATABASE_URL="postgres://postgres@127.0.0.1:$port/bourse?sslmode=disable"
export BOURSE_TEST_DATABASE_URL=$DATABASE_URL
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=bourse
export BOURSE_PG_SETTINGS="$version; max_connections=${PG_MAX_CONNECTIONS:-300} $durability"
# The postmaster's pid, for benchmarks that weigh the server's CPU (its
# backends' and, once they exit, its children's).
PG_POSTMASTER_PID=$(head -n 1 "$data/postmaster.pid")
export PG_POSTMASTER_PID
export PATH="$bindir:$PATH"
unset PGPASSWORD PGSERVICE PGSSLMODE PGOPTIONS PGHOSTADDR
log "$version on 127.0.0.1:$port ($durability), data in $data"

# CMD runs in the background so that a TERM or INT sent to this script alone
# is handled at once rather than after CMD ends. The explicit <&0 keeps its
# standard input (bash would give a background job /dev/null), and env
# --default-signal undoes bash's ignoring of INT and QUIT in background jobs,
# so that ^C reaches CMD as usual.
run_cmd=("$@")
if env --default-signal=INT true 2>/dev/null; then
	run_cmd=(env "--default-signal=INT,QUIT" -- "$@")
fi
"${run_cmd[@]}" <&0 &
child=$!
status=0
wait "$child" || status=$?
child=
exit "$status"
