package labtest

import (
	"os"
	"os/signal"
	"syscall"
)

// RemoveOnSignal runs remove on SIGINT or SIGTERM (Ctrl-C to make test),
// which would end a test process before its TestMain cleans up, then
// ends the process as the signal would have (exit 128+n). stop
// unregisters the signals and ends the watching goroutine, for a
// TestMain that checks for goroutines left behind.
func RemoveOnSignal(remove func()) (stop func()) {
	sigs, done := make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			remove()
			os.Exit(128 + int(sig.(syscall.Signal)))
		case <-done:
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}
