package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/rabbit"
)

// TestANotURLBrokerValueIsNeverPrinted: RABBITMQ_URL set to a password
// alone (pasted into the wrong variable) is no URL, so no password can be
// cut out of it: every command that finds the broker says what is wrong
// without printing the value, with -v and without.
func TestANotURLBrokerValueIsNeverPrinted(t *testing.T) {
	const secret = "S3cretPW"
	t.Setenv(rabbit.EnvURL, secret)
	commands := [][]string{
		{"run", "10", "--backend", "rabbit"},
		{"run", "10", "--backend", "rabbit", "-v"},
		{"serve", "--addr", "127.0.0.1:0"},
		{"serve", "--addr", "127.0.0.1:0", "-v"},
		{"dlq", "inspect", "qlab-0000aa.sequential.dlq"},
		{"broker", "status"},
		{"broker", "latency"},
		{"broker", "clean", "--prefix", "qlab-0000aa"},
		{"compare", "10"},
		{"tui", "12", "--backend", "rabbit"},
	}
	for _, args := range commands {
		code, out, errOut := qlab(args...)
		assert.NotEqual(t, exitOK, code, "%v: no broker", args)
		assert.NotContains(t, out+errOut, secret, "%v", args)
		assert.NotContains(t, out+errOut, "S3cret", "%v: not even a part", args)
	}
	// The TUI needs a terminal; what it shows of a miss is the first line
	// of its finder's error (tui.Model.onBroker).
	_, err := brokerDiscovery(t.Context())
	if assert.Error(t, err) {
		assert.NotContains(t, err.Error(), secret, "the TUI's no-broker line")
	}
	_, _, errOut := qlab("broker", "status")
	assert.Contains(t, errOut, "RABBITMQ_URL=<hidden: 8 characters, not a URL>", "says what is wrong")
}
