//go:build unix

package rabbit_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestExchangeDeclaredLateIsDeleted: the broker stalls (its process
// stopped, as 300 runs at once on two cores made it) while a run declares
// its exchange; the declare gets no answer within its bound and the
// broker carries it out once it runs again. The run used to give up at
// once and never list the exchange for deletion: 300 concurrent runs left
// 109 behind. Now it tries again, and whatever it tried is deleted at
// Close.
func TestExchangeDeclaredLateIsDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private RabbitMQ node")
	}
	t.Parallel() // stalls a node of its own: beside the other tests' waits
	n := rabbittest.StartNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := n.Ctl(ctx, "eval", "os:getpid().")
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.Trim(strings.TrimSpace(out), `"`))
	require.NoError(t, err, "the node's process id: %q", out)
	thaw := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(thaw) // before the node's removal, which needs it running

	s, err := rabbit.Open(ctx, n.URL, rabbit.RunNames(), lab.NewClock(1), rabbittest.Logger(t))
	require.NoError(t, err)
	topo := flow.Topology{
		Queues:    []flow.Queue{{Name: "mail", Role: flow.Work}},
		Exchanges: []flow.Exchange{{Name: "notify", Kind: flow.Topic}},
		Bindings:  []flow.Binding{{Exchange: "notify", Queue: "mail", Key: "mail.*"}},
	}
	require.NoError(t, s.Topo().Declare(ctx, topo))

	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	go func() {
		time.Sleep(8 * time.Second) // past one declare's bound (5 s)
		thaw()
	}()
	declared, err := rabbit.DeclareRoutes(s, ctx, topo)
	require.NoError(t, err, "the declare is tried again once the broker answers")
	assert.Equal(t, []string{s.Names.Of("notify")}, declared, "the exchange is listed for deletion")
	require.NoError(t, s.Close(ctx))
}
