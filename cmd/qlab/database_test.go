package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/rabbit/rabbittest"
	"github.com/queuelab/qlab/store/sqlstore"
)

// TestRunWithABadDatabaseSaysSoOnOneLine: a store lesson on the broker
// whose QLAB_DATABASE_URL does not parse, or points where no database
// answers (a closed port, a server that never speaks), ends with exit 1
// and one line on stderr that names the problem and never the password,
// within the store's connect bound (issue 21).
func TestRunWithABadDatabaseSaysSoOnOneLine(t *testing.T) {
	rabbittest.NeedBroker(t)
	const secret = "Db-Secret-77"
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	require.NoError(t, err)
	defer silent.Close()
	cases := map[string]struct{ url, says string }{
		"garbage":     {"garbage://qlab:" + secret + "@%zz", "is not a postgres:// or sqlite: URL"},
		"bad port":    {"postgres://qlab:" + secret + "@127.0.0.1:54x2/test", "does not parse"},
		"closed port": {"postgres://qlab:" + secret + "@" + closedAddr + "/test", "connection refused"},
		"silent":      {"postgres://qlab:" + secret + "@" + silent.Addr().String() + "/test", "timeout"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv(sqlstore.EnvURL, c.url)
			start := time.Now()
			code, _, errOut := qlab("run", "23", "--backend", "rabbit", "--speed", "20", "--no-color")
			assert.Equal(t, exitError, code)
			assert.Less(t, time.Since(start), sqlstore.DefaultConnectTimeout+20*time.Second, "bounded")
			assert.NotContains(t, errOut, secret)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			assert.Len(t, lines, 1, "one line:\n%s", errOut)
			assert.Contains(t, lines[0], "qlab: store: database unavailable:")
			assert.Contains(t, lines[0], c.says)
		})
	}
}
