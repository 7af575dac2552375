package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Image is the container image of a Docker cluster's nodes: the line
// `qlab broker up` starts by default (rabbit.DefaultDockerVersion), so a
// student's cluster runs what a student's broker runs.
const Image = "rabbitmq:4-management"

// ErrNoDocker means no Docker engine answered within a few seconds.
var ErrNoDocker = errors.New("no Docker engine answers")

// dockerPing bounds the first question to the Docker engine, so a
// machine without one fails fast.
const dockerPing = 5 * time.Second

// dockerDriver runs each node as a container on a network of the
// cluster's own, where the nodes find each other by host name (n1, n2,
// n3) and share a random Erlang cookie the state file keeps.
type dockerDriver struct {
	pool   *dockertest.Pool // nil until first use (a loaded cluster)
	cookie string           // the cluster's Erlang cookie, for rabbitmqctl
}

// newDockerDriver connects to the Docker engine, or fails with
// ErrNoDocker within dockerPing.
func newDockerDriver(ctx context.Context, cookie string) (*dockerDriver, error) {
	d := &dockerDriver{cookie: cookie}
	return d, d.connect(ctx)
}

func (d *dockerDriver) connect(ctx context.Context) error {
	if d.pool != nil {
		return nil
	}
	pool, err := dockertest.NewPool("")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	ping := make(chan error, 1)
	go func() { ping <- pool.Client.Ping() }()
	select {
	case err = <-ping:
	case <-time.After(dockerPing):
		err = fmt.Errorf("no answer within %v", dockerPing)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	d.pool = pool
	return nil
}

func (d *dockerDriver) start(ctx context.Context, c *Cluster) error {
	network, err := d.pool.CreateNetwork(c.Network)
	if err != nil {
		return fmt.Errorf("docker: creating network %s: %v", c.Network, err)
	}
	err = c.startAll(ctx, c.Nodes, func(ctx context.Context, n NodeSpec) error {
		if err := d.run(ctx, runOptions(n, network, c.Cookie)); err != nil {
			return fmt.Errorf("docker: starting %s: %v", n.Container, err)
		}
		return c.awaitNode(ctx, n)
	})
	if err != nil {
		return err
	}
	return c.joinWithCtl(ctx) // the image's nodes boot on their own
}

// run starts a container within ctx. dockertest takes no context (a first
// image pull can take minutes), so past ctx the start is abandoned and the
// error says so; Down removes the container by name should it appear.
func (d *dockerDriver) run(ctx context.Context, opts *dockertest.RunOptions) error {
	done := make(chan error, 1)
	go func() {
		_, err := d.pool.RunWithOptions(opts)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no container within the start's bound (pulling %s?): %w", Image, ctx.Err())
	}
}

// runOptions is node n's container: on the cluster's network under its
// short name as host name, with the cluster's cookie in the cookie file
// (the image's entrypoint refuses RABBITMQ_ERLANG_COOKIE since 3.9), the
// management and Prometheus plugins, and its three ports published on
// loopback.
func runOptions(n NodeSpec, network *dockertest.Network, cookie string) *dockertest.RunOptions {
	repo, tag, _ := strings.Cut(Image, ":")
	bind := func(p int) []dc.PortBinding {
		return []dc.PortBinding{{HostIP: "127.0.0.1", HostPort: strconv.Itoa(p)}}
	}
	const file = "/var/lib/rabbitmq/.erlang.cookie"
	script := fmt.Sprintf("printf %%s %s > %s && chown rabbitmq:rabbitmq %s && chmod 400 %s"+
		" && rabbitmq-plugins enable --offline rabbitmq_management rabbitmq_prometheus"+
		" && exec docker-entrypoint.sh rabbitmq-server", cookie, file, file, file)
	return &dockertest.RunOptions{
		Name: n.Container, Hostname: n.Short, Repository: repo, Tag: tag,
		Networks: []*dockertest.Network{network},
		Env:      []string{"RABBITMQ_NODENAME=" + n.Name},
		Cmd:      []string{"sh", "-c", script},
		PortBindings: map[dc.Port][]dc.PortBinding{
			"5672/tcp":  bind(n.Port),
			"15672/tcp": bind(n.MgmtPort),
			"15692/tcp": bind(n.PromPort),
		},
	}
}

// newCookie is a random Erlang cookie for one cluster.
func newCookie() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return strings.ToUpper(hex.EncodeToString(b))
}

func (d *dockerDriver) ctl(ctx context.Context, n NodeSpec, args ...string) (string, error) {
	if err := d.connect(ctx); err != nil {
		return "", err
	}
	res, ok := d.pool.ContainerByName(n.Container)
	if !ok {
		return "", fmt.Errorf("docker: no container %s", n.Container)
	}
	var stdout, stderr bytes.Buffer
	cmd := append([]string{"rabbitmqctl", "-q", "--erlang-cookie", d.cookie}, args...)
	code, err := res.Exec(cmd, dockertest.ExecOptions{StdOut: &stdout, StdErr: &stderr})
	if err == nil && code != 0 {
		err = fmt.Errorf("exit status %d", code)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("rabbitmqctl %s in %s: %v: %s", strings.Join(args, " "), n.Container, err,
			strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func (d *dockerDriver) alive(ctx context.Context, n NodeSpec) bool {
	if d.connect(ctx) != nil {
		return false
	}
	res, ok := d.pool.ContainerByName(n.Container)
	return ok && res.Container.State.Running
}

func (d *dockerDriver) remove(ctx context.Context, n NodeSpec) error {
	if err := d.connect(ctx); err != nil {
		return err
	}
	if _, ok := d.pool.ContainerByName(n.Container); !ok {
		return nil
	}
	return d.pool.RemoveContainerByName(n.Container)
}

func (d *dockerDriver) cleanup(ctx context.Context, c *Cluster) error {
	if err := d.connect(ctx); err != nil {
		return err
	}
	networks, err := d.pool.NetworksByName(c.Network)
	if err != nil {
		return err
	}
	for i := range networks {
		if err := d.pool.RemoveNetwork(&networks[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *dockerDriver) leftovers(ctx context.Context, c *Cluster) []string {
	if d.connect(ctx) != nil {
		return []string{"the Docker engine does not answer: cannot tell which containers are left"}
	}
	var left []string
	for _, n := range c.Nodes {
		if _, ok := d.pool.ContainerByName(n.Container); ok {
			left = append(left, "container "+n.Container)
		}
	}
	if nets, err := d.pool.NetworksByName(c.Network); err == nil && len(nets) > 0 {
		left = append(left, "network "+c.Network)
	}
	return left
}
