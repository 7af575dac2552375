package rabbit

import "fmt"

// The health part of a Session: whether the run can go on (fail, Err),
// what keeps it busy (busyRetrying) and its consumers. Lock: health.mu,
// held only to read or change these fields.

// fail records why the run cannot go on (a consumed queue was deleted, the
// broker stayed away); the first reason wins. WaitSettled returns it.
func (h *health) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failure == nil {
		h.failure = err
		close(h.failed)
	}
}

// err is why the run cannot go on, or nil.
func (h *health) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failure
}

// Err is why the run cannot go on, or nil.
func (s *Session) Err() error { return s.health.err() }

// InterruptConsumers cuts every consumer's connection at once, as a killed
// worker process would (see Consumer.Interrupt): what they held unacked
// goes back to its queue, messages waiting in the broker stay, and each
// consumer reconnects.
func (s *Session) InterruptConsumers() {
	s.health.mu.Lock()
	consumers := append([]*Consumer(nil), s.health.consumers...)
	s.health.mu.Unlock()
	cut := fmt.Sprintf("%d consumer connections", len(consumers))
	if len(consumers) == 1 {
		cut = "1 consumer connection"
	}
	s.Logger.Info("rabbit: planned interruption: " + cut + " cut; the consumers reconnect")
	for _, c := range consumers {
		c.Interrupt()
	}
}

// busyRetrying counts a retry loop, or a consumer between a lost
// connection and its new one, that starts (+1) or stops (-1) waiting for
// the broker: the run's tasks wait behind it (WaitSettled).
func (h *health) busyRetrying(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.retrying += n
}
