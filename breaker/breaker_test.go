package breaker

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queuelab/qlab/lab"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manualClock is a Clock a test moves by hand.
type manualClock struct{ now time.Time }

func newManualClock() *manualClock                      { return &manualClock{now: lessonEpoch} }
func (c *manualClock) Now() time.Time                   { return c.now }
func (*manualClock) Real(d time.Duration) time.Duration { return d }
func (c *manualClock) advance(d time.Duration)          { c.now = c.now.Add(d) }

var errDown = errors.New("mail service down")

// seedSettings are seed 000's values, with the window made explicit.
func seedSettings(c Clock) Settings {
	return Settings{
		Timeout:                  3 * time.Second,
		ErrorThresholdPercentage: 20,
		ResetTimeout:             10 * time.Second,
		RollingWindow:            10 * time.Second,
		Buckets:                  10,
		VolumeThreshold:          5,
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

func TestDefaults(t *testing.T) {
	s := New(Settings{}).Settings()
	assert.Equal(t, 10*time.Second, s.Timeout)
	assert.Equal(t, 50.0, s.ErrorThresholdPercentage)
	assert.Equal(t, 0, s.VolumeThreshold)
	assert.Equal(t, 30*time.Second, s.ResetTimeout)
	assert.Equal(t, 10*time.Second, s.RollingWindow)
	assert.Equal(t, 10, s.Buckets)
	assert.Equal(t, realClock{}, s.Clock)
}

// step is one line of a transition table: move the clock, make a call
// (ok or failing), and what Execute must return and the state after.
type step struct {
	wait      time.Duration
	fails     bool
	wantErr   error // nil, errDown, ErrOpen, ErrTooManyRequests
	wantState State
}

func TestTransitions(t *testing.T) {
	okStep := step{wantErr: nil, wantState: StateClosed}
	failClosed := step{fails: true, wantErr: errDown, wantState: StateClosed}
	tests := []struct {
		name  string
		steps []step
		want  []string // transitions reported, "from>to"
	}{
		{"successes keep it closed", []step{okStep, okStep, okStep}, nil},
		{"below the volume it never opens", []step{failClosed, failClosed, failClosed, failClosed}, nil},
		{"20% is not above the threshold", []step{okStep, okStep, okStep, okStep, failClosed}, nil},
		{"above 20% with volume it opens", []step{
			okStep, okStep, okStep, failClosed,
			{fails: true, wantErr: errDown, wantState: StateOpen}, // 2 of 5 = 40%
			{wantErr: ErrOpen, wantState: StateOpen},
		}, []string{"closed>open"}},
		{"a success never trips it", []step{
			failClosed, failClosed, failClosed, failClosed,
			okStep, // 4 of 5 failed, but only a failure may trip
			{fails: true, wantErr: errDown, wantState: StateOpen},
		}, []string{"closed>open"}},
		{"old outcomes leave the window", []step{
			failClosed, failClosed, failClosed, failClosed,
			{wait: 10 * time.Second, wantState: StateClosed},
			okStep, okStep, okStep,
			{fails: true, wantErr: errDown, wantState: StateClosed}, // 1 of 5 = 20%
		}, nil},
		{"reset timeout lets one trial through: success closes", []step{
			failClosed, failClosed, failClosed, failClosed,
			{fails: true, wantErr: errDown, wantState: StateOpen},
			{wait: 9999 * time.Millisecond, wantErr: ErrOpen, wantState: StateOpen},
			{wait: time.Millisecond, wantState: StateClosed},
			okStep,
		}, []string{"closed>open", "open>half_open", "half_open>closed"}},
		{"failed trial opens it for another reset timeout", []step{
			failClosed, failClosed, failClosed, failClosed,
			{fails: true, wantErr: errDown, wantState: StateOpen},
			{wait: 10 * time.Second, fails: true, wantErr: errDown, wantState: StateOpen},
			{wait: 9 * time.Second, wantErr: ErrOpen, wantState: StateOpen},
			{wait: time.Second, wantState: StateClosed},
		}, []string{"closed>open", "open>half_open", "half_open>open", "open>half_open", "half_open>closed"}},
		{"closing forgets the old failures", []step{
			failClosed, failClosed, failClosed, failClosed,
			{fails: true, wantErr: errDown, wantState: StateOpen},
			{wait: 10 * time.Second, wantState: StateClosed},
			failClosed, failClosed, failClosed, failClosed, // volume not reached again yet
		}, []string{"closed>open", "open>half_open", "half_open>closed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newManualClock()
			var got []string
			s := seedSettings(clock)
			s.OnStateChange = func(_ context.Context, from, to State) { got = append(got, from.String()+">"+to.String()) }
			b := New(s)
			for i, st := range tt.steps {
				clock.advance(st.wait)
				fn := ok
				if st.fails {
					fn = fail
				}
				err := b.Execute(context.Background(), fn)
				if st.wantErr == nil {
					assert.NoError(t, err, "step %d", i)
				} else {
					assert.ErrorIs(t, err, st.wantErr, "step %d", i)
				}
				assert.Equal(t, st.wantState, b.State(), "state after step %d", i)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestHalfOpenAdmitsOneTrial(t *testing.T) {
	clock := newManualClock()
	b := New(seedSettings(clock))
	for range 5 {
		_ = b.Execute(context.Background(), fail)
	}
	require.Equal(t, StateOpen, b.State())
	clock.advance(10 * time.Second)

	gen, err := b.before(context.Background()) // the trial starts…
	require.NoError(t, err)
	assert.ErrorIs(t, b.Execute(context.Background(), ok), ErrTooManyRequests, "…so a second call must wait")
	b.after(context.Background(), gen, nil)
	assert.Equal(t, StateClosed, b.State())
}

func TestStaleOutcomeIsIgnored(t *testing.T) {
	clock := newManualClock()
	b := New(seedSettings(clock))
	slow, err := b.before(context.Background()) // a slow call starts while closed
	require.NoError(t, err)
	for range 5 {
		_ = b.Execute(context.Background(), fail)
	}
	clock.advance(10 * time.Second)
	require.NoError(t, b.Execute(context.Background(), ok), "the trial closes it again")
	require.Equal(t, StateClosed, b.State())

	b.after(context.Background(), slow, errDown) // the slow call finally fails
	assert.Equal(t, Counts{}, b.Counts(), "an outcome from an older generation must not count")
}

func TestTimeoutCountsAsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := seedSettings(realClock{})
		s.VolumeThreshold = 0
		s.ErrorThresholdPercentage = 100 // never opens: the two timeouts both count
		b := New(s)
		hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
		start := time.Now()
		err := b.Execute(context.Background(), hang)
		assert.ErrorIs(t, err, ErrTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3*time.Second, time.Since(start), "the call is cut at Timeout")

		stubborn := func(context.Context) error { time.Sleep(4 * time.Second); return nil }
		assert.ErrorIs(t, b.Execute(context.Background(), stubborn), ErrTimeout, "a call that ignores its context still times out")
		assert.Equal(t, Counts{Failures: 2}, b.Counts())
	})
}

func TestTimeoutRunsInClockTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := seedSettings(scaled{speed: 100})
		b := New(s)
		start := time.Now()
		err := b.Execute(context.Background(), func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
		assert.ErrorIs(t, err, ErrTimeout)
		assert.Equal(t, 30*time.Millisecond, time.Since(start), "3 s of clock time at speed 100")
	})
}

// scaled is a Clock running speed times faster than real time.
type scaled struct{ speed float64 }

func (s scaled) Now() time.Time                     { return time.Now() }
func (s scaled) Real(d time.Duration) time.Duration { return time.Duration(float64(d) / s.speed) }

func TestCallerCancelIsNotATimeout(t *testing.T) {
	b := New(seedSettings(newManualClock()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := b.Execute(ctx, func(ctx context.Context) error { return ctx.Err() })
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ErrTimeout)
}

// TestProperties drives breakers with random interleavings of call starts,
// call ends (ok or failed) and clock steps, and checks the invariants
// against a separate model of the rolling window:
//   - in half-open at most one admitted call is in flight;
//   - the breaker never opens from closed below VolumeThreshold;
//   - after a failure ends in closed, it is open exactly when the window's
//     failure share is above the threshold (with the volume reached).
func TestProperties(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		clock := newManualClock()
		s := seedSettings(clock)
		s.VolumeThreshold = rng.IntN(8)
		s.ErrorThresholdPercentage = float64(5 + rng.IntN(60))
		var model window
		s.OnStateChange = func(_ context.Context, from, to State) {
			if from == StateClosed && to == StateOpen {
				c := model.counts(clock.now)
				require.GreaterOrEqual(t, c.Total(), s.VolumeThreshold, "seed %d: opened below the volume", seed)
			}
			if to == StateClosed {
				model.at, model.ok = nil, nil
			}
		}
		b := New(s)
		model.epoch = clock.now

		type call struct {
			gen   uint64
			state State
		}
		var inFlight []call
		for range 400 {
			switch op := rng.IntN(10); {
			case op < 4: // start a call
				before := b.State()
				gen, err := b.before(context.Background())
				if err == nil {
					inFlight = append(inFlight, call{gen, before})
				}
				if before == StateHalfOpen {
					trials := 0
					for _, c := range inFlight {
						if c.gen == gen && c.state == StateHalfOpen {
							trials++
						}
					}
					require.LessOrEqual(t, trials, 1, "seed %d: two trial calls in half-open", seed)
				}
			case op < 8 && len(inFlight) > 0: // end a call
				i := rng.IntN(len(inFlight))
				c := inFlight[i]
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
				failed := rng.IntN(2) == 0
				current := b.generation == c.gen && b.state == StateClosed
				var err error
				if failed {
					err = errDown
				}
				if current {
					model.add(clock.now, !failed)
				}
				b.after(context.Background(), c.gen, err)
				if current && failed {
					m := model.counts(clock.now)
					want := m.Total() >= s.VolumeThreshold && m.Total() > 0 &&
						float64(m.Failures)*100 > s.ErrorThresholdPercentage*float64(m.Total())
					require.Equal(t, want, b.state == StateOpen, "seed %d: window %+v", seed, m)
				}
				if current && !failed {
					require.Equal(t, StateClosed, b.state, "seed %d: a success opened it", seed)
				}
			default: // let time pass
				clock.advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
			}
		}
	}
}

// window is the test's own model of the rolling window: every outcome
// with its time; one counts while its 1 s slot is among the last ten.
type window struct {
	epoch time.Time
	at    []time.Time
	ok    []bool
}

func (w *window) add(now time.Time, ok bool) { w.at = append(w.at, now); w.ok = append(w.ok, ok) }

func (w *window) counts(now time.Time) Counts {
	var c Counts
	slot := func(t time.Time) int64 { return int64(t.Sub(w.epoch) / time.Second) }
	for i, at := range w.at {
		if slot(now)-slot(at) < 10 {
			if w.ok[i] {
				c.Successes++
			} else {
				c.Failures++
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
// passes in 100 ms of real time.
func TestLessonClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(seedSettings(LessonClock(lab.NewClock(100))))
		for range 5 {
			_ = b.Execute(context.Background(), fail)
		}
		require.Equal(t, StateOpen, b.State())
		time.Sleep(99 * time.Millisecond) // 9.9 s of lesson time
		assert.Equal(t, StateOpen, b.State())
		time.Sleep(time.Millisecond)
		assert.Equal(t, StateHalfOpen, b.State())
	})
}
