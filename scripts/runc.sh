#!/usr/bin/env bash
# runc.sh: make sure runc and a static busybox are there for the container
# runner's tests (server/container, and bourse server's in cmd/bourse), which
# run containers for real.
#
#   scripts/runc.sh
#
# Does nothing if runc is on PATH and busybox is the static one. Otherwise,
# when running as root on a system with apt-get (as CI does on a fresh Debian
# machine), it installs Debian's "runc" and "busybox-static" packages (waiting
# for another apt-get's lock: scripts/apt-install.sh). Otherwise it says how
# to install them and exits 0: the tests then skip, saying what is missing,
# except with CI=true, where they fail. They also need root to run.
set -euo pipefail

prog=runc.sh
log() { printf '%s: %s\n' "$prog" "$*" >&2; }

# static says whether the busybox on PATH needs no dynamic loader (Debian's
# busybox package links one; busybox-static does not).
static() {
	local bb
	bb=$(command -v busybox) || return 1
	! LC_ALL=C readelf -l "$bb" 2>/dev/null | grep -q 'Requesting program interpreter' &&
		! LC_ALL=C file -L "$bb" 2>/dev/null | grep -q 'dynamically linked'
}

need=()
command -v runc >/dev/null 2>&1 || need+=(runc)
static || need+=(busybox-static)
if [[ ${#need[@]} -eq 0 ]]; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	log "missing ${need[*]}: install them (sudo apt-get install ${need[*]}); the container tests skip until then, and need root (and fail in CI)"
	exit 0
fi
log "installing ${need[*]} with apt-get"
bash "$(dirname -- "$0")/apt-install.sh" "${need[@]}" || { log "installing ${need[*]} failed"; exit 1; }
