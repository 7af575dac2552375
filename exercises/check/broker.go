package check

import (
	"context"
	"os"
	"time"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// Broker finds the RabbitMQ broker a broker exercise is checked against
// (RABBITMQ_URL, else the default URL), within 10 s. Without one it skips
// the check with the reason, or, under QLAB_REQUIRE_BROKER=1 (CI), fails
// it as a check of "this machine"; either way ok is false and the checker
// should return.
func (c *Checker) Broker() (url string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := rabbit.Discover(ctx, rabbit.DiscoverOptions{})
	if err == nil {
		return b.URL, true
	}
	if os.Getenv(rabbittest.RequireEnv) == "1" {
		c.That(Run{Name: "this machine"}, "a RabbitMQ broker to check against", false, err.Error(), "a broker ("+rabbittest.RequireEnv+"=1)", "")
		return "", false
	}
	c.Skip("needs a RabbitMQ broker (start one, or set RABBITMQ_URL): " + err.Error())
	return "", false
}
