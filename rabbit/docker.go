package rabbit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// ContainerName is the name of the container `qlab broker up` starts.
const ContainerName = "qlab-rabbitmq"

// dockerBootTimeout bounds how long dockerUp waits for a fresh container's
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

// DefaultDockerVersion is the image line `qlab broker up` (and discovery's
// Docker fallback) starts: RabbitMQ 4, what a student who installs
// RabbitMQ today gets. `--version 3.13` keeps the old line.
const DefaultDockerVersion = "4"

// ErrBadVersion is wrapped by DockerImage's error for a version that
// names no image line.
var ErrBadVersion = errors.New("not a RabbitMQ release line")

// imageLine is a release line as the rabbitmq image tags it: "4", "4.3",
// "3.13", "3.13.7".
var imageLine = regexp.MustCompile(`^[3-9](\.[0-9]{1,2}){0,2}$`)

// DockerImage is the management image of release line version ("" means
// DefaultDockerVersion): "4" is rabbitmq:4-management, "3.13"
// rabbitmq:3.13-management. The error wraps ErrBadVersion.
func DockerImage(version string) (string, error) {
	v := cmp.Or(strings.TrimSpace(version), DefaultDockerVersion)
	if !imageLine.MatchString(v) {
		return "", fmt.Errorf("%w: %q (want a line such as 4, 4.3 or 3.13)", ErrBadVersion, version)
	}
	return "rabbitmq:" + v + "-management", nil
}

// dockerRunOptions is the container dockerUp starts from image: named
// ContainerName, AMQP and the management UI published on 127.0.0.1 only.
func dockerRunOptions(image string) *dockertest.RunOptions {
	repo, tag, _ := strings.Cut(image, ":")
	return &dockertest.RunOptions{
		Name: ContainerName, Repository: repo, Tag: tag,
		PortBindings: map[dc.Port][]dc.PortBinding{
			"5672/tcp":  {{HostIP: "127.0.0.1", HostPort: "5672"}},
			"15672/tcp": {{HostIP: "127.0.0.1", HostPort: "15672"}},
		},
	}
}

// dockerUp is DockerUpVersion of DefaultDockerVersion.
func dockerUp(ctx context.Context) (Broker, error) {
	return DockerUpVersion(ctx, DefaultDockerVersion)
}

// DockerUpVersion starts (or reuses) the container named ContainerName
// from DockerImage(version), with ports 5672 and 15672 published on
// 127.0.0.1, and returns the broker once it accepts connections. A
// container of that name from another image is an error (remove it with
// DockerDown first), never silently reused. It fails fast with
// ErrNoDocker where no Docker engine answers.
func DockerUpVersion(ctx context.Context, version string) (Broker, error) {
	image, err := DockerImage(version)
	if err != nil {
		return Broker{}, err
	}
	pool, err := dockerPool(ctx)
	if err != nil {
		return Broker{}, err
	}
	res, ok := pool.ContainerByName(ContainerName)
	if ok {
		if got := res.Container.Config.Image; got != image {
			return Broker{}, fmt.Errorf("docker: container %s runs %s, not %s: remove it first with qlab broker down",
				ContainerName, got, image)
		}
	} else {
		res, err = pool.RunWithOptions(dockerRunOptions(image))
		if err != nil {
			return Broker{}, fmt.Errorf("docker: starting %s: %v", image, err)
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

// DockerDown removes the container dockerUp started. It fails fast with
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
