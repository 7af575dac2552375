package rabbit_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lab/created"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestCloseSettlesOnlyWhatItDeleted: under make test a session records
// its prefix as settled (created.Record.Settled) when its Close deleted
// all it declared, and the closing clean then need not look under it on
// the 4.3 node; a Close that left a queue must not.
func TestCloseSettlesOnlyWhatItDeleted(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(created.EnvDir, dir) // not parallel: the process's other sessions would record here too
	url := rabbittest.NeedBroker(t)
	ctx := testCtx(t)
	open := func() *rabbit.Session {
		s, err := rabbit.Open(ctx, url, rabbit.RunNames(), lab.NewClock(1), nil)
		require.NoError(t, err)
		require.NoError(t, s.Topo().Declare(ctx, flow.Topology{Queues: []flow.Queue{{Name: "work", Role: flow.Work}}}))
		return s
	}
	clean, left := open(), open()
	require.NoError(t, clean.Close(ctx))
	spent, cancel := context.WithCancel(ctx)
	cancel()
	require.Error(t, left.Close(spent), "no delete gets through a spent context")
	require.NoError(t, left.Close(ctx), "a second Close deletes nothing")
	t.Cleanup(func() { assert.NoError(t, left.Topo().TidyLeft(context.Background())) })

	recs, err := created.Read(dir)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, os.Getpid(), recs[0].Pid)
	prefix := func(s *rabbit.Session) string { return strings.TrimSuffix(s.Names.Prefix, ".") }
	assert.Equal(t, []string{prefix(clean)}, recs[0].Settled)
	assert.Equal(t, []string{prefix(left)}, recs[0].Unsettled())
}
