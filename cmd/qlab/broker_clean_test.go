package main

import (
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

func TestBrokerCleanBadInput(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no prefix":         {[]string{"broker", "clean"}, "clean needs --prefix P"},
		"empty prefix":      {[]string{"broker", "clean", "--prefix", ""}, "clean needs --prefix P"},
		"bad prefix":        {[]string{"broker", "clean", "--prefix", "a b"}, "--prefix: prefix \"a b\" may hold only"},
		"reserved prefix":   {[]string{"broker", "clean", "--prefix", "amq"}, "is reserved"},
		"unknown lesson":    {[]string{"broker", "clean", "--prefix", "p", "--lesson", "99"}, "--lesson: unknown lesson 99"},
		"in-memory lesson":  {[]string{"broker", "clean", "--prefix", "p", "--lesson", "3"}, "lesson Q03 declares nothing on the broker"},
		"two subcommands":   {[]string{"broker", "clean", "status", "--prefix", "p"}, "broker takes one of status, up, down, latency, clean"},
		"unknown broker op": {[]string{"broker", "sweep"}, "use status, up, down, latency or clean"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := qlab(c.args...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.Contains(t, errOut, c.want)
		})
	}
}

func TestBrokerCleanHelp(t *testing.T) {
	code, out, _ := qlab("broker", "--help")
	assert.Equal(t, exitOK, code)
	for _, want := range []string{"clean", "--prefix", "--lesson", "--dry-run"} {
		assert.Contains(t, out, want)
	}
}

func TestBrokerCleanWithoutBroker(t *testing.T) {
	noBrokerHere(t)
	code, out, errOut := qlab("broker", "clean", "--prefix", "alice")
	assert.Equal(t, exitError, code)
	assert.Empty(t, out)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
	assert.Contains(t, errOut, "no RabbitMQ broker found")
	assert.NotContains(t, errOut, "sekrit")
}

// TestBrokerClean leaves Q12's queues under a prefix of its own as a
// killed run would (one holding a message, one a quorum queue, one no
// lesson declares) while a consumer is still attached to one: --dry-run
// lists them and keeps them; clean refuses and deletes nothing, because
// the run is still going (it once deleted the wait queue and the DLQ under
// a live run); once the consumer is gone, clean deletes exactly the
// lesson's queues, the quorum one included (if-unused made it fail with
// 540 on quorum queues).
func TestBrokerClean(t *testing.T) {
	url := rabbittest.NeedBroker(t)
	names := rabbit.RunNames()
	prefix := strings.TrimSuffix(names.Prefix, ".")
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	defer conn.Close()
	ch, err := conn.Channel()
	require.NoError(t, err)
	queues := []string{"email_queue", "email_queue_wait", "email_queue_dlq", "not_a_lesson_queue"}
	for _, q := range queues {
		var args amqp.Table
		if q == "email_queue_wait" {
			args = amqp.Table{"x-queue-type": "quorum"}
		}
		_, err := ch.QueueDeclare(names.Of(q), true, false, false, false, args) // durable, as a run's
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		c, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer c.Close()
		ch, _ := c.Channel()
		for _, q := range queues {
			_, _ = ch.QueueDelete(names.Of(q), false, false, false)
		}
	})
	require.NoError(t, ch.Confirm(false))
	dc, err := ch.PublishWithDeferredConfirm("", names.Of("email_queue"), false, false, amqp.Publishing{Body: []byte("left behind")})
	require.NoError(t, err)
	require.True(t, dc.Wait(), "the broker confirms the message before clean counts it")
	// A consumer on the DLQ: a run with this prefix still going.
	consumer, err := conn.Channel()
	require.NoError(t, err)
	_, err = consumer.Consume(names.Of("email_queue_dlq"), "", false, false, false, false, nil)
	require.NoError(t, err)

	code, out, errOut := qlab("broker", "clean", "--prefix", prefix, "--lesson", "12", "--dry-run")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "would delete queue "+names.Of("email_queue")+" (1 ready message)")
	assert.Contains(t, out, "would delete queue "+names.Of("email_queue_wait")+" (0 ready messages)")
	assert.Contains(t, out, "left queue "+names.Of("email_queue_dlq")+": 1 consumers attached")
	assert.NotContains(t, out, "not_a_lesson_queue")
	all := map[string]bool{"email_queue": true, "email_queue_wait": true, "email_queue_dlq": true, "not_a_lesson_queue": true}
	assertQueues(t, conn, names, all)

	code, _, errOut = qlab("broker", "clean", "--prefix", prefix, "--lesson", "12")
	assert.Equal(t, exitError, code)
	assert.Contains(t, errOut, "a run with this prefix is still going: queue "+names.Of("email_queue_dlq")+" has 1 consumers")
	assertQueues(t, conn, names, all)

	require.NoError(t, consumer.Close()) // the run ended
	code, out, errOut = qlab("broker", "clean", "--prefix", prefix, "--lesson", "12")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "deleted queue "+names.Of("email_queue")+" (1 ready message)")
	assert.Contains(t, out, "deleted 3, left 0 in use; 0 lesson names not on the broker under "+names.Prefix)
	assertQueues(t, conn, names, map[string]bool{"email_queue": false, "email_queue_wait": false, "email_queue_dlq": false, "not_a_lesson_queue": true})
}

// assertQueues checks which of the seed queues exist under names.
func assertQueues(t *testing.T, conn *amqp.Connection, names rabbit.Names, want map[string]bool) {
	t.Helper()
	for q, exists := range want {
		ch, err := conn.Channel()
		require.NoError(t, err)
		_, err = ch.QueueDeclarePassive(names.Of(q), true, false, false, false, nil)
		assert.Equal(t, exists, err == nil, fmt.Sprintf("queue %s exists: %v", names.Of(q), err))
		if err == nil {
			ch.Close()
		}
	}
}

// TestBrokerCleanNothingLeft: a run killed before its first declare left
// nothing under its prefix, and clean says so rather than only counting
// the lesson names it did not find.
func TestBrokerCleanNothingLeft(t *testing.T) {
	rabbittest.NeedBroker(t)
	prefix := strings.TrimSuffix(rabbit.RunNames().Prefix, ".")
	code, out, errOut := qlab("broker", "clean", "--prefix", prefix)
	require.Equal(t, exitOK, code, errOut)
	flat := strings.Join(strings.Fields(out), " ") // as wrapped for the terminal
	assert.Contains(t, flat, "nothing to clean under "+prefix+":")
	assert.Contains(t, flat, "a run killed before its first declare left nothing")
}
