package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manualClock is a Clock a test moves by hand; advance runs the timers
// that come due, in order, on the test's goroutine.
type manualClock struct {
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (t *manualTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func newManualClock() *manualClock    { return &manualClock{now: lessonEpoch} }
func (c *manualClock) Now() time.Time { return c.now }
func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// pending is how many timers are still armed.
func (c *manualClock) pending() int {
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

func (c *manualClock) advance(d time.Duration) {
	end := c.now.Add(d)
	for {
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		var next *manualTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(end) {
				next = t
				break
			}
		}
		if next == nil {
			c.now = end
			return
		}
		c.now, next.stopped = next.at, true
		next.f()
	}
}

var errDown = errors.New("mail service down")

// moves records transitions from any goroutine (the reset timer has its
// own).
type moves struct {
	mu  sync.Mutex
	got []string
}

func (m *moves) record(_ context.Context, _, to State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, to.String())
}

func (m *moves) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.got...)
}

// seedSettings are the NestJS email service's opossum options (timeout
// 3 s, 20 %, reset 10 s) with opossum's default window and volume.
func seedSettings(c Clock) Settings {
	return Settings{
		Timeout:                  3 * time.Second,
		ErrorThresholdPercentage: 20,
		ResetTimeout:             10 * time.Second,
		Clock:                    c,
	}
}

func ok(context.Context) error   { return nil }
func fail(context.Context) error { return errDown }

func TestStateStrings(t *testing.T) {
	assert.Equal(t, "closed", StateClosed.String())
	assert.Equal(t, "open", StateOpen.String())
	assert.Equal(t, "half_open", StateHalfOpen.String())
	assert.Equal(t, "state(7)", State(7).String())
}

// TestDefaults: opossum's option defaults (circuit.js:179-184,238).
func TestDefaults(t *testing.T) {
	s := New(Settings{}).Settings()
	assert.Equal(t, 10*time.Second, s.Timeout)
	assert.Equal(t, 50.0, s.ErrorThresholdPercentage)
	assert.Equal(t, 0, s.VolumeThreshold)
	assert.Equal(t, 30*time.Second, s.ResetTimeout)
	assert.Equal(t, 10*time.Second, s.RollingWindow)
	assert.Equal(t, 10, s.Buckets)
	assert.False(t, s.IgnoreStaleOutcomes, "opossum's way unless asked")
	assert.Equal(t, realClock{}, s.Clock)
}

// script runs a breaker through steps and records what it saw. A step is
// "ok" or "fail" (a call that returns at once), "wait 10s" (the clock
// moves; timers fire), "slow" (a call is let in and kept in flight),
// "slow ok" / "slow fail" (the oldest kept call ends).
type script struct {
	t     *testing.T
	clock *manualClock
	b     *Breaker
	moves []string // transitions, "from>to"
	errs  []string // per call step: "ok", "fail", "open", "busy" (ErrTooManyRequests)
	slow  []uint64 // generations of kept calls
}

func newScript(t *testing.T, tweak func(*Settings)) *script {
	sc := &script{t: t, clock: newManualClock()}
	s := seedSettings(sc.clock)
	s.Timeout = -1                // calls return at once; timeouts have their own tests
	s.RollingWindow = time.Minute // so a wait for the reset timeout forgets nothing
	if tweak != nil {
		tweak(&s)
	}
	s.OnStateChange = func(_ context.Context, from, to State) { sc.moves = append(sc.moves, from.String()+">"+to.String()) }
	sc.b = New(s)
	return sc
}

func (sc *script) run(steps ...string) *script {
	for _, st := range steps {
		switch f := strings.Fields(st); f[0] {
		case "ok", "fail":
			fn := ok
			if f[0] == "fail" {
				fn = fail
			}
			sc.errs = append(sc.errs, errName(sc.b.Execute(context.Background(), fn)))
		case "wait":
			d, err := time.ParseDuration(f[1])
			require.NoError(sc.t, err)
			sc.clock.advance(d)
		case "slow":
			if len(f) == 1 {
				gen, err := sc.b.before(context.Background())
				require.NoError(sc.t, err, "the slow call must be let in")
				sc.slow = append(sc.slow, gen)
				continue
			}
			var out outcome
			if f[1] == "fail" {
				out.err = errDown
			}
			sc.b.after(context.Background(), sc.slow[0], out)
			sc.slow = sc.slow[1:]
		default:
			sc.t.Fatalf("bad step %q", st)
		}
	}
	return sc
}

