package q21

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
	"github.com/queuelab/qlab/seeds/birthday"
)

// How seed 003's workers reconnect: through amqp-connection-manager
// 5.0.0, with heartbeatIntervalInSeconds 60 and no reconnectTimeInSeconds.
// Its source (src/AmqpConnectionManager.ts at tag v5.0.0) sets
// `reconnectTimeInSeconds = options.reconnectTimeInSeconds ||
// this.heartbeatIntervalInSeconds`: 60 s. On a connection's close it
// waits that long, then calls _connect, which takes the next URL of its
// list (`this._urls[this._currentUrl]; this._currentUrl++`, round robin)
// and, if that connect fails, waits the same again before the next one
// (no wait only for ETIMEDOUT). So a worker given all three nodes' URLs
// is without a node for 60 s; one given the seed's single RABBITMQ_URL
// tries the stopped node every 60 s, and is back only at the first try
// after that node is. Measured with the library on 3.10.8: 60.1 s and
// 120.1 s.

// ReconnectTime is amqp-connection-manager's wait before each reconnect
// with the seed's settings (lesson time).
const ReconnectTime = birthday.ReconnectTime

// pacing is how a worker finds a node again after its connection died.
type pacing struct {
	label string // the workers table's URLs cell: how many, or "any" for the lab's loop
	// urls are the node indexes the worker was given, tried round robin
	// from the first; nil is the lab's loop: every node, at once.
	urls []int
	// wait is the lesson time before each attempt after a loss or a
	// failed attempt; 0 for the lab's loop (200 ms real).
	wait time.Duration
}

// library is amqp-connection-manager 5.0.0 with the seed's settings and
// urls, the nodes' indexes in the order the worker was given them.
func library(urls ...int) pacing {
	// The workers table's URLs column; its note names the library.
	return pacing{label: strconv.Itoa(len(urls)), urls: urls, wait: ReconnectTime}
}

// labLoop is the lab's own reconnect: every node in turn at once, again
// every 200 ms until one answers.
var labLoop = pacing{label: "any"}

// runPaced consumes until ctx ends, reconnecting as the library does:
// first its first URL, and after each loss or failed connect a wait of
// p.wait, then the next URL of its list.
func (w *worker) runPaced(ctx context.Context) {
	next := 0
	for ctx.Err() == nil {
		n := w.r.c.Nodes[w.pace.urls[next%len(w.pace.urls)]]
		next++
		c, err := w.r.dial(ctx, n)
		if err == nil {
			consumed := w.consume(ctx, c)
			c.Close()
			err = fmt.Errorf("its connection to %s closed", n.Short)
			if !consumed { // no leader yet: the lab counts it as a failed connect
				err = fmt.Errorf("%s refused the consume", n.Short)
			}
		}
		if ctx.Err() != nil {
			return
		}
		following := w.r.c.Nodes[w.pace.urls[next%len(w.pace.urls)]]
		w.r.env.Log().Info(fmt.Sprintf("q21: %s: %v; amqp-connection-manager waits %s "+
			"(reconnectTimeInSeconds) before it tries %s", w.name, short(err), secs(w.pace.wait), following.Short))
		if w.r.env.Stream.Clock().Wait(ctx, w.pace.wait) != nil {
			return
		}
	}
}

// dial opens one connection to node n, once.
func (r *runner) dial(ctx context.Context, n cluster.NodeSpec) (conn, error) {
	ac, err := amqp.DialConfig(n.URL(), amqp.Config{
		Dial:       rabbit.FaultDial(ctx, amqp.DefaultDial(3*time.Second)), // the TUI's x cuts it
		Properties: amqp.Table{"connection_name": rabbit.ConnectionName(r.names)},
	})
	if err != nil {
		return conn{}, err
	}
	return conn{ac, n}, nil
}

// short is an error's first clause, for a log line.
func short(err error) string {
	s, _, _ := strings.Cut(err.Error(), ": dial")
	return s
}
