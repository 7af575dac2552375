package rabbit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestBrokerErrorQuotingThePasswordIsRedacted: a URL pasted twice puts
// its second userinfo into the vhost, and the broker's refusal quotes the
// vhost (530 NOT_ALLOWED - vhost guest:S3cretXY@… not found). The error
// must not carry the password, however the URL was mangled.
func TestBrokerErrorQuotingThePasswordIsRedacted(t *testing.T) {
	rabbittest.NeedBroker(t)
	raw := "amqp://guest:guest@127.0.0.1:5672/guest:S3cretXY@127.0.0.1:5672/rel"
	_, err := rabbit.Probe(testCtx(t), raw, "test")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "vhost")
	assert.NotContains(t, err.Error(), "S3cretXY")
}

// TestURLReadOtherwiseIsRefused: amqp091-go reads "amqp:guest:pw@host/v"
// (no "//") as the default guest@localhost, vhost "/": a run would say it
// connected to what was written while it talked to another broker.
func TestURLReadOtherwiseIsRefused(t *testing.T) {
	for _, raw := range []string{"amqp:guest:pw@example.invalid/vhost", "amqp:example.invalid"} {
		_, err := rabbit.Probe(testCtx(t), raw, "test")
		require.Error(t, err, raw)
		assert.Contains(t, err.Error(), "amqp091-go would read it as", raw)
		assert.NotContains(t, err.Error(), ":pw@", raw)
	}
}