func errName(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrTooManyRequests):
		return "busy"
	case errors.Is(err, ErrOpen):
		return "open"
	case errors.Is(err, errDown):
		return "fail"
	}
	return err.Error()
}

// TestOpossumSemantics is the breaker's specification, one row per
// behaviour of opossum v10 read in its source (lib/circuit.js,
// lib/status.js) and docs (https://nodeshift.dev/opossum/): each row
// names what it pins and where opossum says so.
func TestOpossumSemantics(t *testing.T) {
	tests := []struct {
		name   string
		tweak  func(*Settings)
		steps  []string
		state  State
		moves  string // transitions, space-separated
		errs   string // outcome of each call step, space-separated
		counts Counts // the rolling window at the end
	}{{
		name:  "opens on a failure above the threshold; volume 0 means the first failure can (circuit.js:981-996)",
		steps: []string{"ok", "ok", "ok", "ok", "fail"}, // 1 of 5 = 20 %: not above
		state: StateClosed, errs: "ok ok ok ok fail",
		counts: Counts{Fires: 5, Successes: 4, Failures: 1},
	}, {
		name:  "a second failure makes 2 of 6 and opens it",
		steps: []string{"ok", "ok", "ok", "ok", "fail", "fail", "ok"},
		state: StateOpen, moves: "closed>open", errs: "ok ok ok ok fail fail open",
		counts: Counts{Fires: 7, Successes: 4, Failures: 2, Rejects: 1},
	}, {
		name:  "rejected calls are fires: they count toward the volume (circuit.js:656 emits fire before the open check at 711)",
		tweak: func(s *Settings) { s.VolumeThreshold = 3; s.RollingWindow = time.Minute },
		steps: []string{"fail", "fail", "fail", "ok", "ok", "ok"},
		state: StateOpen, moves: "closed>open", errs: "fail fail fail open open open",
		counts: Counts{Fires: 6, Failures: 3, Rejects: 3},
	}, {
		name:  "the reset timer moves it to half-open with no call (circuit.js:315-348)",
		steps: []string{"fail", "wait 9999ms", "wait 1ms"},
		state: StateHalfOpen, moves: "closed>open open>half_open", errs: "fail",
		counts: Counts{Fires: 1, Failures: 1},
	}, {
		name:  "half-open lets the first call in; the rest are rejected while it runs (circuit.js:711-724)",
		steps: []string{"fail", "wait 10s", "slow", "ok", "ok"},
		state: StateHalfOpen, moves: "closed>open open>half_open", errs: "fail busy busy",
		counts: Counts{Fires: 4, Failures: 1, Rejects: 2},
	}, {
		name:  "below VolumeThreshold fires a failure never opens it from closed (circuit.js:992)",
		tweak: func(s *Settings) { s.VolumeThreshold = 100 },
		steps: []string{"slow", "wait 10s", "slow fail"}, // no volume: it never opens from closed
		state: StateClosed, errs: "",
		counts: Counts{Fires: 1, Failures: 1},
	}, {
		name:  "from half-open any failure reopens it, volume or not (circuit.js:992-996)",
		tweak: func(s *Settings) { s.VolumeThreshold = 2 },
		steps: []string{"fail", "fail", "wait 10s", "fail", "wait 10s", "ok"},
		state: StateClosed, moves: "closed>open open>half_open half_open>open open>half_open half_open>closed",
		errs: "fail fail fail ok", counts: Counts{Fires: 4, Successes: 1, Failures: 3},
	}, {
		name:  "closing keeps the window: the next failure reopens it at once (status.js:182 only marks the bucket)",
		tweak: func(s *Settings) { s.VolumeThreshold = 5; s.RollingWindow = time.Minute },
		steps: []string{"fail", "fail", "fail", "fail", "fail", "wait 10s", "ok", "fail"},
		state: StateOpen, moves: "closed>open open>half_open half_open>closed closed>open",
		errs: "fail fail fail fail fail ok fail", counts: Counts{Fires: 7, Successes: 1, Failures: 6},
	}, {
		name: "fast fails stay in the window and dilute the failure rate after it closes (failures / fires, circuit.js:993)",
		tweak: func(s *Settings) {
			s.ErrorThresholdPercentage = 50
			s.VolumeThreshold = 4
			s.RollingWindow = time.Minute
		},
		steps: []string{"ok", "fail", "fail", "fail", "ok", "ok", "ok", "ok", "ok", "ok", "wait 10s", "ok", "fail"},
		state: StateClosed, moves: "closed>open open>half_open half_open>closed",
		errs:   "ok fail fail fail open open open open open open ok fail", // 4 failed of 12 fires: 33 %
		counts: Counts{Fires: 12, Successes: 2, Failures: 4, Rejects: 6},
	}, {
		name:  "any success while half-open closes it, even one that started before it opened (circuit.js:349-353)",
		steps: []string{"slow", "fail", "wait 10s", "slow", "slow ok"},
		state: StateClosed, moves: "closed>open open>half_open half_open>closed", errs: "fail",
		counts: Counts{Fires: 3, Successes: 1, Failures: 1},
	}, {
		name:  "gobreaker's way (IgnoreStaleOutcomes): that stale success is ignored; the trial decides",
		tweak: func(s *Settings) { s.IgnoreStaleOutcomes = true },
		steps: []string{"slow", "fail", "wait 10s", "slow", "slow ok", "slow fail"},
		state: StateOpen, moves: "closed>open open>half_open half_open>open", errs: "fail",
		counts: Counts{Fires: 3, Failures: 2},
	}, {
		name:  "opossum counts a stale failure that arrives while closed",
		steps: []string{"slow", "ok", "ok", "ok", "ok", "slow fail"},
		state: StateClosed, errs: "ok ok ok ok", // 1 of 5: 20 %
		counts: Counts{Fires: 5, Successes: 4, Failures: 1},
	}, {
		name:  "the window forgets whole buckets: 10 s later the old failures are gone",
		tweak: func(s *Settings) { s.VolumeThreshold = 5; s.RollingWindow = 10 * time.Second },
		steps: []string{"fail", "fail", "fail", "fail", "wait 10s", "ok", "ok", "ok", "ok", "fail"},
		state: StateClosed, errs: "fail fail fail fail ok ok ok ok fail", // 1 of 5 in the window
		counts: Counts{Fires: 5, Successes: 4, Failures: 1},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := newScript(t, tt.tweak).run(tt.steps...)
			assert.Equal(t, tt.state, sc.b.State(), "state")
			assert.Equal(t, tt.moves, strings.Join(sc.moves, " "), "transitions")
			assert.Equal(t, tt.errs, strings.Join(sc.errs, " "), "what each call returned")
			assert.Equal(t, tt.counts, sc.b.Counts(), "the rolling window")
		})
	}
}

