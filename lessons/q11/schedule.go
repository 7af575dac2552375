package q11

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuelab/qlab/lab"
)

// errScheduledTime marks a scheduledTime that is not an ISO-8601 date-time.
var errScheduledTime = errors.New("not an ISO-8601 date-time")

// scheduledTimeLayouts are the ISO-8601 forms a schedule request may use:
// with a zone (Z or ±hh:mm), or without one as the seed's Java
// LocalDateTime prints it (then it is local time). Fractional seconds are
// accepted in both.
var scheduledTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05"}

// parseScheduledTime validates a request's scheduledTime against now: it
// returns the due time and the delay until then, which is 0 for a time in
// the past (the mail goes out at once). A time without a zone is read in
// now's location. Anything else is an error saying what was expected.
func parseScheduledTime(s string, now time.Time) (due time.Time, delay time.Duration, err error) {
	for _, layout := range scheduledTimeLayouts {
		due, err = time.ParseInLocation(layout, s, now.Location())
		if err == nil {
			return due, max(0, due.Sub(now)), nil
		}
	}
	return time.Time{}, 0, fmt.Errorf("scheduledTime %q: %w: want e.g. 2026-02-08T11:39:51Z, "+
		"2026-02-08T11:39:51+02:00 or 2026-02-08T11:39:51 (local time)", s, errScheduledTime)
}

// decodeMail reads a mail request from a message body: a JSON object with
// a recipient and a scheduledTime. Anything else is an error saying what
// is missing, and the worker parks the message instead of sending it.
func decodeMail(body []byte) (q11Request, error) {
	var req q11Request
	if err := json.Unmarshal(body, &req); err != nil {
		return q11Request{}, fmt.Errorf("not a mail request: %w", err)
	}
	switch {
	case strings.TrimSpace(req.To) == "":
		return q11Request{}, errors.New("a mail request with no recipient (to)")
	case req.ScheduledTime == "":
		return q11Request{}, errors.New("a mail request with no scheduledTime")
	}
	return req, nil
}

// isoMillis is how the lesson writes times: ISO-8601 (RFC 3339) to the
// millisecond, so a student can compare them at a glance.
const isoMillis = "2006-01-02T15:04:05.000Z07:00"

// calendar turns lesson time into calendar time: the wall-clock instant
// the lesson clock started, plus lesson time elapsed. At --speed 1 it is
// the wall clock; at --speed 20 it runs twenty times faster, so a mail
// "due in 5 s" has a real-looking scheduledTime at any speed.
type calendar struct {
	start time.Time // wall-clock time at lesson time 0
	clock lab.Clock
}

// newCalendar anchors a calendar to clock's start.
func newCalendar(clock lab.Clock) calendar {
	return calendar{start: time.Now().UTC().Add(-clock.Real(clock.Elapsed())), clock: clock}
}

// Now is the calendar time at the current lesson time.
func (c calendar) Now() time.Time { return c.At(c.clock.Elapsed()) }

// At is the calendar time at lesson time t.
func (c calendar) At(t time.Duration) time.Time { return c.start.Add(t) }

// Offset is the lesson time at which calendar time at falls.
func (c calendar) Offset(at time.Time) time.Duration { return at.Sub(c.start) }

// delayLevels are strategy (c)'s fixed delays, longest first, each a wait
// queue of its own with a queue-level x-message-ttl. Powers of two from
// 125 ms compose any delay to within half the shortest level; a delay
// longer than the longest level takes several hops of it.
var delayLevels = []time.Duration{
	8 * time.Second, 4 * time.Second, 2 * time.Second, time.Second,
	500 * time.Millisecond, 250 * time.Millisecond, 125 * time.Millisecond,
}

// nextLevel picks the wait for a mail due in remaining: the longest level
// that does not overshoot the due time by more than half the shortest
// level. ok is false when the mail is due now (less than half the
// shortest level away, or overdue) and goes to the mail queue.
func nextLevel(remaining time.Duration) (level time.Duration, ok bool) {
	slack := delayLevels[len(delayLevels)-1] / 2
	for _, l := range delayLevels {
		if l <= remaining+slack {
			return l, true
		}
	}
	return 0, false
}

// levelQueue is the seed name of the wait queue for a level: mail.wait.4s.
func levelQueue(level time.Duration) string {
	return "mail.wait." + strings.ReplaceAll(level.String(), ".", "_")
}
