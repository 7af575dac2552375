package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// planned is a cluster planned (names, ports, directories) but not started.
func planned(t *testing.T, kind string) *Cluster {
	t.Helper()
	c := &Cluster{state: state{Kind: kind, ID: "qlabtest-1-abcd", Nodes: make([]NodeSpec, 3)}}
	require.NoError(t, c.plan(false))
	return c
}

func TestPlanGivesEachNodeItsOwnNamePortsAndDirectory(t *testing.T) {
	c := planned(t, Local)
	var ports []int
	for i, n := range c.Nodes {
		assert.Equal(t, []string{"n1", "n2", "n3"}[i], n.Short)
		assert.Equal(t, "qlabtest-1-abcd-"+n.Short+"@localhost", n.Name)
		assert.Equal(t, filepath.Join(os.TempDir(), "qlabtest-1-abcd", n.Short), n.Dir)
		ports = append(ports, n.Port, n.DistPort, n.MgmtPort, n.PromPort)
	}
	slices.Sort(ports)
	assert.Len(t, slices.Compact(ports), 12, "12 distinct ports")
	for _, p := range ports {
		assert.True(t, p >= 20000 && p < 32000 && !slices.Contains(reservedPorts, p), "port %d", p)
	}
	assert.NoError(t, c.check(), "a planned cluster passes Load's check")
}

func TestConfigListensOnTheNodesOwnLoopbackPorts(t *testing.T) {
	n := NodeSpec{Port: 21001, MgmtPort: 21002, PromPort: 21003}
	assert.Equal(t, "listeners.tcp.default = 127.0.0.1:21001\n"+
		"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = 21002\n"+
		"prometheus.tcp.ip = 127.0.0.1\nprometheus.tcp.port = 21003\n", n.Config())
	assert.Equal(t, "[rabbitmq_management,rabbitmq_prometheus].\n", n.plugins())
	assert.Equal(t, "amqp://guest:guest@127.0.0.1:21001/", n.URL())
	assert.Equal(t, "http://127.0.0.1:21003/metrics", n.MetricsURL())

	lean := NodeSpec{Port: 21001, PromPort: 21003} // Options.Lean
	assert.Equal(t, "listeners.tcp.default = 127.0.0.1:21001\n"+
		"prometheus.tcp.ip = 127.0.0.1\nprometheus.tcp.port = 21003\n", lean.Config())
	assert.Equal(t, "[rabbitmq_prometheus].\n", lean.plugins())
	assert.Empty(t, lean.ManagementURL())
}

func TestEnvNamesEveryPathAndPortOfTheNode(t *testing.T) {
	n := planned(t, Local).Nodes[1]
	env := strings.Join(n.env(), "\n")
	for _, want := range []string{"RABBITMQ_NODENAME=" + n.Name, "RABBITMQ_MNESIA_BASE=" + n.Dir,
		"RABBITMQ_LOG_BASE=" + n.Dir, "RABBITMQ_CONFIG_FILE=" + n.Dir, "RABBITMQ_ENABLED_PLUGINS_FILE=" + n.Dir} {
		assert.Contains(t, env, want)
	}
	assert.Contains(t, env, "RABBITMQ_DIST_PORT=")
	assert.NotContains(t, env, "5672\n")
}

func TestNodeFindsShortAndFullNamesOnly(t *testing.T) {
	c := planned(t, Local)
	for _, name := range []string{"n2", "qlabtest-1-abcd-n2@localhost"} {
		n, err := c.Node(name)
		require.NoError(t, err)
		assert.Equal(t, "n2", n.Short)
	}
	for _, name := range []string{"n4", "rabbit@localhost", "", "N1"} {
		_, err := c.Node(name)
		assert.ErrorIs(t, err, ErrUnknownNode, name)
	}
}

func TestParseQueuesReadsQuorumLeadersAndClassicQueues(t *testing.T) {
	out := `[{"name":"b.q","type":"quorum","leader":"x-n2@localhost","members":["x-n3@localhost","x-n1@localhost","x-n2@localhost"],"online":["x-n3@localhost","x-n2@localhost"],"messages":4,"messages_ready":1,"messages_unacknowledged":1},
{"name":"a.classic","type":"classic","leader":"","members":"","online":""}]`
	qs, err := parseQueues(out)
	require.NoError(t, err)
	assert.Equal(t, []Queue{
		{Name: "a.classic", Type: "classic"},
		{Name: "b.q", Type: "quorum", Leader: "x-n2@localhost",
			Members:  []string{"x-n1@localhost", "x-n2@localhost", "x-n3@localhost"},
			Online:   []string{"x-n2@localhost", "x-n3@localhost"},
			Messages: 4, Ready: 1, Unacked: 1}, // two dead letters kept (at-least-once)
	}, qs)
	qs, err = parseQueues("\n")
	assert.NoError(t, err)
	assert.Empty(t, qs, "no queues: rabbitmqctl -q prints nothing")
	_, err = parseQueues("Error: not json")
	assert.Error(t, err)
}

