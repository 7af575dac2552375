#!/bin/bash
# scale.sh N: a room of N students on one broker. It starts a private
# RabbitMQ node beside the shared one (its own node name, ports and data
# directory; never the shared 5672 node), runs N broker lessons at once
# (the mix Q10, Q12-Q16, Q18, Q19, Q22-Q24, each --backend rabbit
# --speed 10, round robin), samples the node's connections, channels and
# file descriptors while they run, and then lists what the runs left on
# it. Not a test: it prints figures for docs/instructors.md. The node and
# its directory are removed however the script ends.
#
#   scripts/scale.sh 50            # N concurrent runs
#   SCALE_PORT=5690 SCALE_MIX="10 14" scripts/scale.sh 20
set -u
n=${1:?usage: scripts/scale.sh N}
case $n in '' | *[!0-9]*) echo "scale.sh: N must be a number of runs, not $n" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
port=${SCALE_PORT:-5690}
mix=${SCALE_MIX:-"10 12 13 14 15 16 18 19 22 23 24"}
speed=${SCALE_SPEED:-10}
bound=${SCALE_BOUND:-1800} # seconds one run may take before it is killed
node=qlab-scale-$$@localhost
dir=$(mktemp -d /tmp/qlab-scale-node.XXXXXX)
out=${SCALE_OUT:-$(mktemp -d /tmp/qlab-scale-out.XXXXXX)}
mkdir -p "$out"

