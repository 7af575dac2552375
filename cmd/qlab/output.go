package main

import (
	"context"
	"errors"
	"io"
	"sync"
)

// errOutputClosed is the cause a run is cancelled with when its output
// went away.
var errOutputClosed = errors.New("output closed")

// watchedOutput passes writes to w; the first write that fails (a closed
// pipe: `qlab run 10 --json | head -1`) stops the run through stop, so it
// ends and deletes what it created instead of writing into nothing. main
// ignores SIGPIPE, which would otherwise kill the process at that write.
type watchedOutput struct {
	w    io.Writer
	stop context.CancelCauseFunc

	mu  sync.Mutex
	err error
}

func (o *watchedOutput) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		o.mu.Lock()
		if o.err == nil {
			o.err = err
			o.stop(errOutputClosed)
		}
		o.mu.Unlock()
	}
	return n, err
}

// Err is the first write error, or nil.
func (o *watchedOutput) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}
