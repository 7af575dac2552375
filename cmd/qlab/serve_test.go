package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/seeds/raffle"
	"github.com/queuelab/qlab/serve"
)

func TestServeRefusesANonLoopbackAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.168.1.5:8080", "example.com:8080"} {
		code, out, errOut := qlab("serve", "--addr", addr)
		assert.Equal(t, exitUsage, code, addr)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "--public", "says how to mean it: %s", addr)
	}
}

func TestServePublicIsAllowedWhenAskedFor(t *testing.T) {
	noBrokerHere(t) // stops before listening: the test binds nothing public
	code, _, errOut := qlab("serve", "--addr", "0.0.0.0:0", "--public")
	assert.Equal(t, exitError, code, "past the address check, to discovery")
	assert.Contains(t, errOut, "no RabbitMQ broker found")
}

func TestServeBadFlagsAreUsageErrors(t *testing.T) {
	cases := map[string][]string{
		"port out of range":               {"--port", "70000"},
		"addr without a port":             {"--addr", "127.0.0.1"},
		"prefix without exact":            {"--prefix", "alice"},
		"unknown names":                   {"--names", "mine"},
		"a positional argument":           {"users"},
		"an unknown flag":                 {"--confirm"},
		"a prefix with a space":           {"--names", "exact", "--prefix", "a b"},
		"confirms not a boolean":          {"--confirms=maybe"},
		"keep under the seeds' own names": {"--keep", "--names", "exact"},
		"a malformed IP":                  {"--addr", "127.0.0.1.1:80"},
	}
	for name, args := range cases {
		code, _, errOut := qlab(append([]string{"serve"}, args...)...)
		assert.Equal(t, exitUsage, code, name)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line for %s: %q", name, errOut)
	}
}

func TestServeWithoutBrokerSaysHowToGetOne(t *testing.T) {
	noBrokerHere(t)
	code, out, errOut := qlab("serve", "--port", "0")
	assert.Equal(t, exitError, code)
	assert.Empty(t, out, "nothing listens without a broker")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	assert.Contains(t, errOut, "rabbitmq-server -detached")
	assert.NotContains(t, errOut, "sekrit")
}

