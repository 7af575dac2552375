#!/usr/bin/env bash
# rabbitmq.sh: a RabbitMQ 4.3 node (or a three-node 4.3 cluster) beside
# whatever broker the machine already runs, without Docker.
#
#   scripts/rabbitmq.sh up [4.3]          build once, start the node, print its URL
#   scripts/rabbitmq.sh url [4.3]         print the URL of the running node
#   scripts/rabbitmq.sh status [4.3]      say whether it runs, and which version
#   scripts/rabbitmq.sh down [4.3]        stop the node, remove its data
#   scripts/rabbitmq.sh build [4.3]       only build (the slow part, ~3 min)
#   scripts/rabbitmq.sh cluster up|url|status|down [4.3]
#                                         the same for three clustered nodes;
#                                         url prints one URL a line
#
# How: Debian's unstable suite ships rabbitmq-server 4.3 with its own Erlang.
# The first `up` debootstraps that suite into a chroot under
# ${QLAB_CACHE:-$HOME/.cache/qlab}/rabbitmq-4.3 and installs the package
# there (kept on disk: a second `up` finds it). Nodes run inside the chroot
# as its user rabbitmq, on ports of their own, bound to 127.0.0.1, so they
# never clash with a node on 5672/15672/15692/25672; they share the host's
# epmd (4369) by node name. The single node runs one plugin,
# rabbitmq_prometheus (Q22 reads its per-queue figures); the cluster's
# nodes run none.
#
# Ports (environment, defaults):
#   QLAB_RABBITMQ43_PORT=5673          the single node's AMQP port
#                                      (its distribution port is +20000,
#                                      its rabbitmq_prometheus +10020:
#                                      15693, as 15692 is to 5672)
#   QLAB_RABBITMQ43_CLUSTER_PORT=5674  the cluster's first AMQP port
#                                      (then +1, +2; distribution +20000)
# Other knobs:
#   QLAB_RABBITMQ_OWNER=PID            record PID as the owner of a node `up`
#                                      starts: a later `up` restarts a node
#                                      whose owner is gone, and `down` with
#                                      the variable set stops only a node of
#                                      that owner (CI sets it; a shared dev
#                                      node has none and lives until a plain
#                                      `down`)
#   QLAB_DEBIAN_MIRROR                 default http://deb.debian.org/debian
#   QLAB_RABBITMQ_BOOT_TIMEOUT=180     seconds a node may take to boot
#
# Needs root (chroot, mount, debootstrap). Exit codes: 0 done, 1 failed,
# 2 bad usage.
set -euo pipefail

readonly VERSION=4.3
# The CLI's Erlang VM without busy waiting, as the nodes run: spinning, a
# rabbitmqctl took 39-45 s on two cores with ten CPU hogs, 11-13 s without
# (rabbit/cluster's ctlErlArgs).
readonly CTL_ERL_ARGS="+sbwt none +sbwtdcpu none +sbwtdio none"
CACHE=${QLAB_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/qlab}
ROOT=$CACHE/rabbitmq-$VERSION
BUILD=$ROOT.build
LOCK=$CACHE/rabbitmq-$VERSION.lock
MIRROR=${QLAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PORT=${QLAB_RABBITMQ43_PORT:-5673}
CPORT=${QLAB_RABBITMQ43_CLUSTER_PORT:-5674}
BOOT_TIMEOUT=${QLAB_RABBITMQ_BOOT_TIMEOUT:-180}
STATE=/var/lib/qlab # inside the chroot: one directory per node
declare -A LAUNCHED # node name -> pid of the process that starts it

die() {
	echo "rabbitmq.sh: $*" >&2
	exit 1
}
say() { echo "rabbitmq.sh: $*" >&2; }

usage() {
	sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

need_root() {
	[ "$(id -u)" = 0 ] || die "needs root (it runs chroot, mount and debootstrap); try: sudo $0 $*"
}

is_port() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ge 1024 ] && [ "$1" -le 45535 ]; }

