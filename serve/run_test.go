package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serveInBackground runs Serve on a loopback port with h and drain, and
// returns the base URL, the cancel that stands for Ctrl-C and Serve's
// result.
func serveInBackground(t *testing.T, h http.Handler, drain time.Duration) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h, drain) }()
	return "http://" + ln.Addr().String(), cancel, done
}

func TestServeShutdownDrainsRequestsInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		w.WriteHeader(http.StatusOK)
	})
	base, stop, done := serveInBackground(t, h, 10*time.Second)
	status := make(chan int, 1)
	go func() {
		resp, err := http.Post(base+UsersPath, "application/json", nil)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	<-entered
	stop() // Ctrl-C with a request in flight
	select {
	case err := <-done:
		t.Fatalf("Serve returned while a request was in flight: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	_, err := http.Post(base+UsersPath, "application/json", nil)
	assert.Error(t, err, "no new connections once shutting down")
	close(release)
	assert.Equal(t, http.StatusOK, <-status, "the request in flight finished")
	assert.NoError(t, <-done)
}

func TestServeShutdownIsBoundedByTheDrain(t *testing.T) {
	entered := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done() // a request that never finishes on its own
	})
	base, stop, done := serveInBackground(t, h, 200*time.Millisecond)
	go func() {
		if resp, err := http.Post(base+UsersPath, "application/json", nil); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-entered
	stop()
	select {
	case err := <-done:
		assert.True(t, errors.Is(err, ErrDrain), "got %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not give up on the stuck request within its drain bound")
	}
}
