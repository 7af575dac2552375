package rabbit_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestCloseFreesAWriteStuckOnTheSocket: a broker under flow control
// stops reading a connection; a publish on it then blocks in its write,
// holding its channel, and amqp091-go's Close and shutdown wait behind
// it for as long as the broker does not read (three goroutines of Q22's
// session connection outlived a run by 10 s in two busy runs on
// 2026-11-28). The session's Close must end anyway, and the stuck
// publish with it.
func TestCloseFreesAWriteStuckOnTheSocket(t *testing.T) {
	t.Parallel()
	broker := rabbittest.NeedBroker(t)
	p := rabbittest.StartProxy(t, broker)
	s := rabbittest.SessionAt(t, p.URL(broker), 1)
	t.Cleanup(p.Reset) // runs first: the session's clean-up goes through the proxy
	ch, err := s.Connection().Channel()
	require.NoError(t, err)

	p.Stall()
	var sent atomic.Int64
	published := make(chan error, 1)
	go func() {
		body := make([]byte, 1<<20)
		for {
			// The default exchange drops it (no such queue): only the write matters.
			err := ch.Publish("", "qlab-stuck-write-test", false, false, amqp.Publishing{Body: body})
			if err != nil {
				published <- err
				return
			}
			sent.Add(1)
		}
	}()
	stuck := func() bool { // the count stays put for a while: the socket's buffers are full
		before := sent.Load()
		time.Sleep(300 * time.Millisecond)
		return before > 0 && sent.Load() == before
	}
	require.Eventually(t, stuck, time.Minute, 10*time.Millisecond, "the publishes never blocked")
	t.Logf("the write blocked after %d MiB", sent.Load())

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- s.Close(ctx) }()
	select {
	case err := <-closed:
		t.Logf("Close: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("Close did not end: it waits behind the stuck write")
	}
	select {
	case err := <-published:
		// Not the broker's doing: it drops a connection whose heartbeats
		// it stopped hearing (here after about 30 s: "connection reset"),
		// which under real flow control it does not.
		var netErr net.Error
		require.ErrorAs(t, err, &netErr, "the publish ended by the broker, not by Close: %v", err)
		require.True(t, netErr.Timeout(), "the publish ended by the broker, not by Close's deadline: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the stuck publish never ended")
	}
}
