#!/bin/bash
# sigint-check.sh [SECONDS...]: stop `make test` with SIGINT (as Ctrl-C
# does: to its whole process group) after each number of seconds (default
# 60 180 300), wait 30 s (SIGINT_SETTLE), and list what it left: beam.smp
# processes it started (marked in their environment), queues on the
# shared broker (rabbitmqctl, local default node; the 4.3 node's too with
# SIGINT_CTL43, see queues) and schemas in the test
# database (QLAB_DATABASE_URL, psql) that were not there before and that
# the run recorded as its own (others are printed, not counted). Exits 1
# if any run left something, 2 on bad use. It runs the whole suite up to
# each stop: heavy, so run it on a quiet machine. Where something new is there after
# the 30 s, it looks again SIGINT_RECHECK (30) s later and counts only
# what stayed: another user's run that ends meanwhile is not counted,
# one that outlives both looks is (each item is printed, to judge).
#
#   scripts/sigint-check.sh            # 60, 180 and 300 s
#   scripts/sigint-check.sh 90         # one stop at 90 s
#   SIGINT_MAKE="make test TESTPKGS=./lessons/faults" scripts/sigint-check.sh 60
#   SIGINT_LOG=/tmp/logs scripts/sigint-check.sh 60   # keeps make-60.log
#   SIGINT_CTL43="chroot $HOME/.cache/qlab/rabbitmq-4.3 rabbitmqctl -n qlab43@localhost" \
#     scripts/sigint-check.sh                         # counts the 4.3 node's queues too
set -u
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- 60 180 300
for s in "$@"; do
	case $s in '' | *[!0-9]*) echo "sigint-check.sh: $s is not a number of seconds" >&2; exit 2 ;; esac
done
settle=${SIGINT_SETTLE:-30}
recheck=${SIGINT_RECHECK:-30}
bound=${SIGINT_BOUND:-180} # seconds make may take to exit after the SIGINT
make_cmd=${SIGINT_MAKE:-make test}
db=${QLAB_DATABASE_URL:-}
out=$(mktemp -d /tmp/qlab-sigint.XXXXXX)
run=

cleanup() {
	[ -n "$run" ] && kill -KILL -- "-$run" 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# beams lists the beam.smp processes that make's run started: each
# carries the run's mark in its environment (a node inherits it from
# the test that starts it), so another user's nodes are never counted.
beams() {
	for pid in $(pgrep -x beam.smp); do
		{ tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qx "QLAB_SIGINT_MARK=$out" && echo "$pid"
	done | sort
}
# queues lists the shared broker's queues and, with SIGINT_CTL43 set to
# a rabbitmqctl command that reaches the 4.3 node (its CLI is in the
# chroot: "chroot DIR rabbitmqctl -n qlab43@localhost"), that node's too.
queues() {
	{
		timeout 60 rabbitmqctl list_queues -q --no-table-headers name
		[ -z "${SIGINT_CTL43:-}" ] || timeout 60 $SIGINT_CTL43 list_queues -q --no-table-headers name
	} 2>/dev/null | sort -u
}
schemas() {
	[ -n "$db" ] || return 0
	timeout 30 psql "$db" -Atc "select nspname from pg_namespace" 2>/dev/null | sort
}
snapshot() { beams >"$1.beam"; queues >"$1.queues"; schemas >"$1.schemas"; }

# keep copies, every second while make runs, the records its tests write
# of the prefixes and schemas they create (lab/created, in make test's
# qlab-created-PID directory, which make deletes when it has cleaned):
# a new queue or schema is this run's only if this run recorded it.
keep() {
	mkdir -p "$out/records"
	while kill -0 "$run" 2>/dev/null; do
		for d in "${TMPDIR:-/tmp}"/qlab-created-*; do
			[ "$(ps -o sid= -p "${d##*-}" 2>/dev/null | tr -d ' ')" = "$run" ] || continue
			for f in "$d"/*; do [ -f "$f" ] && cp -f "$f" "$out/records/${f##*/}"; done
		done
		sleep 1
	done
}

# ours prints the items of kind (queues, schemas) in file $2 that this
# run recorded; others prints the rest.
ours() {
	case $1 in
	queues) awk 'NR == FNR { if ($1 == "prefix") p[$2] = 1; next }
		{ split($0, a, "."); if (a[1] in p) print }' "$out/records.all" "$2" ;;
	schemas) awk 'NR == FNR { if ($1 == "schema") s[$2] = 1; next }
		$0 in s' "$out/records.all" "$2" ;;
	*) cat "$2" ;;
	esac
}
others() { ours "$1" "$2" | comm -13 - "$2"; }

