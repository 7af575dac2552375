package lesson_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The dependency rule (issue 19): package lesson and the channel lessons
// Q01–Q09 never link the broker's client, the Docker client or package
// rabbit; only lessons that run on a broker import lesson/rabbitenv.
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("go list builds the import graph: not in -short")
	}
	banned := []string{
		"github.com/rabbitmq/amqp091-go",
		"github.com/ory/dockertest/v3",
		"github.com/docker/",
		"github.com/queuelab/qlab/rabbit",
		"github.com/queuelab/qlab/lesson/rabbitenv",
	}
	pkgs := []string{"github.com/queuelab/qlab/lesson", "github.com/queuelab/qlab/flow", "github.com/queuelab/qlab/inmem"}
	for n := 1; n <= 9; n++ {
		pkgs = append(pkgs, "github.com/queuelab/qlab/lessons/q0"+string(rune('0'+n)))
	}
	for _, pkg := range pkgs {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if strings.HasPrefix(dep, b) {
					t.Errorf("%s imports %s: the channel lessons must build without the broker", pkg, dep)
				}
			}
		}
	}
}