func TestStateFileRoundTripsAndRefusesForeignDirectories(t *testing.T) {
	c := planned(t, Local)
	c.file = filepath.Join(t.TempDir(), "qlab", "cluster.json")
	require.NoError(t, c.save())
	loaded, err := Load(c.file, nil)
	require.NoError(t, err)
	assert.Equal(t, c.state, loaded.state)
	assert.Equal(t, c.file, loaded.StateFile())

	_, err = Load(filepath.Join(t.TempDir(), "none.json"), nil)
	assert.ErrorIs(t, err, ErrNoCluster)

	for name, edit := range map[string]func(*state){
		"node dir elsewhere":    func(s *state) { s.Nodes[1].Dir = "/" },
		"cluster dir elsewhere": func(s *state) { s.Dir = "/var/lib" },
		"no nodes":              func(s *state) { s.Nodes = nil },
		"unknown kind":          func(s *state) { s.Kind = "vm" },
	} {
		s := c.state
		s.Nodes = slices.Clone(s.Nodes)
		edit(&s)
		b, _ := json.Marshal(s)
		require.NoError(t, os.WriteFile(c.file, b, 0o644))
		_, err := Load(c.file, nil)
		assert.Error(t, err, name)
	}
}

func TestDownOfAClusterThatIsGoneRemovesTheStateFile(t *testing.T) {
	c := planned(t, Local)
	c.drv = &localDriver{}
	c.file = filepath.Join(t.TempDir(), "cluster.json")
	require.NoError(t, c.save())
	require.NoError(t, c.Down(context.Background()))
	assert.NoFileExists(t, c.file)
	assert.Empty(t, c.Leftovers(context.Background()))
	assert.NoError(t, c.Down(context.Background()), "a second Down")
}

func TestDockerNodesRunOnTheirNetworkWithTheirPortsOnLoopback(t *testing.T) {
	c := planned(t, Docker)
	n := c.Nodes[2]
	assert.Equal(t, "rabbit@n3", n.Name)
	assert.Equal(t, "qlabtest-1-abcd-n3", n.Container)
	assert.Equal(t, "qlabtest-1-abcd", c.Network)
	net := &dockertest.Network{}
	opts := runOptions(n, net, "COOKIE")
	assert.Equal(t, "n3", opts.Hostname)
	assert.Equal(t, "rabbitmq", opts.Repository)
	assert.Equal(t, "4-management", opts.Tag, "the line qlab broker up starts")
	assert.Equal(t, []*dockertest.Network{net}, opts.Networks)
	assert.Equal(t, []string{"RABBITMQ_NODENAME=rabbit@n3"}, opts.Env, "no RABBITMQ_ERLANG_COOKIE: the 3.9+ entrypoint refuses it")
	script := opts.Cmd[len(opts.Cmd)-1]
	assert.Contains(t, script, "printf %s COOKIE > /var/lib/rabbitmq/.erlang.cookie && ")
	assert.Contains(t, script, "rabbitmq-plugins enable --offline rabbitmq_management rabbitmq_prometheus && ")
	assert.True(t, strings.HasSuffix(script, "exec docker-entrypoint.sh rabbitmq-server"), script)
	for port, host := range map[dc.Port]int{"5672/tcp": n.Port, "15672/tcp": n.MgmtPort, "15692/tcp": n.PromPort} {
		assert.Equal(t, []dc.PortBinding{{HostIP: "127.0.0.1", HostPort: strconv.Itoa(host)}}, opts.PortBindings[port])
	}
	assert.NotEqual(t, newCookie(), newCookie())
}

// TestWithoutDockerTheDriverSaysSoFast runs where no Docker engine
// answers (the project's machines): the driver fails with ErrNoDocker
// within its bound instead of hanging.
func TestWithoutDockerTheDriverSaysSoFast(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	begin := time.Now()
	_, err := newDockerDriver(context.Background(), "COOKIE")
	assert.ErrorIs(t, err, ErrNoDocker)
	assert.Less(t, time.Since(begin), dockerPing+time.Second)
	d := &dockerDriver{}
	_, err = d.ctl(context.Background(), NodeSpec{Container: "x"}, "status")
	assert.True(t, errors.Is(err, ErrNoDocker))
	assert.False(t, d.alive(context.Background(), NodeSpec{Container: "x"}))
}

func TestAwaitAMQPIsBoundedByItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	p, err := FreePorts(1)
	require.NoError(t, err)
	assert.ErrorIs(t, AwaitAMQP(ctx, p[0]), context.DeadlineExceeded)
}

// TestUpWithoutServerOrDockerSaysSoInOneLine: no rabbitmq-server and no
// Docker engine, for real (an empty PATH, a socket nobody listens on).
func TestUpWithoutServerOrDockerSaysSoInOneLine(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	saved := sbinServer
	sbinServer = filepath.Join(t.TempDir(), "rabbitmq-server")
	t.Cleanup(func() { sbinServer = saved })
	stateFile := filepath.Join(t.TempDir(), "cluster.json")
	begin := time.Now()
	_, err := Up(context.Background(), Options{StateFile: stateFile})
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Less(t, time.Since(begin), dockerPing+time.Second)
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "rabbitmq-server is not installed")
	assert.Contains(t, err.Error(), "no Docker engine answers")
	assert.NoFileExists(t, stateFile, "nothing started, nothing recorded")
	_, err = Up(context.Background(), Options{NoDocker: true})
	assert.ErrorIs(t, err, ErrUnavailable)
}

func TestFirstLineDropsTheDiagnostics(t *testing.T) {
	assert.Equal(t, "Error: unable to perform an operation on node 'x@localhost'.",
		firstLine("\n  Error: unable to perform an operation on node 'x@localhost'.\n\nMost common reasons...\n"))
	assert.Equal(t, "(no error output)", firstLine(" \n"))
}