// TestResetTimerOnlyWhileOpen: the timer is armed while open and stopped
// on any other way out; Close stops it too, so nothing outlives the
// breaker, and afterwards Execute refuses (opossum's shutdown).
func TestResetTimerOnlyWhileOpen(t *testing.T) {
	sc := newScript(t, nil).run("fail")
	assert.Equal(t, 1, sc.clock.pending(), "open: the reset timer is armed")
	sc.run("wait 10s")
	assert.Zero(t, sc.clock.pending(), "half-open: no timer")
	sc.run("fail")
	assert.Equal(t, 1, sc.clock.pending(), "open again: a new timer")
	sc.b.Close()
	assert.Zero(t, sc.clock.pending(), "Close stops the timer")
	sc.run("wait 1m")
	assert.Equal(t, StateOpen, sc.b.State(), "a shut breaker stays as it was")
	assert.ErrorIs(t, sc.b.Execute(context.Background(), ok), ErrShutdown)
}

// TestDueTimerAndCallAtTheSameInstant: a call at the very instant the
// reset timer is due is the trial, whether or not the timer ran first.
func TestDueTimerAndCallAtTheSameInstant(t *testing.T) {
	sc := newScript(t, nil).run("fail")
	sc.clock.now = sc.clock.now.Add(10 * time.Second) // time moves, the timer has not run
	assert.NoError(t, sc.b.Execute(context.Background(), ok))
	assert.Equal(t, "closed>open open>half_open half_open>closed", strings.Join(sc.moves, " "))
	sc.run("wait 0s") // the timer comes late and finds nothing to do
	assert.Equal(t, StateClosed, sc.b.State())
	assert.Len(t, sc.moves, 3)
}