func TestServeHelpListsTheAPI(t *testing.T) {
	code, out, _ := qlab("serve", "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, serve.UsersPath)
	assert.Contains(t, out, serve.SchedulePath)
	assert.Contains(t, out, "--confirms")
}

// syncBuffer is a bytes.Buffer the command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs `qlab serve args...` in the background on a free
// loopback port and returns the API's base URL, the run's prefix, its
// stdout, and stop, which sends the Ctrl-C and returns the exit code.
func startServe(t *testing.T, args ...string) (base, prefix string, stdout *syncBuffer, stop func() int) {
	t.Helper()
	return startServeWith(t, &syncBuffer{}, args...)
}

// startServeWith is startServe writing its stderr to stderr.
func startServeWith(t *testing.T, stderr *syncBuffer, args ...string) (base, prefix string, stdout *syncBuffer, stop func() int) {
	t.Helper()
	rabbittest.NeedBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- Main(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), stdout, stderr) }()
	listening := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	under := regexp.MustCompile(`under the prefix (qlab-[0-9a-f]+)`)
	// The banner comes once the topology is declared: a busy machine's
	// broker can take many seconds, so the bound is generous, and a serve
	// that ends first fails the test at once with what it said.
	bannerBy := time.After(90 * time.Second)
	for !under.MatchString(stdout.String() + stderr.String()) {
		select {
		case code := <-done:
			t.Fatalf("qlab serve ended (exit %d) before its banner; stderr: %s", code, stderr.String())
		case <-bannerBy:
			t.Fatalf("no banner within 90 s; stderr: %s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	all := stdout.String() + stderr.String()
	stop = func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("qlab serve did not stop within its bounds")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	return listening.FindStringSubmatch(all)[1], under.FindStringSubmatch(all)[1], stdout, stop
}

func TestServeCommandEndToEnd(t *testing.T) {
	base, prefix, stdout, stop := startServe(t, "--json")
	resp, err := http.Post(base+serve.UsersPath, "application/json", strings.NewReader(`{"name":"John Silva","email":"john@email.com"}`))
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Post(base+serve.UsersPath, "application/json", strings.NewReader(`{"name":`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	require.Equal(t, exitOK, stop(), "Ctrl-C is a clean stop")
	var events []lab.Event
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var e lab.Event
		require.NoError(t, json.Unmarshal([]byte(line), &e), "stdout is JSON lines only: %q", line)
		events = append(events, e)
	}
	kinds := []lab.Kind{}
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	assert.Equal(t, []lab.Kind{lab.Enqueued, lab.Failed, lab.Lost, lab.Summary}, kinds,
		"the user, the bad request, the queue deleted with the user in it, one summary")
	assert.Equal(t, got["id"], events[0].Task)
	assert.Equal(t, lab.FateLost, events[3].Fate, "the summary agrees: deleting the queue discarded it")

	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	defer conn.Close()
	_, err = rabbit.QueueDepth(context.Background(), conn, prefix+"."+raffle.Queue)
	assert.Error(t, err, "raffle_queue deleted at shutdown")
}

func TestServeKeepLeavesTheQueuesForBrokerClean(t *testing.T) {
	t.Parallel() // waits on the broker: beside the other tests that wait
	base, prefix, stdout, stop := startServe(t, "--keep", "--confirms=false", "--no-color")
	resp, err := http.Post(base+serve.UsersPath, "application/json", strings.NewReader(`{"name":"A","email":"a@example.com"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, exitOK, stop())
	assert.Contains(t, stdout.String(), "broker clean --prefix "+prefix, "says how to remove what it kept")

	names, err := rabbit.PersonNames(prefix)
	require.NoError(t, err)
	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	defer conn.Close()
	depth, err := rabbit.QueueDepth(context.Background(), conn, names.Of(raffle.Queue))
	require.NoError(t, err)
	assert.Equal(t, 1, depth, "the user is still in raffle_queue")

	code, out, errOut := qlab("broker", "clean", "--prefix", prefix)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, names.Of(raffle.Queue))
	for _, q := range serve.Topology().Queues {
		_, err := rabbit.QueueDepth(context.Background(), conn, names.Of(q.Name))
		assert.Error(t, err, "broker clean removed %s", q.Name)
	}
}

// TestServeCtrlCLeavesNothingOfTheRun: two users POSTed, then Ctrl-C (the
// cancel Main gets from SIGINT). The run's users are its own tasks, not
// strangers moved to <prefix>.foreign: nothing of the run's prefix stays
// on the broker, and each user is reported lost once, for the reason it
// was lost: deleting raffle_queue discarded it.
func TestServeCtrlCLeavesNothingOfTheRun(t *testing.T) {
	t.Parallel() // waits on the broker: beside the other tests that wait
	stderr := &syncBuffer{}
	base, prefix, stdout, stop := startServeWith(t, stderr, "--json")
	ids := map[string]bool{}
	for _, user := range []string{`{"name":"A","email":"a@example.com"}`, `{"name":"B","email":"b@example.com"}`} {
		resp, err := http.Post(base+serve.UsersPath, "application/json", strings.NewReader(user))
		require.NoError(t, err)
		var got map[string]string
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, got["error"])
		ids[got["id"]] = true
	}
	require.Equal(t, exitOK, stop(), "Ctrl-C is a clean stop; stderr: %s", stderr.String())
	assert.NotContains(t, stderr.String(), "hold queue", "no user of the run taken for a stranger's")

	lost := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var e lab.Event
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		if e.Kind == lab.Summary {
			assert.Equal(t, lab.FateLost, e.Fate, e.Task)
			lost[e.Task]++
		}
		if e.Kind == lab.Lost {
			assert.Contains(t, e.Note, "deleting its queues discarded the message")
		}
	}
	want := map[string]int{}
	for id := range ids {
		want[id] = 1
	}
	assert.Equal(t, want, lost, "each user lost once, nothing else")

	names, err := rabbit.PersonNames(prefix)
	require.NoError(t, err)
	queues := []string{prefix + ".foreign"}
	for _, q := range serve.Topology().Queues {
		queues = append(queues, names.Of(q.Name))
	}
	for _, q := range queues {
		assert.False(t, queueExists(t, q), "queue %s left on the broker", q)
	}
	conn, err := amqp.Dial(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	defer conn.Close()
	for _, x := range serve.Topology().Exchanges {
		ch, err := conn.Channel()
		require.NoError(t, err)
		err = ch.ExchangeDeclarePassive(names.Of(x.Name), string(x.Kind), true, false, false, false, nil)
		assert.Error(t, err, "exchange %s left on the broker", names.Of(x.Name))
		_ = ch.Close()
	}
}
