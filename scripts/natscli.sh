#!/usr/bin/env bash
# Builds natscli v0.3.0, the NATS command-line client, into .cache/natscli
# and prints its path. `go install …@latest` is refused by the module proxy
# here; what works is a scratch module that pins it (and its cli package).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.cache/natscli"
bin="$dir/nats"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q '^v0.3.0$'; then
  echo "$bin"
  exit 0
fi
mkdir -p "$dir/src"
(
  cd "$dir/src"
  [ -f go.mod ] || go mod init natscli-build >/dev/null 2>&1
  go get github.com/nats-io/natscli@v0.3.0 >&2
  go get github.com/nats-io/natscli/cli@v0.3.0 >&2
  go build -o "$bin" github.com/nats-io/natscli/nats >&2
)
echo "$bin"
