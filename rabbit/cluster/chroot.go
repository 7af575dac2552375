package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A cluster can run its local nodes inside a chroot that holds another
// RabbitMQ than the machine's: scripts/rabbitmq.sh build 4.3 makes one
// (Debian's unstable suite, RabbitMQ 4.3 and its own Erlang) under
// $QLAB_CACHE/rabbitmq-4.3. The nodes then run as the chroot's rabbitmq
// user, their directories live under the chroot's /tmp, and every
// rabbitmqctl runs inside it too, with the chroot's Erlang cookie. They
// share the machine's epmd, by node name, like any local node.

// rootServer is where the Debian package puts rabbitmq-server inside a
// chroot.
const rootServer = "/usr/sbin/rabbitmq-server"

// RootServerCommand checks that root is a chroot a cluster's nodes can
// run in (rabbitmq-server installed, and this process root, as chroot
// needs) and returns rabbitmq-server's path inside it. The error wraps
// ErrNoServer.
func RootServerCommand(root string) (string, error) {
	if !filepath.IsAbs(root) {
		return "", fmt.Errorf("%w: the chroot %q is not an absolute path", ErrNoServer, root)
	}
	if _, err := os.Stat(filepath.Join(root, rootServer)); err != nil {
		return "", fmt.Errorf("%w: no %s in %s (build it: scripts/rabbitmq.sh build 4.3)", ErrNoServer, rootServer, root)
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%w: nodes in a chroot need root (chroot, mount)", ErrNoServer)
	}
	return rootServer, nil
}

// rootCommand runs argv inside root as its rabbitmq user, with env and
// nothing else of this process's environment.
func rootCommand(ctx context.Context, root string, env []string, argv ...string) *exec.Cmd {
	args := []string{root, "/usr/bin/setpriv", "--reuid=rabbitmq", "--regid=rabbitmq", "--init-groups",
		"/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/var/lib/rabbitmq"}
	args = append(append(args, env...), argv...)
	return exec.CommandContext(ctx, "chroot", args...)
}

// inRoot is a path under root as the processes inside root see it.
func inRoot(root, path string) string {
	if root == "" {
		return path
	}
	return "/" + strings.TrimPrefix(strings.TrimPrefix(path, root), "/")
}

// rootUser is the uid and gid of the rabbitmq user of the chroot's
// /etc/passwd (not the machine's: the two need not agree).
func rootUser(root string) (uid, gid int, err error) {
	f, err := os.Open(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 4 && fields[0] == "rabbitmq" {
			uid, err1 := strconv.Atoi(fields[2])
			gid, err2 := strconv.Atoi(fields[3])
			if err1 == nil && err2 == nil {
				return uid, gid, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("%w: no rabbitmq user in %s/etc/passwd", ErrNoServer, root)
}

// mountProc mounts proc in root unless it is mounted: Erlang needs it.
func mountProc(root string) error {
	proc := filepath.Join(root, "proc")
	if _, err := os.Stat(filepath.Join(proc, "self")); err == nil {
		return nil
	}
	if out, err := exec.Command("mount", "-t", "proc", "proc", proc).CombinedOutput(); err != nil {
		return fmt.Errorf("mounting proc in %s: %v: %s", root, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// releaseProc unmounts proc from root once no process runs inside root
// (another cluster's nodes, or scripts/rabbitmq.sh's node, may still).
func releaseProc(root string) error {
	proc := filepath.Join(root, "proc")
	if _, err := os.Stat(filepath.Join(proc, "self")); err != nil {
		return nil // not mounted
	}
	if len(processesIn(root)) > 0 {
		return nil
	}
	if err := syscall.Unmount(proc, 0); err != nil {
		return fmt.Errorf("unmounting %s: %v", proc, err)
	}
	return nil
}

// processesIn lists the processes whose root directory is root.
func processesIn(root string) []int {
	want, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil
	}
	var pids []int
	for _, pid := range processes() {
		if r, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid)); err == nil && r == want && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// EnvCache names the directory scripts/rabbitmq.sh builds its chroots in;
// unset, it is the user's cache directory's qlab/.
const EnvCache = "QLAB_CACHE"

// BuiltRoot is the chroot scripts/rabbitmq.sh built for RabbitMQ line
// version ("4.3"): $QLAB_CACHE/rabbitmq-4.3. The error says how to build
// it when it is not there.
func BuiltRoot(version string) (string, error) {
	dir := os.Getenv(EnvCache)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "qlab")
	}
	root := filepath.Join(dir, "rabbitmq-"+version)
	if _, err := os.Stat(filepath.Join(root, ".qlab-built")); err != nil {
		return "", fmt.Errorf("%w: RabbitMQ %s is not built in %s (build it: scripts/rabbitmq.sh build %s, about 3 min)",
			ErrNoServer, version, root, version)
	}
	return root, nil
}
