package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// A test's node must not outlive the test process, however that ends: a
// pass removes it in a cleanup, but a panic, go test's -timeout, Ctrl-C
// or SIGKILL end the process before any cleanup runs, and a node left
// running holds 130 MB for good. Two guards, both keyed on the owner's
// pid, which every node name carries (<prefix>-<pid>-<rand>):
//
//   - WatchOwner starts a watcher outside the test's process group that
//     removes the node within seconds of its owner's end;
//   - ReapOrphans, at the next start, removes nodes whose owner is gone
//     (for the case where the watcher itself was killed).

// watcherEnv marks a watcher and its children (sleep, rabbitmqctl), whose
// environment names the node: processesNaming must not take them for the
// node's own processes.
const watcherEnv = "QLAB_NODE_WATCHER=1"

// TestPrefixes are the name prefixes of the nodes test processes start
// (rabbittest's private nodes, clustertest's cluster, the fault suite's
// nodes, the reap test's own): ReapOrphans of these never touches a
// student's cluster.
var TestPrefixes = []string{"qlabtest", "qlabfault", "qlabreap"}

// ownedName matches a node name whose second field is its owner's pid.
var ownedName = regexp.MustCompile(`^([a-z]+)-(\d+)-[0-9a-f]{4}(-n\d+)?@`)

// watcher waits for the owner to exit (or the node's directory to go: its
// owner removed it, and the watcher has nothing left to do), then asks the
// node to stop, and
// kills it if it has not within 20 s, checking that the pid is still that
// node's beam (a pid can be reused), then deletes its directory. Finding
// the node's directory gone with its owner, it removes the cluster's
// directory once empty (a Down that failed half way left it).
const watcher = `
while kill -0 "$OWNER" 2>/dev/null && [ -d "$DIR" ]; do sleep 1; done
if [ ! -d "$DIR" ]; then
  [ -z "$PARENT" ] || kill -0 "$OWNER" 2>/dev/null || rmdir "$PARENT" 2>/dev/null
  exit 0
fi
timeout 20 rabbitmqctl -q -n "$NODE" stop >/dev/null 2>&1
for _ in 1 2 3 4 5; do
  grep -qa "RABBITMQ_NODENAME=$NODE" "/proc/$BEAM/environ" 2>/dev/null || break
  sleep 1
done
grep -qa "RABBITMQ_NODENAME=$NODE" "/proc/$BEAM/environ" 2>/dev/null && kill -9 "$BEAM"
rm -rf "$DIR"
[ -z "$PARENT" ] || rmdir "$PARENT" 2>/dev/null
`

// WatchOwner starts a detached watcher that removes local node n once
// this process has exited, and then parent when it is left empty ("" for
// none: a cluster's nodes share a parent directory). It returns an error
// when no watcher could start; the node then relies on its owner's
// cleanup and ReapOrphans.
func WatchOwner(n NodeSpec, parent string) error {
	return WatchProcess(n, parent, os.Getpid())
}

// WatchProcess is WatchOwner for another owner than this process: the
// node goes once process owner has exited.
func WatchProcess(n NodeSpec, parent string, owner int) error {
	beam := n.Pid()
	if beam == 0 {
		return fmt.Errorf("node %s has no process to watch", n.Name)
	}
	// sh starts the watcher in the background and exits at once: the
	// watcher is nobody's child here, so no goroutine waits for it (the
	// packages' goroutine-leak checks) and it leaves no zombie.
	cmd := exec.Command("sh", "-c", `sh -c "$QLAB_WATCHER" </dev/null >/dev/null 2>&1 &`)
	cmd.Env = append(os.Environ(), watcherEnv, "QLAB_WATCHER="+watcher,
		"OWNER="+strconv.Itoa(owner), "NODE="+n.Name, "BEAM="+strconv.Itoa(beam), "DIR="+n.Dir, "PARENT="+parent)
	// Its own session: Ctrl-C in the terminal signals the test's process
	// group, and the watcher must live on to do its work.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("watching node %s: %w", n.Name, err)
	}
	return nil
}

// ReapOrphans removes every local node whose name starts with one of
// prefixes and whose owner process (the pid in its name) is gone, and
// returns their names. Nodes of a live owner, and every node of another
// prefix (`qlab broker cluster up`'s "qlab", meant to outlive its command),
// are left alone.
func ReapOrphans(prefixes ...string) []string {
	var reaped []string
	for _, pid := range processes() {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if !bytes.HasPrefix(comm, []byte("beam")) {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		spec, owner, ok := ownedNode(env, prefixes)
		if !ok || alive(owner) {
			continue
		}
		if RemoveLocal(spec) == nil {
			reaped = append(reaped, spec.Name)
		}
		if parent := filepath.Dir(spec.Dir); parent != filepath.Clean(os.TempDir()) {
			_ = os.Remove(parent) // a cluster's directory, once its last node is gone
		}
	}
	return reaped
}

// ownedNode reads a node's name, directory and owner from its process
// environment, when its name has one of prefixes.
func ownedNode(environ []byte, prefixes []string) (NodeSpec, int, bool) {
	vars := map[string]string{}
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok {
			vars[string(k)] = string(v)
		}
	}
	name := vars["RABBITMQ_NODENAME"]
	m := ownedName.FindStringSubmatch(name)
	if m == nil || !slices.Contains(prefixes, m[1]) {
		return NodeSpec{}, 0, false
	}
	// Only a directory the lab made: under the temp dir, named for the
	// prefix. A stranger's node of the same name keeps its data.
	dir := filepath.Dir(vars["RABBITMQ_MNESIA_BASE"])
	rel, err := filepath.Rel(os.TempDir(), dir)
	if err != nil || !strings.HasPrefix(rel, m[1]+"-") {
		return NodeSpec{}, 0, false
	}
	owner, _ := strconv.Atoi(m[2])
	return NodeSpec{Name: name, Dir: dir}, owner, true
}