// TestTimeoutRejectsAtTheDeadline: at Timeout Execute returns ErrTimeout
// and counts a failure without waiting for the call (circuit.js:733-754);
// what the call returns later is ignored (circuit.js:764,787).
func TestTimeoutRejectsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := seedSettings(realClock{})
		s.ErrorThresholdPercentage = 100 // never opens: both timeouts count
		s.RollingWindow = time.Minute
		b := New(s)
		stubborn := func(context.Context) error { time.Sleep(10 * time.Second); return nil }
		start := time.Now()
		err := b.Execute(context.Background(), stubborn)
		assert.ErrorIs(t, err, ErrTimeout)
		assert.Equal(t, 3*time.Second, time.Since(start), "returned at the deadline, not when the call ended")

		cancelled := make(chan error, 1)
		honours := func(ctx context.Context) error { <-ctx.Done(); cancelled <- ctx.Err(); return ctx.Err() }
		assert.ErrorIs(t, b.Execute(context.Background(), honours), ErrTimeout)
		assert.ErrorIs(t, <-cancelled, context.Canceled, "the call's context is cancelled at the deadline")
		assert.Equal(t, Counts{Fires: 2, Failures: 2, Timeouts: 2}, b.Counts())

		time.Sleep(10 * time.Second) // the stubborn call finishes: its success is not counted
		assert.Equal(t, Counts{Fires: 2, Failures: 2, Timeouts: 2}, b.Counts())
	})
}

// TestTimeoutOpensIt: the seed's breaker with a hanging service: one
// timeout is a 100 % failure rate and opens it 3 s after the call.
func TestTimeoutOpensIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m moves
		s := seedSettings(realClock{})
		s.OnStateChange = m.record
		b := New(s)
		defer b.Close()
		hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
		assert.ErrorIs(t, b.Execute(context.Background(), hang), ErrTimeout)
		assert.Equal(t, []string{"open"}, m.list())
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.Equal(t, []string{"open", "half_open"}, m.list(), "the timer, in fake time")
	})
}

func TestTimeoutRunsInClockTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(seedSettings(LessonClock(lab.NewClock(100))))
		defer b.Close()
		start := time.Now()
		err := b.Execute(context.Background(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		assert.ErrorIs(t, err, ErrTimeout)
		assert.Equal(t, 30*time.Millisecond, time.Since(start), "3 s of lesson time at speed 100")
	})
}

func TestCallerCancelIsNotATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(seedSettings(realClock{}))
		defer b.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := b.Execute(ctx, func(ctx context.Context) error { return ctx.Err() })
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, ErrTimeout)
	})
}

// TestPanicIsAFailureAndPanicsAgain: a panicking call counts as a failure
// and Execute panics again with the same value (gobreaker's contract), so
// a panicking trial reopens the breaker instead of leaving it half-open
// for good. Both ways a call runs: on the caller's goroutine (no timeout)
// and on its own (with a timeout).
func TestPanicIsAFailureAndPanicsAgain(t *testing.T) {
	boom := func(context.Context) error { panic("boom") }
	for _, timeout := range []time.Duration{-1, 3 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			clock := newManualClock()
			s := seedSettings(clock)
			s.Timeout = timeout
			s.RollingWindow = time.Minute
			b := New(s)
			require.ErrorIs(t, b.Execute(context.Background(), fail), errDown)
			clock.advance(10 * time.Second)
			require.Equal(t, StateHalfOpen, b.State())

			assert.PanicsWithValue(t, "boom", func() { _ = b.Execute(context.Background(), boom) }, "timeout %v", timeout)
			assert.Equal(t, StateOpen, b.State(), "the panicking trial reopened it (timeout %v)", timeout)
			assert.Equal(t, Counts{Fires: 2, Failures: 2}, b.Counts())
			clock.advance(10 * time.Second)
			assert.NoError(t, b.Execute(context.Background(), ok), "a later trial still runs")
			assert.Equal(t, StateClosed, b.State())
		})
	}
}

// TestNoGoroutineOutlivesACall: with a timeout each call runs on its own
// goroutine; one that honours its context is gone once Execute returns
// (and synctest.Test would fail on one left blocked).
func TestNoGoroutineOutlivesACall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(seedSettings(realClock{}))
		before := bubbleGoroutines(t)
		_ = b.Execute(context.Background(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		_ = b.Execute(context.Background(), ok)
		synctest.Wait()
		assert.Equal(t, before, bubbleGoroutines(t))
		b.Close()
	})
}

