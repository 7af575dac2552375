package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// DrainTimeout bounds the wait for requests in flight at shutdown: longer
// than PublishTimeout, so a request that is publishing finishes.
const DrainTimeout = 10 * time.Second

// ErrDrain means requests were still running when the drain bound passed;
// their connections were closed.
var ErrDrain = errors.New("requests still in flight when the drain bound passed")

// Serve answers h's requests on ln until ctx ends, then stops taking new
// connections and waits up to drain for requests in flight to finish.
// Requests are not cancelled by ctx: each is bounded by its own timeouts.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, drain time.Duration) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      BodyTimeout + PublishTimeout + 5*time.Second, // after the headers: time to read, publish, answer
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-done // Serve returned http.ErrServerClosed at once
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("%w (%v): %w", ErrDrain, drain, err)
	}
	return nil
}