# in_root runs a command inside the chroot with a clean environment.
in_root() {
	chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
}

# as_rabbitmq runs a command inside the chroot as its user rabbitmq, whose
# home holds the Erlang cookie every node and CLI call there shares.
as_rabbitmq() {
	chroot "$ROOT" /usr/bin/setpriv --reuid=rabbitmq --regid=rabbitmq \
		--init-groups /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 HOME=/var/lib/rabbitmq "$@"
}

built() { [ -x "$ROOT/usr/sbin/rabbitmq-server" ] && [ -f "$ROOT/.qlab-built" ]; }

# build makes the chroot once. It resumes a finished debootstrap left in
# $BUILD (the directory only becomes $ROOT when the package is installed, so
# an interrupted build never looks finished).
build() {
	built && return 0
	need_root build
	mkdir -p "$CACHE"
	local t0=$SECONDS
	if [ ! -x "$BUILD/usr/bin/apt-get" ] || [ -d "$BUILD/debootstrap" ]; then
		rm -rf "$BUILD"
		if ! command -v debootstrap >/dev/null; then
			say "installing debootstrap on the host"
			apt-get install -y --no-install-recommends debootstrap >&2 ||
				die "debootstrap is missing and apt-get could not install it"
		fi
		say "debootstrap sid into $BUILD (about 3 min with apt)"
		debootstrap --variant=minbase sid "$BUILD" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 ||
			die "debootstrap failed; see $CACHE/debootstrap.log"
	fi
	say "installing rabbitmq-server in the chroot"
	# The mirror's copy of sid can be a frozen snapshot whose Release file
	# has expired: accept it.
	chroot "$BUILD" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive sh -c '
		apt-get -o Acquire::Check-Valid-Until=false update &&
		apt-get install -y --no-install-recommends rabbitmq-server &&
		apt-get clean' >"$CACHE/apt.log" 2>&1 ||
		die "apt-get in the chroot failed; see $CACHE/apt.log"
	local got
	got=$(chroot "$BUILD" dpkg-query -W -f='${Version}' rabbitmq-server)
	case $got in
	$VERSION.*) ;;
	*) die "the suite ships rabbitmq-server $got, not $VERSION.x" ;;
	esac
	# Without localhost in /etc/hosts the node fails with nxdomain.
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n' >"$BUILD/etc/hosts"
	echo "$got" >"$BUILD/.qlab-built"
	mv "$BUILD" "$ROOT"
	say "built rabbitmq-server $got in $((SECONDS - t0)) s"
}

# take_lock serialises this script's calls (a build, a start, a stop).
take_lock() {
	mkdir -p "$CACHE"
	exec 9>"$LOCK"
	flock -w 900 9 || die "another rabbitmq.sh has held $LOCK for 15 min"
}

mount_proc() {
	mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
}