// TestProperties drives breakers with random interleavings of call starts,
// call ends (ok or failed) and clock steps, and checks the invariants
// against a separate model of the rolling window (fires and failures):
//   - in half-open at most one call is let in;
//   - after a failure ends while closed, it is open exactly when the
//     window holds VolumeThreshold fires and more than the threshold
//     share of them failed.
func TestProperties(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		clock := newManualClock()
		s := seedSettings(clock)
		s.Timeout = -1
		s.VolumeThreshold = rng.IntN(8)
		s.ErrorThresholdPercentage = float64(5 + rng.IntN(60))
		b := New(s)
		model := window{epoch: clock.now}
		var inFlight []uint64
		trials := map[uint64]int{} // calls let in per half-open generation
		for range 400 {
			switch op := rng.IntN(10); {
			case op < 4: // start a call
				halfOpen := b.State() == StateHalfOpen
				model.add(clock.now, false, true)
				gen, err := b.before(context.Background())
				if err != nil {
					continue
				}
				inFlight = append(inFlight, gen)
				if halfOpen {
					trials[gen]++
					require.LessOrEqual(t, trials[gen], 1, "seed %d: two trial calls in half-open", seed)
				}
			case op < 8 && len(inFlight) > 0: // end a call
				i := rng.IntN(len(inFlight))
				gen := inFlight[i]
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
				failed := rng.IntN(2) == 0
				var out outcome
				if failed {
					out.err = errDown
				}
				wasClosed := b.State() == StateClosed
				model.add(clock.now, failed, false)
				b.after(context.Background(), gen, out)
				if wasClosed && failed {
					m := model.counts(clock.now)
					want := m.fires >= s.VolumeThreshold && float64(m.failures)*100 > s.ErrorThresholdPercentage*float64(m.fires)
					require.Equal(t, want, b.State() == StateOpen, "seed %d: window %+v", seed, m)
				}
			default: // let time pass
				clock.advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
			}
		}
	}
}

// window is the test's own model of the rolling window: every fire and
// failure with its time; one counts while its 1 s slot is among the last
// ten.
type window struct {
	epoch  time.Time
	events []struct {
		at           time.Time
		failed, fire bool
	}
}

func (w *window) add(now time.Time, failed, fire bool) {
	w.events = append(w.events, struct {
		at           time.Time
		failed, fire bool
	}{now, failed, fire})
}

func (w *window) counts(now time.Time) (c struct{ fires, failures int }) {
	slot := func(t time.Time) int64 { return int64(t.Sub(w.epoch) / time.Second) }
	for _, e := range w.events {
		if slot(now)-slot(e.at) < 10 {
			if e.fire {
				c.fires++
			}
			if e.failed {
				c.failures++
			}
		}
	}
	return c
}

func BenchmarkExecuteClosed(b *testing.B) {
	for _, bc := range []struct {
		name    string
		timeout time.Duration
	}{{"no-timeout", -1}, {"timeout-3s", 3 * time.Second}} {
		b.Run(bc.name, func(b *testing.B) {
			s := seedSettings(realClock{})
			s.Timeout = bc.timeout
			br := New(s)
			defer br.Close()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := br.Execute(ctx, ok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLessonClock: with a lesson clock at speed 100 the 10 s reset timeout
// passes in 100 ms of real time, and the timer fires then.
func TestLessonClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m moves
		s := seedSettings(LessonClock(lab.NewClock(100)))
		s.OnStateChange = m.record
		b := New(s)
		_ = b.Execute(context.Background(), fail)
		time.Sleep(99 * time.Millisecond) // 9.9 s of lesson time
		assert.Equal(t, []string{"open"}, m.list())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []string{"open", "half_open"}, m.list(), "the timer moved it, no call did")
	})
}

// bubbleHeader finds the bubble in a goroutine's traceback header
// ("goroutine 7 [running, synctest bubble 3]:").
var bubbleHeader = regexp.MustCompile(`^goroutine \d+ \[.*, synctest bubble (\d+)[\] ]`)

// bubbleGoroutines counts the goroutines of the caller's synctest bubble,
// as their tracebacks mark them. runtime.NumGoroutine counts the whole
// process, where another test's goroutine may end meanwhile: it once read
// 5 then 4 on a loaded machine.
func bubbleGoroutines(t *testing.T) int {
	t.Helper()
	self := make([]byte, 1024)
	self = self[:runtime.Stack(self, false)]
	m := bubbleHeader.FindSubmatch(self)
	require.NotNil(t, m, "not in a synctest bubble: %s", self)
	all := make([]byte, 1<<20)
	all = all[:runtime.Stack(all, true)]
	n := 0
	for _, line := range strings.Split(string(all), "\n") {
		if g := bubbleHeader.FindStringSubmatch(line); g != nil && g[1] == string(m[1]) {
			n++
		}
	}
	return n
}
