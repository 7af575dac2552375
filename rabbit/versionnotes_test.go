package rabbit_test

import (
	"crypto/rand"
	"encoding/hex"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

func TestVersionNotesByLine(t *testing.T) {
	count := func(v string) int { return len(rabbit.VersionNotes(v)) }
	for _, v := range []string{"3.10.8", "3.13.7", "", "4", "four.three", "4.x.1"} {
		assert.Zero(t, count(v), "%q: no 4.x notes", v)
	}
	assert.Equal(t, 2, count("4.0.1"), "4.0 gets the 4.0 notes only")
	assert.Equal(t, 2, count("4.2.0"))
	all := count("4.3.6")
	assert.Greater(t, all, 2, "4.3 adds its own")
	assert.Equal(t, all, count("4.10.0"), "4.10 is later than 4.3, not earlier")
	assert.Equal(t, all, count("5.0.0"))
	for _, n := range rabbit.VersionNotes("4.3.6") {
		assert.NotEmpty(t, n.Source, "%q names where it comes from", n.Text)
	}
}

// TestVersionNotesMeasuredOn43 checks the notes that say "measured on
// 4.3.6" against a live 4.3 broker, and that 3.10 differs where they say
// it does: classic queue storage v1 is refused on 4.3 and accepted on
// 3.10; a transient non-exclusive queue is still accepted on 4.3.
func TestVersionNotesMeasuredOn43(t *testing.T) {
	v1 := amqp.Table{"x-queue-version": int32(1)}
	for _, v := range rabbittest.Versions {
		t.Run(string(v), func(t *testing.T) {
			ch := probeChannel(t, rabbittest.Need(t, v))
			err := declareOnce(t, ch, true /* durable */, v1)
			if v == rabbittest.V43 {
				var ae *amqp.Error
				require.ErrorAs(t, err, &ae, "4.3 refuses x-queue-version 1")
				assert.Equal(t, amqp.PreconditionFailed, ae.Code)
				ch = probeChannel(t, rabbittest.Need(t, v)) // the refusal closed the channel
			} else {
				require.NoError(t, err, "3.10 keeps classic queue storage v1")
			}
			assert.NoError(t, declareOnce(t, ch, false /* durable */, nil),
				"a transient non-exclusive queue is still permitted on %s", v)
		})
	}
}

// probeChannel opens a connection and a channel closed when t ends.
func probeChannel(t *testing.T, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	return ch
}

// declareOnce declares a non-exclusive queue under a name of its own and,
// when the broker accepts it, deletes it again.
func declareOnce(t *testing.T, ch *amqp.Channel, durable bool, args amqp.Table) error {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "qlabtest-notes-" + hex.EncodeToString(b[:])
	_, err := ch.QueueDeclare(name, durable, false /* autoDelete */, false /* exclusive */, false /* noWait */, args)
	if err == nil {
		_, derr := ch.QueueDelete(name, false /* ifUnused */, false /* ifEmpty */, false /* noWait */)
		require.NoError(t, derr, "deleting %s", name)
	}
	return err
}