stop_node() {
	rabbitmqctl -q -n "$node" stop >/dev/null 2>&1 ||
		{ [ -f "$dir/node.pid" ] && kill -9 "$(cat "$dir/node.pid")" 2>/dev/null; }
	rm -rf "$dir"
}
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	[ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null
	stop_node
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
	echo "scale.sh: port $port is taken; pick another with SCALE_PORT" >&2
	exit 1
fi
go build -o "$out/qlab" ./cmd/qlab || exit 1

mkdir -p "$dir/mnesia" "$dir/log"
printf 'listeners.tcp.default = 127.0.0.1:%d\n' "$port" >"$dir/rabbitmq.conf"
echo '[].' >"$dir/enabled_plugins"
chown -R rabbitmq:rabbitmq "$dir" 2>/dev/null
(
	# rabbitmq-server's wrapper switches to the rabbitmq user through su,
	# whose PAM limits put the node back at 1024 fds: switch here and
	# raise the limit as that user instead.
	export RABBITMQ_NODENAME=$node RABBITMQ_NODE_PORT=$port RABBITMQ_DIST_PORT=$((port + 20000)) \
		RABBITMQ_MNESIA_BASE=$dir/mnesia RABBITMQ_LOG_BASE=$dir/log \
		RABBITMQ_PID_FILE=$dir/node.pid RABBITMQ_ENABLED_PLUGINS_FILE=$dir/enabled_plugins \
		RABBITMQ_CONFIG_FILE=$dir/rabbitmq.conf HOME=/var/lib/rabbitmq
	fds=${SCALE_FDS:-$(ulimit -Hn)}
	if [ "$(id -u)" -eq 0 ]; then
		setpriv --reuid rabbitmq --regid rabbitmq --init-groups \
			sh -c "ulimit -n $fds && exec /usr/lib/rabbitmq/bin/rabbitmq-server -detached"
	else
		ulimit -n "$fds" && rabbitmq-server -detached
	fi
) || exit 1
[ -f "$dir/node.pid" ] || sleep 5
for _ in $(seq 120); do
	(exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break
	sleep 1
done
rabbitmqctl -q -n "$node" await_startup >/dev/null || { echo "scale.sh: node $node did not start" >&2; exit 1; }
beam=$(cat "$dir/node.pid")
version=$(rabbitmqctl -q -n "$node" version)
echo "node $node on 127.0.0.1:$port, RabbitMQ $version, fd limit $(awk '/open files/ {print $4}' /proc/"$beam"/limits)"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $n runs of: $mix at --speed $speed"

# sample: every 2 s, the node's AMQP connections (ss) and open fds
# (/proc), both cheap; every 8th time, its channels and each run's
# connections by name, from rabbitmqctl, which costs a CPU-second.
(
	i=0
	while :; do
		c=$(ss -tnH state established "( sport = :$port )" | wc -l)
		fd=$(ls /proc/"$beam"/fd 2>/dev/null | wc -l)
		ch=-1
		if [ $((i % 8)) -eq 0 ]; then
			ch=$(rabbitmqctl -q -n "$node" list_channels pid 2>/dev/null | wc -l)
			rabbitmqctl -q -n "$node" list_connections client_properties 2>/dev/null |
				grep -o '"connection_name","qlab [^"]*"' | cut -d' ' -f2 | tr -d '"' |
				sort | uniq -c | sed "s/^/$(date +%s) /" >>"$out/per-run"
		fi
		echo "$(date +%s) $c $ch $fd"
		i=$((i + 1))
		sleep 2
	done
) >"$out/samples" &
sampler=$!

export RABBITMQ_URL=amqp://guest:guest@127.0.0.1:$port/
read -r -a lessons <<<"$mix"
start=$(date +%s)
for i in $(seq 0 $((n - 1))); do
	l=${lessons[$((i % ${#lessons[@]}))]}
	timeout -s KILL "$bound" "$out/qlab" run "$l" --backend rabbit --speed "$speed" --json \
		>"$out/run-$i-q$l.json" 2>"$out/run-$i-q$l.err" &
	pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
	wait "${pids[$i]}"
	rc=$?
	echo "$rc" >"$out/run-$i.rc"
	[ "$rc" -eq 0 ] && continue
	failed=$((failed + 1))
	echo "run $i failed, exit $rc: $(tail -1 "$out"/run-"$i"-*.err)"
done
pids=()
wall=$(($(date +%s) - start))
kill "$sampler" 2>/dev/null
sampler=

# lost: summaries whose fate is lost, in runs that failed (a lesson may
# lose a task on purpose, Q16 and Q18 do: qlab run exits 1 for any other)
lost=0 purpose=0
for f in "$out"/run-*.json; do
	k=$(grep '"kind":"summary"' "$f" | grep -c '"fate":"lost"')
	i=${f##*/run-}
	if [ "$(cat "$out/run-${i%%-*}.rc")" != 0 ]; then lost=$((lost + k)); else purpose=$((purpose + k)); fi
done
left_q=$(rabbitmqctl -q -n "$node" list_queues name messages 2>/dev/null | grep -c '^qlab')
left_msgs=$(rabbitmqctl -q -n "$node" list_queues name messages 2>/dev/null | awk '/^qlab/ {s += $2} END {print s + 0}')
left_x=$(rabbitmqctl -q -n "$node" list_exchanges name 2>/dev/null | grep -c '^qlab')
read -r peak_c peak_ch peak_fd < <(awk '$2 > c {c = $2} $3 > h {h = $3} $4 > f {f = $4} END {print c + 0, h + 0, f + 0}' "$out/samples")
echo "runs $n: failed $failed, tasks lost $lost (and $purpose lost on purpose by runs that passed), wall ${wall}s"
echo "peak: $peak_c connections and $peak_fd fds on the node (sampled every 2 s), $peak_ch channels (every 16 s)"
echo "left on the node: $left_q queues ($left_msgs messages), $left_x exchanges"
# connections each run opened over its life (the node logs each with
# the run's connection name), and open at once at its busiest, by lesson
cat "$dir"/log/*.log 2>/dev/null | grep -o 'has a client-provided name: qlab qlab-[0-9a-f]*' |
	awk '{print $NF}' | sort | uniq -c >"$out/opened"
for f in "$out"/run-*.err; do
	l=${f##*-q}
	echo "$(grep -om1 'prefix qlab-[0-9a-f]*' "$f" | cut -d' ' -f2) Q${l%.err}"
done >"$out/lessons"
[ -f "$out/per-run" ] && awk 'NR == FNR {lesson[$1] = $2; next}
	{if ($2 > most[$3]) most[$3] = $2}
	END {for (r in most) if (r in lesson) {l = lesson[r]; if (most[r] > top[l]) top[l] = most[r]}
		for (l in top) printf "  %s: up to %d connections per run\n", l, top[l]}' \
	"$out/lessons" "$out/per-run" | sort
awk 'NR == FNR {lesson[$1] = $2; next} ($2 in lesson) {l = lesson[$2]; n[l]++
		if (!(l in lo) || $1 < lo[l]) lo[l] = $1; if ($1 > hi[l]) hi[l] = $1}
	END {for (l in n) printf "  %s: %d-%d connections opened per run (%d runs)\n", l, lo[l], hi[l], n[l]}' \
	"$out/lessons" "$out/opened" | sort
echo "logs and samples in $out"
[ "$failed" -eq 0 ] && [ "$left_q" -eq 0 ] && [ "$left_x" -eq 0 ]
