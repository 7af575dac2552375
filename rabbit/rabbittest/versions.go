package rabbittest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuelab/qlab/rabbit"
)

// Version is a RabbitMQ release line the broker suites run on.
type Version string

// The two lines every broker lesson is tested on: the project machines'
// own node (3.10.8 on 5672) and RabbitMQ 4.3 (scripts/rabbitmq.sh up 4.3
// starts one on 5673; CI exports its URL in Env43).
const (
	V310 Version = "3.10"
	V43  Version = "4.3"
)

// Versions are the lines a suite runs each broker lesson on, oldest first.
var Versions = []Version{V310, V43}

// Env43 names the variable that points the tests at a RabbitMQ 4.3 broker.
const Env43 = "QLAB_RABBITMQ43_URL"

// DefaultURL43 is where scripts/rabbitmq.sh up 4.3 starts its node.
const DefaultURL43 = "amqp://guest:guest@127.0.0.1:5673/"

var (
	once43   sync.Once
	broker43 rabbit.Broker
	found43  error
)

// Need returns the URL of a broker of line v, skipping t with the reason
// when there is none, or failing t under QLAB_REQUIRE_BROKER=1. V310 is
// NeedBroker's broker, whatever its version; V43 is QLAB_RABBITMQ43_URL,
// else (when RABBITMQ_URL is not set: it is then the only broker tried)
// the node scripts/rabbitmq.sh starts, and it must report a 4.3 version.
// Under -short (make quick: one broker pass) V43 skips.
func Need(t testing.TB, v Version) string {
	t.Helper()
	switch v {
	case V310:
		return NeedBroker(t)
	case V43:
		if testing.Short() {
			t.Skip("skipping under -short: one broker line (make test runs 4.3 too)")
		}
		once43.Do(func() { broker43, found43 = find43() })
		if found43 != nil {
			if os.Getenv(RequireEnv) == "1" {
				t.Fatalf("%s=1 but no RabbitMQ 4.3: %v", RequireEnv, found43)
			}
			t.Skipf("skipping: needs RabbitMQ 4.3: %v", found43)
		}
		return broker43.URL
	}
	t.Fatalf("rabbittest: no broker line %q (want one of %v)", v, Versions)
	return ""
}

// find43 looks for the 4.3 broker once per test binary.
func find43() (rabbit.Broker, error) {
	url, how := os.Getenv(Env43), Env43
	if url == "" {
		if os.Getenv(rabbit.EnvURL) != "" {
			return rabbit.Broker{}, fmt.Errorf("%s is not set, and %s is, so no other broker is tried",
				Env43, rabbit.EnvURL)
		}
		url, how = DefaultURL43, "the default 4.3 URL"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbit.Probe(ctx, url, how)
	if err != nil {
		return b, fmt.Errorf("%w (start one: scripts/rabbitmq.sh up 4.3, then set %s)", err, Env43)
	}
	if !strings.HasPrefix(b.Version, "4.3.") {
		return b, fmt.Errorf("the broker at %s (%s) is RabbitMQ %s, not 4.3", rabbit.Redact(url), how, b.Version)
	}
	return b, nil
}
