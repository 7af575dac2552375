#!/usr/bin/env bash
# scripts/setup.sh (make setup): prepare a laptop before a workshop, on
# a good network, so the first lesson starts at once: fetch the Go
# modules bin/qlab, the exercises and the tests need, build bin/qlab and
# pre-compile the exercises' checks, then say what that took: the
# download (the module zips), the disk, the time. GO names the go command.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
mods=$("$GO" env GOMODCACHE)
cache=$("$GO" env GOCACHE)

kb() { du -sk "$1" 2>/dev/null | cut -f1 || echo 0; }
mb() { echo $((($1 + 512) / 1024)); }
clock() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

start=$SECONDS
zips0=$(kb "$mods/cache/download") mods0=$(kb "$mods") cache0=$(kb "$cache")

echo "setup: fetching what bin/qlab needs and building it"
bash scripts/build.sh bin/qlab ./cmd/qlab || exit
echo "setup: fetching what the exercises' checks and the tests need ($(clock) so far)"
"$GO" mod download || exit
echo "setup: compiling the exercises' checks ($(clock) so far)"
if ! "$GO" test -tags qlabex -vet=off -ldflags='-s -w' -run '^$' ./exercises/... >/dev/null 2>&1; then
	echo "setup: the exercises did not all compile (an edited exercise?); qlab ex says why" >&2
fi

zips=$(($(kb "$mods/cache/download") - zips0))
echo "setup: done in $(clock)"
echo "  fetched:      $(mb "$zips") MB of module downloads"
echo "  module cache: +$(mb $(($(kb "$mods") - mods0))) MB unpacked ($mods)"
echo "  build cache:  +$(mb $(($(kb "$cache") - cache0))) MB ($cache)"
echo "  bin/qlab:     $(mb "$(kb bin/qlab)") MB; make lesson-1 now starts at once"
