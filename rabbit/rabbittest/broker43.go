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

// Env43 names the variable that holds the AMQP URL of the RabbitMQ 4.3
// node the tests of 4.3-only features run on (scripts/rabbitmq.sh url
// 4.3 prints it; .ci/run exports it).
const Env43 = "QLAB_RABBITMQ43_URL"

var (
	once43   sync.Once
	broker43 rabbit.Broker
	found43  error
)

// NeedBroker43 returns the URL of the RabbitMQ 4.3 (or newer) node named
// by QLAB_RABBITMQ43_URL, probed once per test binary. Without it, or
// when it answers with an older version, it skips the test with the
// reason, or fails it under QLAB_REQUIRE_BROKER=1.
func NeedBroker43(t testing.TB) string {
	t.Helper()
	once43.Do(func() { broker43, found43 = probe43() })
	if found43 != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s=1 but no RabbitMQ 4.3: %v", RequireEnv, found43)
		}
		t.Skipf("skipping: needs RabbitMQ 4.3: %v", found43)
	}
	return broker43.URL
}

// probe43 finds the 4.3 node QLAB_RABBITMQ43_URL names.
func probe43() (rabbit.Broker, error) {
	url := strings.TrimSpace(os.Getenv(Env43))
	if url == "" {
		return rabbit.Broker{}, fmt.Errorf("%s is not set (scripts/rabbitmq.sh up 4.3 starts one and prints it)", Env43)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbit.Probe(ctx, url, Env43)
	if err != nil {
		return rabbit.Broker{}, err
	}
	if !atLeast43(b.Version) {
		return rabbit.Broker{}, fmt.Errorf("%s answers with RabbitMQ %s, not 4.3 or newer", Env43, b.Version)
	}
	return b, nil
}

// atLeast43 reports whether version v is 4.3 or newer.
func atLeast43(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 4 || major == 4 && minor >= 3
}
