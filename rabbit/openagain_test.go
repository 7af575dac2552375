package rabbit_test

import (
	"bytes"
	"log/slog"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/rabbittest"
)

// TestOpenAgainWaitsForABrokerThatIsAway: a lesson's later part opens its
// session with OpenAgain. Stop 38's CI failed Q25 on 4.3 when a part's
// dial had no answer within its 5 s on a loaded machine. Where Open fails
// at once, OpenAgain waits for the broker to come back.
func TestOpenAgainWaitsForABrokerThatIsAway(t *testing.T) {
	broker := rabbittest.NeedBroker(t)
	p := rabbittest.StartProxy(t, broker)
	addr, via := p.Addr(), p.URL(broker)
	p.Cut() // the port refuses: the broker is away
	ctx := testCtx(t)
	_, err := rabbit.Open(ctx, via, rabbit.RunNames(), lab.NewClock(1), nil)
	require.Error(t, err, "Open tries once")

	warned := make(chan struct{}) // closed at OpenAgain's first "trying again"
	var once sync.Once
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		if bytes.Contains(p, []byte("trying again")) {
			once.Do(func() { close(warned) })
		}
		return len(p), nil
	}), nil))
	opened := make(chan error, 1)
	go func() {
		s, err := rabbit.OpenAgain(ctx, via, rabbit.RunNames(), lab.NewClock(1), logger, 0)
		if err == nil {
			err = s.Close(ctx)
		}
		opened <- err
	}()
	select {
	case <-warned:
	case err := <-opened:
		t.Fatalf("OpenAgain ended before the broker came back: %v", err)
	}
	rabbittest.StartProxyOn(t, addr, broker) // back where it was
	assert.NoError(t, <-opened)
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestOpenAgainFailsAtOnceOnARefusal: a wrong password is no broker that
// is away: waiting would not help.
func TestOpenAgainFailsAtOnceOnARefusal(t *testing.T) {
	u, err := url.Parse(rabbittest.NeedBroker(t))
	require.NoError(t, err)
	u.User = url.UserPassword("guest", "not-the-password")
	_, err = rabbit.OpenAgain(testCtx(t), u.String(), rabbit.RunNames(), lab.NewClock(1), nil, 0)
	var dial *rabbit.DialError
	require.ErrorAs(t, err, &dial)
	assert.Equal(t, "authentication failed", dial.Reason)
	assert.NotContains(t, err.Error(), "stayed away", "given up at once, not after waiting")
}
