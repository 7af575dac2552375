package inmem

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/queuelab/qlab/lab"
)

// ErrMailServiceDown is what a MailService call returns during its outage.
var ErrMailServiceDown = errors.New("mail service unavailable (503)")

// Outage is a window of lesson time, measured from when a MailService
// starts, during which the service is down: From inclusive, Until
// exclusive. It may open with a slow phase, from From until SlowUntil,
// in which the service hangs before it answers: that is what a caller's
// timeout is for.
type Outage struct {
	From, Until time.Duration
	// SlowUntil ends the slow phase; zero or From: no slow phase.
	SlowUntil time.Duration
	// Hang is how long a call that starts in the slow phase hangs before
	// it fails with ErrMailServiceDown (instead of taking Plan.Work).
	Hang time.Duration
}

// Covers reports whether lesson time at (since the service started) falls
// in the outage.
func (o Outage) Covers(at time.Duration) bool { return at >= o.From && at < o.Until }

// Hangs reports whether a call starting at at falls in the slow phase.
func (o Outage) Hangs(at time.Duration) bool { return o.Covers(at) && at < o.SlowUntil }

// MailService is a mock downstream mail API that goes down for an Outage.
// Each call takes Work of lesson time (Hang in the outage's slow phase);
// a call that starts inside the outage fails with ErrMailServiceDown, any
// other fails as Plan says (or succeeds). It counts every call, so a lesson can show how hard its
// clients hit it while it was down. It does not emit events: the caller
// reports its own attempts. Backend-neutral, so the in-memory and the
// RabbitMQ variants of a lesson share it. Safe for concurrent use.
type MailService struct {
	clock  lab.Clock
	start  time.Duration
	outage Outage
	plan   lab.Plan

	mu    sync.Mutex
	stats MailStats
}

// MailStats is what a MailService counted.
type MailStats struct {
	Calls     int // every call that reached the service
	CallsDown int // calls that arrived during the outage
	CallsHung int // of those, calls that arrived in its slow phase
	Delivered int // calls that succeeded
}

// NewMailService starts a mail service now (lesson time on clock); the
// outage counts from this moment. plan supplies the time a call takes
// (Work) and any seeded transient failures (Fails).
func NewMailService(clock lab.Clock, outage Outage, plan lab.Plan) *MailService {
	return &MailService{clock: clock, start: clock.Elapsed(), outage: outage, plan: plan}
}

// Since is the lesson time since the service started.
func (m *MailService) Since() time.Duration { return m.clock.Elapsed() - m.start }

// Send delivers one mail for task on its attempt (1-based). It honours
// ctx: a cancelled or timed-out call returns ctx's error.
func (m *MailService) Send(ctx context.Context, task string, attempt int) error {
	at := m.Since()
	down, hangs := m.outage.Covers(at), m.outage.Hangs(at)
	m.count(func(s *MailStats) {
		s.Calls++
		if down {
			s.CallsDown++
		}
		if hangs {
			s.CallsHung++
		}
	})
	takes := m.plan.Work
	if hangs {
		takes = m.outage.Hang
	}
	if err := m.clock.Wait(ctx, takes); err != nil {
		return err
	}
	if down {
		return ErrMailServiceDown
	}
	if err := m.plan.Fails(task, attempt); err != nil {
		return err
	}
	m.count(func(s *MailStats) { s.Delivered++ })
	return nil
}

// Stats returns the counts so far.
func (m *MailService) Stats() MailStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

func (m *MailService) count(f func(*MailStats)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.stats)
}
