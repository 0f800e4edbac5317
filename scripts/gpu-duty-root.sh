#!/usr/bin/env bash
# gpu-duty-root.sh OUT: the GPU container test's job (cmd/bourse/testdata/
# gpuduty/duty.c) built into OUT/bin/duty, with the loader and the C
# library it links copied beside it at their own paths, so that OUT is a
# root file system the job runs in whatever the image around it (the test
# lays it over busybox). libcuda is not copied: the container runner
# mounts the host's own, as it does for any image.
set -euo pipefail
out="${1:?usage: gpu-duty-root.sh OUT}"
here="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out/bin"
${CC:-gcc} -O2 -Wall -Werror -o "$out/bin/duty" "$here/cmd/bourse/testdata/gpuduty/duty.c" -ldl
# ldd prints "name => /path (addr)" for a library and "/path (addr)" for the loader.
ldd "$out/bin/duty" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' | while read -r lib; do
	mkdir -p "$out$(dirname "$lib")"
	cp -L "$lib" "$out$lib"
done
echo "$out: $(find "$out" -type f | wc -l) files"