# any_node_running says whether a node of ours still runs in the chroot.
any_node_running() {
	local d
	for d in "$ROOT$STATE"/*/; do
		[ -d "$d" ] || continue
		node_pid "$(basename "$d")" >/dev/null && return 0
	done
	return 1
}

# any_process_inside says whether any process runs inside the chroot: a
# node of ours, or one `qlab broker cluster up --version 4.3` started.
any_process_inside() {
	local want link p
	want=$(readlink -f "$ROOT")
	for p in /proc/[0-9]*; do
		link=$(readlink "$p/root" 2>/dev/null) || continue
		[ "$link" = "$want" ] && return 0
	done
	return 1
}

umount_proc_if_idle() {
	[ -d "$ROOT" ] || return 0
	any_node_running && return 0
	any_process_inside && return 0
	if mountpoint -q "$ROOT/proc"; then
		umount "$ROOT/proc" || umount -l "$ROOT/proc"
	fi
}

# node_pid prints the pid of a running node, from the pid file the node
# wrote, only if that process is still a beam of this chroot.
node_pid() {
	local f=$ROOT$STATE/$1/pid pid
	[ -s "$f" ] || return 1
	pid=$(tr -dc '0-9' <"$f")
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	[ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$(readlink -f "$ROOT")" ] || return 1
	# beam's command line does not name the node; its environment does.
	tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
		grep -qx "RABBITMQ_NODENAME=$1@localhost" || return 1
	echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# owner_gone says whether the node records an owner that no longer runs.
owner_gone() {
	local f=$ROOT$STATE/$1/owner pid
	[ -s "$f" ] || return 1
	pid=$(tr -dc '0-9' <"$f")
	[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null
}

# mine says whether `down` may stop NAME: always without
# QLAB_RABBITMQ_OWNER, else only when it records that owner.
mine() {
	[ -z "${QLAB_RABBITMQ_OWNER:-}" ] && return 0
	[ "$(cat "$ROOT$STATE/$1/owner" 2>/dev/null)" = "$QLAB_RABBITMQ_OWNER" ]
}

# start_node NAME PORT [PROM] starts one node; with PROM, it serves
# rabbitmq_prometheus on that port.
start_node() {
	local name=$1 port=$2 dist=$(($2 + 20000)) prom=${3:-} dir=$STATE/$1
	if port_open "$port"; then
		die "port $port is taken by something else; set QLAB_RABBITMQ43_PORT or QLAB_RABBITMQ43_CLUSTER_PORT"
	fi
	if port_open "$dist"; then
		die "distribution port $dist is taken; choose another AMQP port (dist = AMQP + 20000)"
	fi
	if [ -n "$prom" ] && port_open "$prom"; then
		die "rabbitmq_prometheus's port $prom is taken; choose another AMQP port (prometheus = AMQP + 10020)"
	fi
	rm -rf "${ROOT:?}$dir"
	mkdir -p "$ROOT$dir/mnesia" "$ROOT$dir/log"
	if [ -n "$prom" ]; then
		echo '[rabbitmq_prometheus].' >"$ROOT$dir/enabled_plugins"
		printf 'prometheus.tcp.ip = 127.0.0.1\nprometheus.tcp.port = %s\n' "$prom" >"$ROOT$dir/rabbitmq.conf"
	else
		echo '[].' >"$ROOT$dir/enabled_plugins"
		: >"$ROOT$dir/rabbitmq.conf"
	fi
	if [ -n "${QLAB_RABBITMQ_OWNER:-}" ]; then
		echo "$QLAB_RABBITMQ_OWNER" >"$ROOT$dir/owner"
	fi
	in_root chown -R rabbitmq:rabbitmq "$dir"
	# setsid: the node outlives the shell (and the process group) that
	# started it; it stops only on `down`. 9>&-: it must not hold our lock.
	setsid chroot "$ROOT" /usr/bin/setpriv --reuid=rabbitmq --regid=rabbitmq \
		--init-groups /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 HOME=/var/lib/rabbitmq \
		RABBITMQ_NODENAME="$name@localhost" \
		RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
		RABBITMQ_NODE_PORT="$port" \
		RABBITMQ_DIST_PORT="$dist" \
		RABBITMQ_MNESIA_BASE="$dir/mnesia" \
		RABBITMQ_LOG_BASE="$dir/log" \
		RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
		RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
		RABBITMQ_PID_FILE="$dir/pid" \
		RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
		/usr/sbin/rabbitmq-server </dev/null >"$ROOT$dir/log/console.log" 2>&1 9>&- &
	LAUNCHED[$name]=$!
	disown
}

# await_node waits, bounded, until NAME answers AMQP on PORT.
await_node() {
	local name=$1 port=$2 deadline=$((SECONDS + BOOT_TIMEOUT))
	until port_open "$port"; do
		if [ $SECONDS -ge $deadline ]; then
			tail -n 20 "$ROOT$STATE/$name/log/console.log" >&2 || true
			stop_node "$name"
			die "$name did not accept AMQP on $port within ${BOOT_TIMEOUT}s (log above)"
		fi
		if ! node_pid "$name" >/dev/null && ! kill -0 "${LAUNCHED[$name]:-0}" 2>/dev/null; then
			tail -n 20 "$ROOT$STATE/$name/log/console.log" >&2 || true
			stop_node "$name"
			die "$name exited while booting (log above)"
		fi
		sleep 1
	done
}

# stop_node stops NAME (bounded: rabbitmqctl stop, then TERM, then KILL) and
# removes its data.
stop_node() {
	local name=$1 pid i
	if pid=$(node_pid "$name"); then
		timeout 60 chroot "$ROOT" /usr/bin/setpriv --reuid=rabbitmq --regid=rabbitmq \
			--init-groups /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			LANG=C.UTF-8 HOME=/var/lib/rabbitmq "RABBITMQ_CTL_ERL_ARGS=$CTL_ERL_ARGS" \
			rabbitmqctl -q -n "$name@localhost" stop >/dev/null 2>&1 || true
		for i in $(seq 30); do
			[ -d "/proc/$pid" ] || break
			[ "$i" = 15 ] && kill -TERM "$pid" 2>/dev/null
			sleep 1
		done
		if [ -d "/proc/$pid" ]; then
			kill -KILL "$pid" 2>/dev/null || true
			sleep 1
		fi
	fi
	[ -n "$name" ] && rm -rf "${ROOT:?}$STATE/$name"
}

# Node names: fixed on the default ports, tagged with the port otherwise, so
# a second node or cluster on other ports never shares a name (or data).
single_name() {
	if [ "$PORT" = 5673 ]; then echo qlab43; else echo "qlab43_$PORT"; fi
}

cluster_names() {
	local tag=
	[ "$CPORT" = 5674 ] || tag=_$CPORT
	echo "qlab43c1$tag qlab43c2$tag qlab43c3$tag"
}

single_up() {
	need_root up
	local name
	name=$(single_name)
	is_port "$PORT" || die "QLAB_RABBITMQ43_PORT=$PORT is not a port in 1024..45535"
	take_lock
	build
	if node_pid "$name" >/dev/null; then
		if owner_gone "$name"; then
			say "$name's owner is gone: restarting it"
			stop_node "$name"
		else
			await_node "$name" "$PORT"
			echo "amqp://guest:guest@127.0.0.1:$PORT/"
			return 0
		fi
	fi
	mount_proc
	start_node "$name" "$PORT" $((PORT + 10020))
	await_node "$name" "$PORT"
	say "$name@localhost up: RabbitMQ $(cat "$ROOT/.qlab-built") on 127.0.0.1:$PORT (rabbitmq_prometheus on $((PORT + 10020)))"
	echo "amqp://guest:guest@127.0.0.1:$PORT/"
}

single_down() {
	need_root down
	[ -d "$ROOT" ] || return 0
	take_lock
	local name
	name=$(single_name)
	if ! mine "$name"; then
		say "leaving $name running: QLAB_RABBITMQ_OWNER=$QLAB_RABBITMQ_OWNER did not start it"
		return 0
	fi
	stop_node "$name"
	umount_proc_if_idle
}

single_url() {
	node_pid "$(single_name)" >/dev/null || die "the $VERSION node is not running (start it: $0 up $VERSION)"
	echo "amqp://guest:guest@127.0.0.1:$PORT/"
}

single_status() {
	if node_pid "$(single_name)" >/dev/null; then
		echo "running: RabbitMQ $(cat "$ROOT/.qlab-built") at amqp://guest:guest@127.0.0.1:$PORT/"
	elif built; then
		echo "stopped (built: RabbitMQ $(cat "$ROOT/.qlab-built") in $ROOT)"
		return 3
	else
		echo "not built ($ROOT)"
		return 3
	fi
}

ctl() {
	timeout 120 chroot "$ROOT" /usr/bin/setpriv --reuid=rabbitmq --regid=rabbitmq \
		--init-groups /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 HOME=/var/lib/rabbitmq "RABBITMQ_CTL_ERL_ARGS=$CTL_ERL_ARGS" rabbitmqctl -q "$@"
}

cluster_up() {
	need_root cluster up
	is_port "$CPORT" || die "QLAB_RABBITMQ43_CLUSTER_PORT=$CPORT is not a port in 1024..45533"
	take_lock
	build
	local n i=0 up=0 gone=0
	for n in $(cluster_names); do
		node_pid "$n" >/dev/null && up=$((up + 1))
		owner_gone "$n" && gone=1
	done
	if [ "$up" = 3 ] && [ "$gone" = 0 ]; then
		cluster_urls
		return 0
	fi
	# Half a cluster, or one whose owner is gone: start over.
	for n in $(cluster_names); do stop_node "$n"; done
	mount_proc
	for n in $(cluster_names); do
		start_node "$n" $((CPORT + i))
		i=$((i + 1))
	done
	i=0
	for n in $(cluster_names); do
		await_node "$n" $((CPORT + i))
		i=$((i + 1))
	done
	local first
	first=$(cluster_names | cut -d' ' -f1)
	for n in $(cluster_names | cut -d' ' -f2-); do
		if ! { ctl -n "$n@localhost" stop_app &&
			ctl -n "$n@localhost" join_cluster "$first@localhost" &&
			ctl -n "$n@localhost" start_app; }; then
			for m in $(cluster_names); do stop_node "$m"; done
			umount_proc_if_idle
			die "$n could not join $first@localhost"
		fi
	done
	say "three-node RabbitMQ $(cat "$ROOT/.qlab-built") cluster up on 127.0.0.1:$CPORT-$((CPORT + 2))"
	cluster_urls
}

cluster_urls() {
	local i
	for i in 0 1 2; do echo "amqp://guest:guest@127.0.0.1:$((CPORT + i))/"; done
}

cluster_down() {
	need_root cluster down
	[ -d "$ROOT" ] || return 0
	take_lock
	local n
	for n in $(cluster_names); do
		if ! mine "$n"; then
			say "leaving the cluster running: QLAB_RABBITMQ_OWNER=$QLAB_RABBITMQ_OWNER did not start it"
			return 0
		fi
	done
	for n in $(cluster_names); do stop_node "$n"; done
	umount_proc_if_idle
}

cluster_status() {
	local n up=0
	for n in $(cluster_names); do node_pid "$n" >/dev/null && up=$((up + 1)); done
	if [ "$up" = 3 ]; then
		echo "running: three RabbitMQ $(cat "$ROOT/.qlab-built") nodes on 127.0.0.1:$CPORT-$((CPORT + 2))"
	else
		echo "not running ($up of 3 nodes up)"
		return 3
	fi
}

check_version() {
	[ "${1:-$VERSION}" = "$VERSION" ] || {
		echo "rabbitmq.sh: only RabbitMQ $VERSION is built here, not '$1' (the machine's own node is 3.10.8 on 5672)" >&2
		exit 2
	}
}

main() {
	[ $# -ge 1 ] || usage
	local cmd=$1
	shift
	if [ "$cmd" = cluster ]; then
		[ $# -ge 1 ] || usage
		local sub=$1
		shift
		[ $# -le 1 ] || usage
		check_version "${1:-}"
		case $sub in
		up) cluster_up ;;
		down) cluster_down ;;
		url) cluster_status >/dev/null || die "the $VERSION cluster is not running (start it: $0 cluster up)" && cluster_urls ;;
		status) cluster_status ;;
		*) usage ;;
		esac
		return
	fi
	[ $# -le 1 ] || usage
	check_version "${1:-}"
	case $cmd in
	up) single_up ;;
	down) single_down ;;
	url) single_url ;;
	status) single_status ;;
	build)
		need_root build
		take_lock
			build
		;;
	-h | --help | help) usage ;;
	*) usage ;;
	esac
}

main "$@"
