package rabbittest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/rabbit"
)

var probed sync.Map // URL → probeResult

type probeResult struct {
	b   rabbit.Broker
	err error
}

// NeedVersion returns the URL of a broker of release line line ("3.10"
// or "4.3", see Need) and the version it reports, for a test that holds
// what that version does. Without such a broker the test skips with the
// reason, or fails under QLAB_REQUIRE_BROKER=1. A test broker of another
// line skips the test: a suite run against that line (RABBITMQ_URL set
// to it) holds its behaviour in that line's subtest.
func NeedVersion(t testing.TB, line string) (url, version string) {
	t.Helper()
	url = Need(t, Version(line))
	v, ok := probed.Load(url)
	if !ok {
		v, _ = probed.LoadOrStore(url, probeOnce(url))
	}
	r := v.(probeResult)
	if r.err != nil {
		t.Fatalf("the RabbitMQ %s broker %s stopped answering: %v", line, rabbit.Redact(url), r.err)
	}
	if !strings.HasPrefix(r.b.Version, line+".") {
		t.Skipf("skipping: holds RabbitMQ %s's behaviour; the test broker is %s", line, r.b.Version)
	}
	return url, r.b.Version
}

func probeOnce(url string) probeResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbit.Probe(ctx, url, "test")
	return probeResult{b, err}
}
