package versions

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNoteNamesThisBrokerFirst(t *testing.T) {
	n := XDeathRepublished.Note("4.3.6")
	assert.True(t, strings.HasPrefix(n, "An x-death header a worker copies into the message it republishes: RabbitMQ 4.3.6 (this broker) ignores it"), n)
	assert.Contains(t, n, "; RabbitMQ 3.10.8 reads it and keeps counting")
	assert.Contains(t, n, "pull request #11339")

	old := XDeathRepublished.Note("3.10.8")
	assert.True(t, strings.Index(old, "3.10.8 (this broker)") < strings.Index(old, "4.3.6"), old)
}

func TestNoteForAVersionNotMeasured(t *testing.T) {
	n := DeliveryLimit.Note("3.13.7")
	assert.Contains(t, n, "this broker, RabbitMQ 3.13.7, is a version the lab did not measure")
	assert.Contains(t, n, "RabbitMQ 3.10.8 has no limit")
	assert.Contains(t, n, "RabbitMQ 4.3.6 has a limit of 20")
	assert.NotContains(t, DeliveryLimit.Note(""), "this broker", "in memory there is none")
}

// TestEveryFactIsMeasuredOnBoth: a fact gives a figure for each version
// the lab runs, and none says it was not measured.
func TestEveryFactIsMeasuredOnBoth(t *testing.T) {
	for _, f := range []Fact{XDeathRepublished, QuorumTTLHead, QuorumReturns, DeliveryLimit, Metrics} {
		assert.NotEmpty(t, f.On(Old), f.What)
		assert.NotEmpty(t, f.On(New), f.What)
		assert.NotContains(t, strings.ToLower(f.Note(New)), "not measured", f.What)
	}
	assert.Equal(t, "4.3", Line("4.3.6"))
	assert.Equal(t, "3.10", Line("3.10.8"))
}
