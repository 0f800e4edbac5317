#!/usr/bin/env bash
# fuzz.sh: runs every Fuzz function in the module, one at a time (go test
# -fuzz takes one package and one target), each for $FUZZTIME (default 20s).
# Failing inputs are written to the package's testdata/fuzz directory; commit
# them with the fix, so that go test replays them from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}

# "import/path FuzzName" for each Fuzz function declared in a package's
# _test.go files (in-package and external tests alike).
targets=()
pkgs=$("$GO" list -f '{{.Dir}} {{.ImportPath}}' ./...)
while read -r dir pkg; do
	for f in "$dir"/*_test.go; do
		[[ -e $f ]] || continue
		while read -r name; do
			targets+=("$pkg $name")
		done < <(sed -n -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*\*testing\.F\).*/\1/p' "$f")
	done
done <<<"$pkgs"

if ((${#targets[@]} == 0)); then
	echo "fuzz.sh: no Fuzz functions found"
	exit 0
fi

failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "== $pkg $name ($FUZZTIME)"
	if ! "$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$pkg"; then
		failed+=("$t")
	fi
done

if ((${#failed[@]} > 0)); then
	echo "fuzz.sh: ${#failed[@]} of ${#targets[@]} fuzz targets failed:"
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
echo "fuzz.sh: all ${#targets[@]} fuzz targets passed"
