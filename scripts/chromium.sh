#!/usr/bin/env bash
# chromium.sh: make sure a headless Chromium is there for the console's
# browser test (console/browser_test.go).
#
#   scripts/chromium.sh
#
# Does nothing if chromium (or chromium-browser, google-chrome) is on PATH
# or $BOURSE_CHROME names one. Otherwise, when running as root on a system
# with apt-get (as CI does on a fresh Debian machine), it installs Debian's
# "chromium" package (waiting for another apt-get's lock:
# scripts/apt-install.sh). Otherwise it says how to install one and exits 0: the
# browser test then skips, except with CI=true, where it fails.
set -euo pipefail

prog=chromium.sh
log() { printf '%s: %s\n' "$prog" "$*" >&2; }

if [[ -n ${BOURSE_CHROME:-} ]] && [[ -x $BOURSE_CHROME ]]; then
	exit 0
fi
for c in chromium chromium-browser google-chrome; do
	if command -v "$c" >/dev/null 2>&1; then
		exit 0
	fi
done
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
	log "no Chromium found: install Debian's 'chromium' package (sudo apt-get install chromium) or set BOURSE_CHROME; the console's browser test skips until then (and fails in CI)"
	exit 0
fi
log "Chromium not found; installing the chromium package with apt-get"
bash "$(dirname -- "$0")/apt-install.sh" chromium || { log "installing chromium failed"; exit 1; }
