package inmem

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
)

func TestMailServiceOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := lab.NewClock(10)
		plan := lab.Plan{Work: 100 * time.Millisecond}
		svc := NewMailService(clock, Outage{From: time.Second, Until: 3 * time.Second}, plan)
		ctx := context.Background()

		assert.NoError(t, svc.Send(ctx, "m1", 1), "up before the outage")
		clock.Sleep(time.Second - 100*time.Millisecond)
		assert.ErrorIs(t, svc.Send(ctx, "m2", 1), ErrMailServiceDown, "down from From")
		clock.Sleep(1800 * time.Millisecond) // 2.9 s
		assert.ErrorIs(t, svc.Send(ctx, "m3", 1), ErrMailServiceDown, "still down just before Until")
		assert.NoError(t, svc.Send(ctx, "m4", 1), "back at Until")
		assert.Equal(t, MailStats{Calls: 4, CallsDown: 2, Delivered: 2}, svc.Stats())
		assert.Equal(t, 3*time.Second+100*time.Millisecond, svc.Since(), "each call took Work of lesson time")
	})
}

func TestMailServiceHonoursContextAndPlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := lab.NewClock(1)
		svc := NewMailService(clock, Outage{}, lab.Plan{Work: time.Second, Poison: []string{"bad"}})
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, svc.Send(ctx, "m1", 1), context.DeadlineExceeded)
		assert.ErrorIs(t, svc.Send(context.Background(), "bad", 1), lab.ErrPoison, "plan failures still apply")
		assert.Equal(t, MailStats{Calls: 2}, svc.Stats())
	})
}

// TestMailServiceHangs: in the outage's slow phase a call hangs for Hang
// before its 503, or until its context is done; after it, the 503 is quick.
func TestMailServiceHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := lab.NewClock(1)
		outage := Outage{From: time.Second, Until: 20 * time.Second, SlowUntil: 10 * time.Second, Hang: 5 * time.Second}
		svc := NewMailService(clock, outage, lab.Plan{Work: 100 * time.Millisecond})
		clock.Sleep(time.Second)

		start := clock.Elapsed()
		assert.ErrorIs(t, svc.Send(context.Background(), "m1", 1), ErrMailServiceDown)
		assert.Equal(t, 5*time.Second, clock.Elapsed()-start, "hung for Hang")

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start = clock.Elapsed()
		assert.ErrorIs(t, svc.Send(ctx, "m2", 1), context.DeadlineExceeded, "a caller's timeout cuts the hang")
		assert.Equal(t, 3*time.Second, clock.Elapsed()-start)

		clock.Sleep(time.Second) // 10 s: the slow phase is over, the outage is not
		start = clock.Elapsed()
		assert.ErrorIs(t, svc.Send(context.Background(), "m3", 1), ErrMailServiceDown)
		assert.Equal(t, 100*time.Millisecond, clock.Elapsed()-start, "a quick 503 again")
		assert.Equal(t, MailStats{Calls: 3, CallsDown: 3, CallsHung: 2}, svc.Stats())
	})
}
