package rabbittest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/rabbit/cluster"
)

// opened is every run prefix (Names.Run) Session handed out in this test
// binary: Main looks for queues left under them.
var opened struct {
	sync.Mutex
	runs []string
}

// holdQueue is the run's hold queue (rabbit.Names' hold: <run>.foreign).
// A session's Close keeps it while it holds a message, for a person to
// look at; a test's foreign messages are its own doing, so the test's
// clean-up deletes it.
func holdQueue(run string) string { return run + ".foreign" }

// DeleteHold deletes run's hold queue (<run>.foreign) on url, if there is
// one, and fails t when it cannot: a test that made a run hold its
// forgeries removes them, and says so when it could not.
func DeleteHold(t testing.TB, url, run string) {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		t.Errorf("deleting the test's hold queue %s: %v", holdQueue(run), err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDelete(holdQueue(run), false, false, false)
	}
	if err != nil {
		t.Errorf("deleting the test's hold queue %s: %v", holdQueue(run), err)
	}
}

// Main runs the package's tests (m.Run) and then fails the binary when a
// queue is left on the broker under a prefix Session handed out: the
// test that opened it did not clean up. It lists the queues of the local
// default node with rabbitmqctl (the shared test broker; CI has it); where
// rabbitmqctl cannot list them it says so and checks nothing. Use it as
// func TestMain(m *testing.M) { os.Exit(rabbittest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	opened.Lock()
	runs := opened.runs
	opened.Unlock()
	if len(runs) == 0 {
		return code
	}
	left, err := leftUnder(runs)
	switch {
	case err != nil:
		fmt.Fprintf(os.Stderr, "rabbittest: could not look for queues the tests left: %v\n", err)
	case len(left) > 0:
		fmt.Fprintf(os.Stderr, "FAIL: the tests left %d queue(s) on the broker: %s\n", len(left), strings.Join(left, ", "))
		return 1
	}
	return code
}

// leftUnder lists the queues on the local node whose names start with
// one of the run prefixes.
func leftUnder(runs []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "rabbitmqctl", "list_queues", "-q", "--no-table-headers", "name")
	cmd.Env = cluster.CtlEnv()
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("rabbitmqctl list_queues: %w", err)
	}
	var left []string
	for _, q := range strings.Fields(string(out)) {
		for _, run := range runs {
			if strings.HasPrefix(q, run+".") {
				left = append(left, q)
			}
		}
	}
	sort.Strings(left)
	return left, nil
}
