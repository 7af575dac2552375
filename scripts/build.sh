#!/usr/bin/env bash
# scripts/build.sh OUT PKG: go build -o OUT PKG, saying what it is doing
# at least every 5 s while it takes long. A first build fetches the
# modules and compiles a few hundred packages: minutes on a laptop, and
# go build prints nothing for most of them. A build with warm caches
# stays silent. GO names the go command (default go).
#
# It reads go build -v: "go: downloading M V" lines count the modules
# fetched, a bare import path is a package compiled, anything else (an
# error) is passed on as it is. The exit status is go build's.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/build.sh OUT PKG" >&2; exit 2; }
out=$1 pkg=$2
GO=${GO:-go}
# Seconds a build may take before it speaks (a warm build never does),
# and between two progress reports; a test sets them shorter.
quiet=${QLAB_BUILD_QUIET:-3}
every=${QLAB_BUILD_EVERY:-5}

start=$SECONDS
tty=false
[ -t 2 ] && tty=true

clock() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# report writes the progress line: over the last one on a terminal, as a
# line of its own elsewhere (a CI log).
report() {
	if $tty; then
		printf '\r\033[K%s' "$1" >&2
	else
		printf '%s\n' "$1" >&2
	fi
}

# Say at once why a first build is slow: nothing to show yet.
[ -x "$out" ] || printf '%s\n' "building ${out##*/}: a first build fetches and compiles the Go modules" \
	"  (make setup does that ahead of a workshop)" >&2

"$GO" build -v -o "$out" "$pkg" 2>&1 | {
	fetched=0 compiled=0 total="" last="" part="" spoke=false shown=$SECONDS
	while :; do
		# read -t keeps what it got of a line when it times out: hold that
		# part until the rest of the line comes.
		chunk="" line="" eof=false
		if IFS= read -r -t "$every" chunk; then
			line=$part$chunk part=""
		elif [ $? -gt 128 ]; then
			part=$part$chunk
		else
			line=$part$chunk part="" eof=true
		fi
		case $line in
		"") ;;
		"go: downloading "*)
			fetched=$((fetched + 1))
			last=${line#go: downloading } ;;
		*[[:space:]]* | \#*)
			$spoke && $tty && printf '\n' >&2
			printf '%s\n' "$line" >&2 ;;
		*)
			compiled=$((compiled + 1))
			last=$line
			[ ${#last} -le 30 ] || last="…${last: -29}" # the line fits 80 columns
			# The modules are all fetched once compiling starts: count
			# what there is to compile (an upper bound: some may be cached).
			[ -n "$total" ] || total=$("$GO" list -deps "$pkg" 2>/dev/null | wc -l | tr -d ' ') ;;
		esac
		if $eof; then
			break
		fi
		if [ $((SECONDS - start)) -ge $quiet ] && [ $((SECONDS - shown)) -ge $every ]; then
			if [ $compiled -eq 0 ]; then
				report "  fetching modules: $fetched so far ($(clock)), last ${last:-none yet}"
			else
				report "  compiling: $compiled of ${total:-?} packages ($(clock)), last $last"
			fi
			spoke=true shown=$SECONDS
		fi
	done
	if $spoke; then
		$tty && printf '\n' >&2
		echo "  $compiled packages compiled, $fetched modules fetched, in $(clock)" >&2
	fi
}
exit "${PIPESTATUS[0]}"
