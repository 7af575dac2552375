// Package rabbittest holds the test helpers for code that needs a real
// RabbitMQ broker: NeedBroker finds one or skips (or fails under
// QLAB_REQUIRE_BROKER=1, as CI sets), and Session opens a session with a
// private queue prefix that is cleaned up when the test ends.
package rabbittest

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// RequireEnv names the variable that turns a missing broker from a skip
// into a failure.
const RequireEnv = "QLAB_REQUIRE_BROKER"

// brokerBound is how long a helper waits on the broker before it calls
// the broker stuck. It is a busy machine's bound: with both cores taken
// and a -race suite beside it, a healthy broker has been seen to take
// over 10 s for a handful of confirms.
const brokerBound = 60 * time.Second

var (
	once   sync.Once
	broker rabbit.Broker
	found  error
)

// NeedBroker returns the broker's URL, discovered once per test binary
// (RABBITMQ_URL, then the default URL; never Docker, to keep tests quick).
// Without a broker it skips the test with the reason, or fails it when
// QLAB_REQUIRE_BROKER=1.
func NeedBroker(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), brokerBound)
		defer cancel()
		broker, found = rabbit.Discover(ctx, rabbit.DiscoverOptions{})
	})
	if found != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but no broker: %v", RequireEnv, found)
		}
		t.Skipf("skipping: needs a RabbitMQ broker: %v", found)
	}
	return broker.URL
}

// Session opens a session on the test broker with a fresh run prefix and
// the lesson clock at speed, and deletes its queues when the test ends,
// its hold queue of foreign messages too.
// Connection trouble is logged to the test log.
func Session(t testing.TB, speed float64) *rabbit.Session {
	t.Helper()
	return SessionAt(t, NeedBroker(t), speed)
}

// SessionAt is Session on the broker at url (a Proxy's, say), which
// must answer: its clean-up goes through url too.
func SessionAt(t testing.TB, url string, speed float64) *rabbit.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), brokerBound)
	defer cancel()
	s, err := rabbit.Open(ctx, url, rabbit.RunNames(), lab.NewClock(speed), Logger(t))
	if err != nil {
		t.Fatalf("opening a session: %v", err)
	}
	opened.Lock()
	opened.runs = append(opened.runs, s.Names.Run)
	opened.Unlock()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), brokerBound)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Logf("closing the session: %v", err)
		}
		tidy(t, s)
		DeleteHold(t, url, s.Names.Run)
	})
	return s
}

// tidy deletes what s's clean-up left behind (rabbit.Topo.Left): its own
// Close's, or an earlier one's the test made itself with a shorter bound
// (flowtest's), which a second Close no longer knows. Only what is still
// there after that fails the test.
func tidy(t testing.TB, s *rabbit.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), brokerBound)
	defer cancel()
	if err := s.Topo().TidyLeft(ctx); err != nil {
		t.Errorf("cleaning up the test's queues: %v", err)
	}
}

// Logger returns a slog logger that writes to t's log.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
