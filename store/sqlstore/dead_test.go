package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/store/sqlstore"
	"github.com/queuelab/qlab/store/sqlstore/sqlstoretest"
)

// TestDropDeadSchemasFindsAnyPrefix: a run under --names exact --prefix
// alice keeps its store in a schema named after alice, not qlab; once no
// connection uses it, DropDeadSchemas drops it like any other, and
// leaves a schema its match refuses.
func TestDropDeadSchemasFindsAnyPrefix(t *testing.T) {
	url := sqlstoretest.NeedPostgres(t)
	mine := fmt.Sprintf("alice%d_q18_dead", os.Getpid())
	other := fmt.Sprintf("bob%d_q18_dead", os.Getpid())
	for _, schema := range []string{mine, other} {
		s, err := sqlstore.Open(t.Context(), sqlstore.Config{URL: url, Schema: schema})
		require.NoError(t, err)
		require.NoError(t, s.Close()) // the run ends, its schema stays
	}
	t.Cleanup(func() { // t.Context is done by now
		_, _, _ = sqlstore.DropDeadSchemas(context.Background(), url, func(s string) bool { return s == other }, false)
	})
	dropped, inUse, err := sqlstore.DropDeadSchemas(t.Context(), url, func(s string) bool { return s == mine }, false)
	require.NoError(t, err)
	assert.Equal(t, []string{mine}, dropped)
	assert.Empty(t, inUse)
	left, _, err := sqlstore.DropDeadSchemas(t.Context(), url, func(s string) bool { return s == other }, true)
	require.NoError(t, err)
	assert.Equal(t, []string{other}, left, "a schema the match refuses stays")
}
