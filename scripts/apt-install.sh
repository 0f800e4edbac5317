#!/usr/bin/env bash
# apt-install.sh: install Debian packages for the test scripts (pg.sh,
# nats-server.sh, chromium.sh), waiting for another apt-get or dpkg to
# finish rather than failing on its lock:
#
#   scripts/apt-install.sh PACKAGE...
#
# apt-get install waits for dpkg's lock itself when told to
# (DPkg::Lock::Timeout), but apt-get update does not wait for the package
# lists' lock (/var/lib/apt/lists/lock, apt 2.6): that one is retried here
# until the same deadline. The install is tried first from the lists there
# are, and only when it fails are the lists updated and the install tried
# again. APT_LOCK_TIMEOUT is the wait in seconds (default 600).
set -euo pipefail

prog=apt-install.sh
log() { printf '%s: %s\n' "$prog" "$*" >&2; }

[[ $# -ge 1 ]] || { echo "usage: scripts/apt-install.sh PACKAGE..." >&2; exit 2; }
timeout=${APT_LOCK_TIMEOUT:-600}
deadline=$((SECONDS + timeout))
export DEBIAN_FRONTEND=noninteractive

install() {
	apt-get -o "DPkg::Lock::Timeout=$timeout" install -y -q --no-install-recommends "$@" >&2
}

# update retries apt-get update while another process holds the lists'
# lock, and fails at once on any other error.
update() {
	local out
	while :; do
		if out=$(apt-get -o "DPkg::Lock::Timeout=$timeout" update -q 2>&1); then
			return 0
		fi
		if ! grep -q 'Could not get lock' <<<"$out" || ((SECONDS >= deadline)); then
			printf '%s\n' "$out" >&2
			return 1
		fi
		log "another apt-get holds the package lists; waiting"
		sleep 2
	done
}

if install "$@"; then
	exit 0
fi
update || { log "apt-get update failed"; exit 1; }
install "$@" || { log "apt-get install $* failed"; exit 1; }
