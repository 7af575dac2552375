package rabbit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// ContainerName is the name of the container `qlab broker up` starts.
const ContainerName = "qlab-rabbitmq"

// dockerBootTimeout bounds how long DockerUp waits for a fresh container's
// broker to accept connections (RabbitMQ takes ~10 s to boot; a first image
// pull takes longer and is the reason this is not "a few seconds").
const dockerBootTimeout = 90 * time.Second

// ErrNoDocker means no Docker engine answered, so dockertest cannot help.
var ErrNoDocker = errors.New("no Docker engine answers (dockertest needs one)")

// dockerPool connects to the Docker engine and pings it within a few
// seconds, so a machine without Docker fails fast.
func dockerPool(ctx context.Context) (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool("")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	ping := make(chan error, 1)
	go func() { ping <- pool.Client.Ping() }()
	select {
	case err := <-ping:
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNoDocker, err)
		}
	case <-time.After(probeTimeout):
		return nil, ErrNoDocker
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return pool, nil
}

// DockerUp starts (or reuses) the rabbitmq:3-management container named
// ContainerName with ports 5672 and 15672 published on 127.0.0.1, and
// returns the broker once it accepts connections. It fails fast with
// ErrNoDocker where no Docker engine answers.
func DockerUp(ctx context.Context) (Broker, error) {
	pool, err := dockerPool(ctx)
	if err != nil {
		return Broker{}, err
	}
	res, ok := pool.ContainerByName(ContainerName)
	if !ok {
		res, err = pool.RunWithOptions(&dockertest.RunOptions{
			Name: ContainerName, Repository: "rabbitmq", Tag: "3-management",
			PortBindings: map[dc.Port][]dc.PortBinding{
				"5672/tcp":  {{HostIP: "127.0.0.1", HostPort: "5672"}},
				"15672/tcp": {{HostIP: "127.0.0.1", HostPort: "15672"}},
			},
		})
		if err != nil {
			return Broker{}, fmt.Errorf("docker: starting rabbitmq:3-management: %v", err)
		}
	}
	url := fmt.Sprintf("amqp://guest:guest@%s/", res.GetHostPort("5672/tcp"))
	how := "docker container " + ContainerName
	var b Broker
	var last error
	up, err := PollUntil(ctx, time.Second, dockerBootTimeout, func() (bool, error) {
		b, last = Probe(ctx, url, how)
		return last == nil, nil
	})
	switch {
	case err != nil:
		return Broker{}, err
	case !up:
		return Broker{}, fmt.Errorf("docker: the broker in %s did not answer within %v: %v", ContainerName, dockerBootTimeout, last)
	}
	return b, nil
}

// DockerDown removes the container DockerUp started. It fails fast with
// ErrNoDocker where no Docker engine answers.
func DockerDown(ctx context.Context) error {
	pool, err := dockerPool(ctx)
	if err != nil {
		return err
	}
	if _, ok := pool.ContainerByName(ContainerName); !ok {
		return fmt.Errorf("docker: no container named %s is running", ContainerName)
	}
	return pool.RemoveContainerByName(ContainerName)
}
