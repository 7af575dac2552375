package rabbit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

func TestSplitURLs(t *testing.T) {
	cases := map[string][]string{
		"amqp://u:p@h1:5672/":                        {"amqp://u:p@h1:5672/"},
		"amqp://u:p@h1/, amqps://u:p@h2/":            {"amqp://u:p@h1/", "amqps://u:p@h2/"},
		"amqp://u:p,w@h1/,AMQP://u:p@h2/":            {"amqp://u:p,w@h1/", "AMQP://u:p@h2/"},
		"amqp://a:b@h1/,amqp://c:d@h2/,amqp://e@h3/": {"amqp://a:b@h1/", "amqp://c:d@h2/", "amqp://e@h3/"},
	}
	for in, want := range cases {
		assert.Equal(t, want, rabbit.SplitURLs(in), in)
	}
	assert.Equal(t, "amqp://u:xxxxx@h1/,amqp://v:xxxxx@h2/", rabbit.Redact("amqp://u:secret1@h1/,amqp://v:secret2@h2/"))
}

// TestAListOfNodesUsesOneThatAnswers: with the first node of the list
// down, discovery (RABBITMQ_URL, and only it), a session and its
// reconnect use the next; the whole list stays the session's URL. With
// none answering, the one-line error names every node, passwords hidden.
func TestAListOfNodesUsesOneThatAnswers(t *testing.T) {
	live := rabbittest.NeedBroker(t)
	list := "amqp://guest:deadpw@127.0.0.1:1/," + live
	t.Setenv(rabbit.EnvURL, list)
	b, err := rabbit.Discover(testCtx(t), rabbit.DiscoverOptions{})
	require.NoError(t, err)
	assert.Equal(t, list, b.URL)
	assert.Equal(t, rabbit.EnvURL, b.How)
	assert.NotContains(t, b.String(), "deadpw")

	s, err := rabbit.Open(testCtx(t), b.URL, rabbit.RunNames(), lab.NewClock(1), rabbittest.Logger(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	require.NoError(t, s.Topo().Declare(testCtx(t), emailLoopTopology(time.Hour)))
	require.NoError(t, s.Connection().Close()) // lost: the next probe dials the list again
	_, err = s.Topo().Depth(testCtx(t), emailQueue)
	require.NoError(t, err)

	_, err = rabbit.Probe(testCtx(t), "amqp://guest:deadpw@127.0.0.1:1/,amqp://guest:deadpw@127.0.0.1:2/", "test")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "none of the 2 nodes answered")
	assert.NotContains(t, err.Error(), "deadpw")
}