reset=
if env --default-signal=INT true 2>/dev/null; then
	reset="env --default-signal=INT,QUIT"
elif [ "$(awk '/^SigIgn/ { print $2 }' /proc/$$/status 2>/dev/null)" != 0000000000000000 ]; then
	echo "sigint-check.sh: this shell ignores some signals and env cannot reset them: start it in the foreground" >&2
	exit 2
fi

failed=0
for at in "$@"; do
	snapshot "$out/before"
	echo "sigint-check: $make_cmd, SIGINT at ${at}s ($(uptime | sed 's/.*load/load/'))"
	# A process group of its own, so the SIGINT reaches make and every
	# child, as a terminal's Ctrl-C does, and never this script. SIGINT
	# reset to its default: this script started in the background
	# (script &) has it ignored, and so would make and every test, which
	# would then run on as if no Ctrl-C came.
	QLAB_SIGINT_MARK=$out setsid $reset bash -c "exec $make_cmd" >"$out/make.log" 2>&1 &
	run=$!
	rm -rf "$out/records"
	keep &
	keeper=$!
	start=$SECONDS
	while [ $((SECONDS - start)) -lt "$at" ] && kill -0 "$run" 2>/dev/null; do sleep 1; done
	if ! kill -0 "$run" 2>/dev/null; then
		echo "  make ended by itself after $((SECONDS - start)) s, before the SIGINT"
	else
		kill -INT -- "-$run"
		stopped=$SECONDS
		while [ $((SECONDS - stopped)) -lt "$bound" ] && kill -0 "$run" 2>/dev/null; do sleep 1; done
		if kill -0 "$run" 2>/dev/null; then
			echo "  make did not exit ${bound}s after the SIGINT: killed"
			kill -KILL -- "-$run" 2>/dev/null
			failed=1
		else
			echo "  make exited $((SECONDS - stopped)) s after the SIGINT"
		fi
	fi
	wait "$run" 2>/dev/null
	wait "$keeper" 2>/dev/null
	cat "$out"/records/* 2>/dev/null | sort -u >"$out/records.all"
	echo "  its tests recorded $(grep -c '^prefix ' "$out/records.all") prefixes" \
		"and $(grep -c '^schema ' "$out/records.all") schemas"
	run=
	[ -z "${SIGINT_LOG:-}" ] || { mkdir -p "$SIGINT_LOG" && cp "$out/make.log" "$SIGINT_LOG/make-$at.log"; }
	sleep "$settle"
	snapshot "$out/after"
	# Another user's run may own a new queue or node for a while: what
	# is still there another SIGINT_RECHECK seconds later is counted.
	if ! cmp -s "$out/before.queues" "$out/after.queues" || ! cmp -s "$out/before.beam" "$out/after.beam"; then
		sleep "$recheck"
		snapshot "$out/again"
		for kind in beam queues schemas; do
			comm -12 "$out/after.$kind" "$out/again.$kind" >"$out/both.$kind"
			mv "$out/both.$kind" "$out/after.$kind"
		done
	fi
	left=0
	for kind in beam queues schemas; do
		comm -13 "$out/before.$kind" "$out/after.$kind" >"$out/new.$kind"
		other=$(others "$kind" "$out/new.$kind")
		[ -z "$other" ] || echo "  new, not recorded by this run (another user's):" $other
		new=$(ours "$kind" "$out/new.$kind")
		[ -n "$new" ] || continue
		left=1
		echo "  left, ${settle}s later: $kind:"
		for item in $new; do
			case $kind in
			beam) echo "    $item $({ tr '\0' '\n' <"/proc/$item/environ"; } 2>/dev/null | grep '^RABBITMQ_NODENAME=')" ;;
			*) echo "    $item" ;;
			esac
		done
	done
	if [ $left = 0 ]; then
		echo "  nothing left ${settle}s later (beam.smp, queues, schemas)"
	else
		failed=1
		echo "  the last lines of make's output:"
		tail -n 5 "$out/make.log" | sed 's/^/    /'
	fi
done
exit $failed
