package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// noBrokerHere makes discovery look only at a closed port, for real.
func noBrokerHere(t *testing.T) {
	t.Setenv(rabbit.EnvURL, "")
	saved := discoverOptions
	discoverOptions = rabbit.DiscoverOptions{DefaultURL: "amqp://guest:sekrit@127.0.0.1:1/"}
	t.Cleanup(func() { discoverOptions = saved })
}

func TestRunRabbitWithoutBrokerSaysHowToGetOne(t *testing.T) {
	noBrokerHere(t)
	code, out, errOut := qlab("run", "10", "--backend", "rabbit")
	assert.Equal(t, exitError, code)
	assert.Empty(t, out, "nothing runs without a broker")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	assert.Contains(t, errOut, "no RabbitMQ broker found")
	assert.Contains(t, errOut, "rabbitmq-server -detached")
	assert.Contains(t, errOut, "qlab broker up")
	assert.NotContains(t, errOut, "sekrit")
	assert.Less(t, len(errOut), 200, "short: %q", errOut)

	code, _, errOut = qlab("run", "10", "--backend", "rabbit", "-v")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "dial tcp 127.0.0.1:1", "-v adds each step's full error")
	assert.NotContains(t, errOut, "sekrit")
}

// TestRunHonoursBrokerURL: a RABBITMQ_URL that fails is the answer (exit
// 1, one line, redacted), even though the default broker answers.
func TestRunHonoursBrokerURL(t *testing.T) {
	rabbittest.NeedBroker(t)
	t.Setenv(rabbit.EnvURL, "amqp://guest:Wrong-Pw-31@127.0.0.1:5672/")
	code, out, errOut := qlabChecked(t, "run", "10", "--backend", "rabbit", "--speed", "20")
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Equal(t, "qlab: no RabbitMQ broker found: RABBITMQ_URL=amqp://guest:xxxxx@127.0.0.1:5672/: authentication failed "+
		"(RABBITMQ_URL is set, so no other broker is tried: fix or unset it)\n", errOut)
}

func TestBrokerStatusWithoutBroker(t *testing.T) {
	noBrokerHere(t)
	code, _, errOut := qlab("broker", "status")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "no RabbitMQ broker found")
}

func TestBrokerStatusNamesVersionAndHow(t *testing.T) {
	rabbittest.NeedBroker(t)
	code, out, errOut := qlab("broker", "status")
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `^RabbitMQ \d+\.\d+\.\d+ at amqp://guest:xxxxx@`, out)
	assert.Contains(t, out, "found via")
}

func TestBrokerUpDownWithoutDockerExplains(t *testing.T) {
	if _, err := os.Stat("/var/run/docker.sock"); err == nil || os.Getenv("DOCKER_HOST") != "" {
		t.Skip("a Docker engine may answer here; this test is about machines without one")
	}
	noBrokerHere(t)
	for _, sub := range []string{"up", "down"} {
		code, _, errOut := qlab("broker", sub)
		assert.Equal(t, exitError, code, sub)
		assert.Contains(t, errOut, "needs Docker", sub)
		assert.Contains(t, errOut, "no Docker engine answers", sub)
	}
}

func TestBrokerBadInput(t *testing.T) {
	for _, args := range [][]string{{"broker"}, {"broker", "sideways"}, {"broker", "latency", "--n", "0"}, {"run", "10", "--names", "mine"}} {
		code, _, _ := qlab(args...)
		assert.Equal(t, exitUsage, code, args)
	}
}

func TestBrokerLatencyReportsPercentiles(t *testing.T) {
	rabbittest.NeedBroker(t)
	code, out, errOut := qlab("broker", "latency", "--n", "20", "--ttl", "20ms", "--gap", "0s")
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `wait queue TTL 20ms, 20 messages: late by p50 \S+, p99 \S+`, out)
}

func TestRunQ10OnRabbit(t *testing.T) {
	rabbittest.NeedBroker(t)
	code, out, errOut := qlabChecked(t, "run", "10", "--backend", "rabbit", "--speed", "20", "--json")
	require.Equal(t, exitOK, code, errOut)
	fates := map[string]lab.Fate{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e lab.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		assert.Equal(t, lab.Rabbit, e.Backend)
		if e.Kind == lab.Summary {
			fates[e.Task] = e.Fate
		}
	}
	assert.Equal(t, map[string]lab.Fate{"A": lab.FateDone, "B": lab.FateDone, "C": lab.FateDead, "D": lab.FateDone}, fates)
	// A killed run's user needs the prefix: with --json it is on stderr.
	assert.Regexp(t, `^This run's queues are under the prefix qlab-[0-9a-f]{6}; if it is killed, remove them with: qlab broker clean --prefix qlab-[0-9a-f]{6}\n$`, errOut)
}

