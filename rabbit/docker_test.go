package rabbit

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDockerImageByLine(t *testing.T) {
	for version, want := range map[string]string{
		"":       "rabbitmq:4-management",
		"4":      "rabbitmq:4-management",
		" 4.3 ":  "rabbitmq:4.3-management",
		"3.13":   "rabbitmq:3.13-management",
		"3.13.7": "rabbitmq:3.13.7-management",
	} {
		got, err := DockerImage(version)
		require.NoError(t, err, version)
		assert.Equal(t, want, got, version)
	}
	for _, bad := range []string{"latest", "2.8", "4-management", "3.13-alpine", "4.3.6.1", "4;rm", "v4"} {
		_, err := DockerImage(bad)
		assert.ErrorIs(t, err, ErrBadVersion, bad)
	}
}

func TestDockerRunOptionsPublishOnLoopbackOnly(t *testing.T) {
	opts := dockerRunOptions("rabbitmq:3.13-management")
	assert.Equal(t, ContainerName, opts.Name)
	assert.Equal(t, "rabbitmq", opts.Repository)
	assert.Equal(t, "3.13-management", opts.Tag)
	for _, port := range []dc.Port{"5672/tcp", "15672/tcp"} {
		require.Len(t, opts.PortBindings[port], 1, port)
		assert.Equal(t, "127.0.0.1", opts.PortBindings[port][0].HostIP, port)
	}
}

// TestDockerUpVersionChecksTheLineFirst: a bad line is refused before
// Docker is asked; a good one without Docker fails fast with ErrNoDocker.
func TestDockerUpVersionChecksTheLineFirst(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	_, err := DockerUpVersion(context.Background(), "latest")
	assert.ErrorIs(t, err, ErrBadVersion)
	_, err = DockerUpVersion(context.Background(), "3.13")
	assert.True(t, errors.Is(err, ErrNoDocker), "%v", err)
}
