package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanInAChroot: a cluster in a chroot keeps its node directories
// under the chroot's /tmp and tells each node (and Load's check) so; the
// node sees its paths from inside.
func TestPlanInAChroot(t *testing.T) {
	root := t.TempDir()
	c := &Cluster{state: state{Kind: Local, ID: "qlabtest-1-abcd", Root: root, Nodes: make([]NodeSpec, 3)}}
	require.NoError(t, c.plan(false))
	assert.Equal(t, filepath.Join(root, "tmp", "qlabtest-1-abcd"), c.Dir)
	for _, n := range c.Nodes {
		assert.Equal(t, root, n.Root)
		assert.Contains(t, n.env(), "RABBITMQ_CONFIG_FILE=/tmp/qlabtest-1-abcd/"+n.Short+"/rabbitmq.conf",
			"the node's paths as it sees them inside the chroot")
	}
	require.NoError(t, c.check())
	c.Nodes[1].Root = ""
	assert.ErrorContains(t, c.check(), "runs in chroot", "a state file whose nodes disagree on the chroot is refused")
}

func TestInRoot(t *testing.T) {
	assert.Equal(t, "/tmp/x/n1", inRoot("/c/rabbitmq-4.3", "/c/rabbitmq-4.3/tmp/x/n1"))
	assert.Equal(t, "/tmp/x", inRoot("", "/tmp/x"), "no chroot: the path as it is")
}

func TestRootUserReadsTheChrootsPasswd(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	passwd := "root:x:0:0::/root:/bin/sh\nrabbitmq:x:101:102:RabbitMQ:/var/lib/rabbitmq:/usr/sbin/nologin\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte(passwd), 0o644))
	uid, gid, err := rootUser(root)
	require.NoError(t, err)
	assert.Equal(t, [2]int{101, 102}, [2]int{uid, gid})
	_, _, err = rootUser(t.TempDir())
	assert.Error(t, err, "no passwd, no user")
}

// TestRootServerCommandSaysHowToBuildOne: a chroot without RabbitMQ, or a
// relative path, is refused with ErrNoServer and the command that builds
// one; BuiltRoot says the same of a cache without the build.
func TestRootServerCommandSaysHowToBuildOne(t *testing.T) {
	_, err := RootServerCommand(t.TempDir())
	assert.ErrorIs(t, err, ErrNoServer)
	assert.ErrorContains(t, err, "scripts/rabbitmq.sh build 4.3")
	_, err = RootServerCommand("relative/root")
	assert.ErrorIs(t, err, ErrNoServer)

	t.Setenv(EnvCache, t.TempDir())
	_, err = BuiltRoot("4.3")
	assert.ErrorIs(t, err, ErrNoServer)
	assert.ErrorContains(t, err, "scripts/rabbitmq.sh build 4.3")

	_, err = Up(context.Background(), Options{Root: filepath.Join(t.TempDir(), "none")})
	assert.ErrorIs(t, err, ErrUnavailable, "Up in a chroot that is not there: unavailable, never Docker")
	assert.True(t, strings.Contains(err.Error(), "build 4.3"), err.Error())
}
