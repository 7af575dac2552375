package mail

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseScheduledTime(t *testing.T) {
	athens := time.FixedZone("EET", 2*60*60)
	now := time.Date(2026, 2, 8, 13, 39, 41, 0, athens) // 11:39:41Z
	at := func(s string) time.Time {
		d, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return d
	}
	valid := []struct {
		in    string
		due   time.Time
		delay time.Duration
	}{
		{"2026-02-08T11:39:51Z", at("2026-02-08T11:39:51Z"), 10 * time.Second},
		{"2026-02-08T13:39:51+02:00", at("2026-02-08T11:39:51Z"), 10 * time.Second},
		{"2026-02-08T06:39:51-05:00", at("2026-02-08T11:39:51Z"), 10 * time.Second},
		{"2026-02-08T11:39:41.250Z", at("2026-02-08T11:39:41.25Z"), 250 * time.Millisecond},
		{"2026-02-08T13:39:51", at("2026-02-08T11:39:51Z"), 10 * time.Second},           // the seed's LocalDateTime: now's zone
		{"2026-02-08T13:39:41.5", at("2026-02-08T11:39:41.5Z"), 500 * time.Millisecond}, // with a fraction
		{"2026-02-08T11:39:41Z", at("2026-02-08T11:39:41Z"), 0},                         // due right now
		{"2026-02-08T11:00:00Z", at("2026-02-08T11:00:00Z"), 0},                         // in the past: send at once
		{"2025-12-31T23:59:59Z", at("2025-12-31T23:59:59Z"), 0},
	}
	for _, c := range valid {
		due, delay, err := ParseScheduledTime(c.in, now)
		require.NoError(t, err, c.in)
		assert.True(t, c.due.Equal(due), "%s: due %v, want %v", c.in, due, c.due)
		assert.Equal(t, c.delay, delay, c.in)
	}
	invalid := []string{
		"", "next tuesday 9am", "2026-02-08", "11:39:51", "2026-02-08 11:39:51",
		"2026-02-30T10:00:00Z", "2026-02-08T25:00:00Z", "2026-02-08T11:39:51 Z", "1707392391",
	}
	for _, in := range invalid {
		_, _, err := ParseScheduledTime(in, now)
		require.Error(t, err, in)
		assert.ErrorIs(t, err, ErrScheduledTime, in)
		assert.Contains(t, err.Error(), `"`+in+`"`, "the error quotes the input")
		assert.Contains(t, err.Error(), "2026-02-08T11:39:51Z", "the error shows a valid example")
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
}

func TestNextLevel(t *testing.T) {
	cases := []struct {
		remaining time.Duration
		level     time.Duration
		ok        bool
	}{
		{20 * time.Second, 8 * time.Second, true},
		{5 * time.Second, 4 * time.Second, true},
		{time.Second, time.Second, true},
		{942 * time.Millisecond, time.Second, true}, // 58 ms late beats 3 more hops
		{900 * time.Millisecond, 500 * time.Millisecond, true},
		{130 * time.Millisecond, 125 * time.Millisecond, true},
		{70 * time.Millisecond, 125 * time.Millisecond, true},
		{62 * time.Millisecond, 0, false}, // closer than half the shortest level: send now
		{0, 0, false},
		{-time.Second, 0, false}, // overdue
	}
	for _, c := range cases {
		level, ok := NextLevel(c.remaining)
		assert.Equal(t, c.ok, ok, "%v", c.remaining)
		assert.Equal(t, c.level, level, "%v", c.remaining)
	}
	assert.Equal(t, "mail.wait.4s", LevelQueue(4*time.Second))
	assert.Equal(t, "mail.wait.125ms", LevelQueue(125*time.Millisecond))
	assert.Equal(t, "mail.wait.1_5s", LevelQueue(1500*time.Millisecond))
}

// TestLevelsComposeAnyDelay hops every delay up to 20 s (in 7 ms steps)
// through the levels as an ideal broker would: each lands within half the
// shortest level of its due time, in few hops.
func TestLevelsComposeAnyDelay(t *testing.T) {
	half := levels[len(levels)-1] / 2
	for d := time.Duration(0); d <= 20*time.Second; d += 7 * time.Millisecond {
		var waited time.Duration
		hops := 0
		for {
			level, ok := NextLevel(d - waited)
			if !ok {
				break
			}
			waited += level
			hops++
			require.LessOrEqual(t, hops, 12, "delay %v", d)
		}
		assert.InDelta(t, float64(d), float64(waited), float64(half), "delay %v waited %v", d, waited)
	}
}
