package rabbittest

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/rabbit"
)

// EnvURL43 names the variable that points the tests at a RabbitMQ 4.3
// node beside the 3.10.8 one (scripts/rabbitmq.sh url 4.3 prints it;
// .ci/run exports it).
const EnvURL43 = "QLAB_RABBITMQ43_URL"

var probed sync.Map // URL → probeResult

type probeResult struct {
	b   rabbit.Broker
	err error
}

// NeedVersion returns the URL of a broker of release line line ("3.10"
// or "4.3") and the version it reports, for a test that holds what that
// version does. "4.3" is the broker at $QLAB_RABBITMQ43_URL; any other
// line is the test broker NeedBroker finds, which must report that line.
// Without such a broker the test skips with the reason, or fails under
// QLAB_REQUIRE_BROKER=1. A test broker of another line skips (a suite run
// against that version holds its behaviour); a 4.3 URL that is not 4.3
// fails the test.
func NeedVersion(t testing.TB, line string) (url, version string) {
	t.Helper()
	if line == "4.3" {
		url = strings.TrimSpace(os.Getenv(EnvURL43))
		if url == "" {
			missing(t, "needs a RabbitMQ 4.3 node: "+EnvURL43+" is unset (scripts/rabbitmq.sh up 4.3 starts one)")
		}
	} else {
		url = NeedBroker(t)
	}
	v, ok := probed.Load(url)
	if !ok {
		v, _ = probed.LoadOrStore(url, probeOnce(url))
	}
	r := v.(probeResult)
	if r.err != nil {
		missing(t, "the RabbitMQ "+line+" broker does not answer: "+r.err.Error())
	}
	if !strings.HasPrefix(r.b.Version, line+".") {
		if line != "4.3" { // a suite run against another broker (RABBITMQ_URL): its own version's subtest holds it
			t.Skipf("skipping: holds RabbitMQ %s's behaviour; the test broker is %s", line, r.b.Version)
		}
		t.Fatalf("%s=%s is RabbitMQ %s, not %s", EnvURL43, rabbit.Redact(url), r.b.Version, line)
	}
	return url, r.b.Version
}

func probeOnce(url string) probeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbit.Probe(ctx, url, "test")
	return probeResult{b, err}
}

// missing skips t with why, or fails it under QLAB_REQUIRE_BROKER=1.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s=1 but %s", RequireEnv, why)
	}
	t.Skip("skipping: " + why)
}