func TestCompareWithoutBrokerSaysSoInOneLine(t *testing.T) {
	noBrokerHere(t)
	code, out, errOut := qlab("compare", "10")
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
	assert.Contains(t, errOut, "compare needs a RabbitMQ broker")
	assert.NotContains(t, errOut, "sekrit", "passwords are never printed")
}

func TestCompareBadInput(t *testing.T) {
	for args, want := range map[string]string{
		"compare":                      "one lesson number",
		"compare 1":                    "lesson 1 runs on inmem only, so there is nothing to compare (lessons on both: 10, 12, 13, 14",
		"compare 10 --speed 0":         "--speed must be a positive number",
		"compare 10 --json --markdown": "pick one",
		"compare 99":                   "unknown lesson 99",
	} {
		code, _, errOut := qlab(strings.Fields(args)...)
		assert.Equal(t, exitUsage, code, args)
		assert.Contains(t, errOut, want, args)
	}
}

func TestCompareQ10Markdown(t *testing.T) {
	t.Parallel() // waits on the broker: beside the other tests that wait
	rabbittest.NeedBroker(t)
	code, out, errOut := qlabChecked(t, "compare", "10", "--markdown", "--speed", "40", "--repeat", "1")
	require.Equal(t, exitOK, code, errOut)
	for _, title := range []string{"**Per task**", "**Retry delay", "**Persistence", "**Scalability", "**Observability", "**Setup"} {
		assert.Contains(t, out, title)
	}
	assert.Contains(t, out, "| C | dead | 3 |")
}

func TestTUIBrokerDiscoverySaysHowToStartOne(t *testing.T) {
	noBrokerHere(t)
	_, err := brokerDiscovery(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rabbitmq-server -detached")
	assert.NotContains(t, err.Error(), "sekrit")
	assert.NotContains(t, err.Error(), "\n", "one line for the view")
}

// TestBrokerStatusOn43ListsWhatItDoes: on a 4.3 broker status names the
// version and the 4.x behaviour the lessons use; on 3.10 it lists none.
func TestBrokerStatusOn43ListsWhatItDoes(t *testing.T) {
	for _, v := range rabbittest.Versions {
		t.Run(string(v), func(t *testing.T) {
			t.Setenv(rabbit.EnvURL, rabbittest.Need(t, v))
			code, out, errOut := qlab("broker", "status")
			require.Equal(t, exitOK, code, errOut)
			assert.Regexp(t, `^RabbitMQ `+strings.ReplaceAll(string(v), ".", `\.`)+`\.\d+ at `, out)
			if v == rabbittest.V310 {
				assert.Equal(t, 1, strings.Count(out, "\n"), "3.10: one line, no 4.x notes: %q", out)
				return
			}
			for _, want := range []string{"x-delivery-limit is 20", "x-delayed-retry-type", "x-queue-version 1 is refused"} {
				assert.Contains(t, out, want)
			}
			for _, line := range strings.Split(out, "\n") {
				assert.LessOrEqual(t, len(line), 80, "fits 80 columns: %q", line)
			}
		})
	}
}

// TestBrokerUpVersion: --version picks the image line; a bad one is a
// usage error, and a broker of another line already on 5672 is named
// rather than shadowed by a container that could not bind its port.
func TestBrokerUpVersion(t *testing.T) {
	code, _, errOut := qlab("broker", "up", "--version", "latest")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "want a line such as 4, 4.3 or 3.13")
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)

	url := rabbittest.NeedBroker(t)
	t.Setenv(rabbit.EnvURL, url)
	b, err := rabbit.Probe(t.Context(), url, "test")
	require.NoError(t, err)
	other := "4"
	if strings.HasPrefix(b.Version, "4.") {
		other = "3.13"
	}
	code, _, errOut = qlab("broker", "up", "--version", other)
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "a RabbitMQ "+b.Version+" broker already answers")
	assert.Contains(t, errOut, "rabbitmq:"+other+"-management")
	assert.NotContains(t, errOut, "guest:guest")

	code, out, errOut := qlab("broker", "up")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "a broker already answers, nothing to start")
}
