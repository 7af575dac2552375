package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/queuelab/qlab/metrics"
)

// metricsFlags are --metrics and its two companions, shared by qlab run
// and qlab tui.
type metricsFlags struct {
	addr   string
	public bool
	hold   bool
}

func (f *metricsFlags) register(fs *flag.FlagSet, hold bool) {
	fs.StringVar(&f.addr, "metrics", "", "serve seed 003's Prometheus metrics on http://ADDR/metrics (host:port, e.g. 127.0.0.1:9100; port 0 picks one); loopback only unless --metrics-public")
	fs.BoolVar(&f.public, "metrics-public", false, "with --metrics: allow an address other machines can reach (0.0.0.0:9100)")
	if hold {
		fs.BoolVar(&f.hold, "metrics-hold", false, "with --metrics: keep serving after the run ends, until Ctrl-C, so you can scrape the final counts")
	}
}

// check refuses the companions without --metrics, and an address that is
// no host:port.
func (f metricsFlags) check() error {
	if f.addr == "" && (f.public || f.hold) {
		return usagef("--metrics-public and --metrics-hold go with --metrics ADDR")
	}
	if _, _, err := net.SplitHostPort(f.addr); f.addr != "" && err != nil {
		return usagef("--metrics %q: want host:port, e.g. 127.0.0.1:9100", f.addr)
	}
	return nil
}

// metricsCloseWait bounds how long closing the server waits for a scrape
// in progress.
const metricsCloseWait = 2 * time.Second

// served is a running --metrics: the metrics to feed (a run's sink),
// where to scrape them, and how to stop serving.
type served struct {
	m    *metrics.Metrics
	url  string
	stop func()
}

// serve starts the metrics server when --metrics was given and says on w
// where to scrape and for how long (until). Without --metrics it returns
// a nil Metrics and a no-op stop. A non-loopback address without
// --metrics-public is a usage error.
func (f metricsFlags) serve(w io.Writer, until string) (served, error) {
	if f.addr == "" {
		return served{stop: func() {}}, nil
	}
	m := metrics.New()
	s, err := metrics.Serve(m, f.addr, metrics.ServeOptions{Public: f.public})
	switch {
	case errors.Is(err, metrics.ErrNotLoopback):
		return served{}, usagef("%v; add --metrics-public to serve it there anyway", err)
	case err != nil:
		return served{}, fmt.Errorf("--metrics: %w", err)
	}
	r := reachOf(strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/metrics"), net.InterfaceAddrs)
	url := r.local + "/metrics"
	fmt.Fprintf(w, "metrics: scrape %s (%s)\n", url, until)
	if note := publicNote("/metrics", r, "/metrics"); note != "" {
		fmt.Fprintln(w, "metrics: "+note)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsCloseWait)
		defer cancel()
		_ = s.Close(ctx)
	}
	return served{m: m, url: url, stop: stop}, nil
}

// until says how long a run's /metrics stays up.
func (f metricsFlags) until() string {
	if f.hold {
		return "until Ctrl-C"
	}
	return "until the run ends; --metrics-hold keeps it up until Ctrl-C"
}
