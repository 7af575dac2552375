package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrNotLoopback means an address to serve /metrics on is reachable from
// other machines and was not asked for explicitly.
var ErrNotLoopback = errors.New("not a loopback address")

// ServeOptions configure Serve.
type ServeOptions struct {
	// Public allows an address other machines can reach (0.0.0.0, a LAN
	// address, or an empty host). Without it Serve refuses one.
	Public bool
}

// Server serves one Metrics on /metrics.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan error
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// m's registry on /metrics until Close. An address that is not loopback
// (127.0.0.0/8, ::1, localhost) is refused with ErrNotLoopback unless
// opts.Public is set.
func Serve(m *Metrics, addr string, opts ServeOptions) (*Server, error) {
	if err := checkLoopback(addr); err != nil && !opts.Public {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	s := &Server{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		addr: l.Addr(),
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(l) }()
	return s, nil
}

// checkLoopback refuses an address other machines could reach.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("metrics address %q: %v (want host:port, e.g. 127.0.0.1:9100)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("metrics address %q: %w: /metrics stays on this machine (127.0.0.1) unless asked for explicitly",
		addr, ErrNotLoopback)
}

// URL is where the metrics are: http://<addr>/metrics.
func (s *Server) URL() string { return "http://" + s.addr.String() + "/metrics" }

// Close stops the server within ctx and waits until it has stopped.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}
