package check

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
)

// Broker43 finds a RabbitMQ 4.3 (or newer) broker for an exercise of a
// 4.3 feature: the node QLAB_RABBITMQ43_URL names, else the broker Broker
// finds when it is new enough. Without one it skips the check saying so,
// or fails it under QLAB_REQUIRE_BROKER=1, as Broker does.
func (c *Checker) Broker43() (url string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := find43(ctx)
	if err == nil {
		return b.URL, true
	}
	why := "needs RabbitMQ 4.3 or newer (a 4.x broker, RABBITMQ_URL naming it, or " +
		broker43Env + "): " + err.Error()
	if os.Getenv(requireBrokerEnv) == "1" {
		c.That(Run{Name: "this machine"}, "a RabbitMQ 4.3 broker to check against", false, why, "a 4.3 broker ("+requireBrokerEnv+"=1)", "")
		return "", false
	}
	c.Skip(why)
	return "", false
}

// find43 is the 4.3 node QLAB_RABBITMQ43_URL names, else the broker
// Discover finds if it is 4.3 or newer.
func find43(ctx context.Context) (rabbit.Broker, error) {
	if u := strings.TrimSpace(os.Getenv(broker43Env)); u != "" {
		b, err := rabbit.Probe(ctx, u, broker43Env)
		if err != nil {
			return b, err
		}
		return b, tooOld(b)
	}
	b, err := rabbit.Discover(ctx, rabbit.DiscoverOptions{})
	if err != nil {
		return b, err
	}
	return b, tooOld(b)
}

// tooOld is an error when b is older than 4.3.
func tooOld(b rabbit.Broker) error {
	if lesson.VersionAtLeast(b.Version, "4.3") {
		return nil
	}
	return lesson.BrokerTooOld("the broker found is RabbitMQ %s", b.Version)
}
