// Package mail is the scheduled-mail service of seed 001, built the way
// lesson Q11's strategy (c) builds it on the broker: wait queues with one
// fixed TTL each, which all dead-letter into a router's queue, and a
// router that keeps no state. Each mail carries its due time in a header;
// the router sends it on to the next wait queue, or to the mail queue
// once it is due, where the mail worker sends it.
//
//	publish ─→ mail.wait.8s … mail.wait.125ms ─expire→ mail.router
//	mail.router ─router→ next wait queue, or mail.queue once due
//	mail.queue ─worker→ the mock mailer
//
// Q11 runs it beside two other designs, and qlab serve runs it for mails
// that arrive over HTTP. The names are the seed's; a run adds its prefix.
package mail

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
)

// The service's broker names, as seed names.
const (
	MailQueue   = "mail.queue"  // where a mail that is due waits for the mail worker
	RouterQueue = "mail.router" // where every wait queue dead-letters to
	// DueHeader carries a mail's scheduledTime through its hops, so the
	// router keeps no state of its own. It is the lab's header, so no "x-"
	// prefix: RabbitMQ treats x- headers as its own (Q13, and 4.0 stopped
	// reading an x-death a client publishes), as qlab-retries does too.
	DueHeader = "qlab-scheduled-time"
)

// Mail is one schedule-email request as the seed's API takes it, and the
// JSON body of the message that carries it (the mail worker decodes it).
type Mail struct {
	Task          string `json:"task"`
	To            string `json:"to"`
	Subject       string `json:"subject"`
	ScheduledTime string `json:"scheduledTime"` // ISO-8601
}

// Body is m as a message body: its JSON.
func (m Mail) Body() []byte {
	b, _ := json.Marshal(m) // four strings always marshal
	return b
}

// Topology is the service's queues: the mail queue, the router's queue,
// and one wait queue per level, each dead-lettering into the router's.
func Topology() flow.Topology {
	qs := []flow.Queue{
		{Name: MailQueue, Role: flow.Work},
		{Name: RouterQueue, Role: flow.Work},
	}
	for _, level := range levels {
		qs = append(qs, flow.Queue{Name: LevelQueue(level), Role: flow.Wait, TTL: level, DeadLetterTo: RouterQueue})
	}
	return flow.Topology{Queues: qs}
}

// ErrScheduledTime marks a scheduledTime that is not an ISO-8601
// date-time.
var ErrScheduledTime = errors.New("not an ISO-8601 date-time")

// scheduledTimeLayouts are the ISO-8601 forms a schedule request may use:
// with a zone (Z or ±hh:mm), or without one as the seed's Java
// LocalDateTime prints it (then it is local time). Fractional seconds are
// accepted in both.
var scheduledTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05"}

// ParseScheduledTime validates a request's scheduledTime against now: it
// returns the due time and the delay until then, which is 0 for a time in
// the past (the mail goes out at once). A time without a zone is read in
// now's location. Anything else is an error wrapping ErrScheduledTime that
// says what was expected.
func ParseScheduledTime(s string, now time.Time) (due time.Time, delay time.Duration, err error) {
	for _, layout := range scheduledTimeLayouts {
		due, err = time.ParseInLocation(layout, s, now.Location())
		if err == nil {
			return due, max(0, due.Sub(now)), nil
		}
	}
	return time.Time{}, 0, fmt.Errorf("scheduledTime %q: %w: want e.g. 2026-02-08T11:39:51Z, "+
		"2026-02-08T11:39:51+02:00 or 2026-02-08T11:39:51 (local time)", s, ErrScheduledTime)
}

// Decode reads a mail from a message body: a JSON object with a recipient
// and a scheduledTime. Anything else is a one-line error saying what is
// missing, and the worker holds the message instead of sending it.
func Decode(body []byte) (Mail, error) {
	var m Mail
	if err := json.Unmarshal(body, &m); err != nil {
		return Mail{}, fmt.Errorf("not a mail request: %w", err)
	}
	switch {
	case strings.TrimSpace(m.To) == "":
		return Mail{}, errors.New("a mail request with no recipient (to)")
	case m.ScheduledTime == "":
		return Mail{}, errors.New("a mail request with no scheduledTime")
	}
	return m, nil
}

// ISOMillis is how the service writes times: ISO-8601 (RFC 3339) to the
// millisecond, so a student can compare them at a glance.
const ISOMillis = "2006-01-02T15:04:05.000Z07:00"

// Calendar turns lesson time into calendar time: the wall-clock instant
// the lesson clock started, plus lesson time elapsed. At --speed 1 it is
// the wall clock; at --speed 20 it runs twenty times faster, so a mail
// "due in 5 s" has a real-looking scheduledTime at any speed.
type Calendar struct {
	start time.Time // wall-clock time at lesson time 0
	clock lab.Clock
}

// NewCalendar anchors a calendar to clock's start.
func NewCalendar(clock lab.Clock) Calendar {
	return Calendar{start: time.Now().UTC().Add(-clock.Real(clock.Elapsed())), clock: clock}
}

// Now is the calendar time at the current lesson time.
func (c Calendar) Now() time.Time { return c.At(c.clock.Elapsed()) }

// At is the calendar time at lesson time t.
func (c Calendar) At(t time.Duration) time.Time { return c.start.Add(t) }

// Offset is the lesson time at which calendar time at falls.
func (c Calendar) Offset(at time.Time) time.Duration { return at.Sub(c.start) }

// levels are the fixed delays, longest first, each a wait queue of its
// own with a queue-level x-message-ttl. Powers of two from 125 ms compose
// any delay to within half the shortest level; a delay longer than the
// longest level takes several hops of it.
var levels = []time.Duration{
	8 * time.Second, 4 * time.Second, 2 * time.Second, time.Second,
	500 * time.Millisecond, 250 * time.Millisecond, 125 * time.Millisecond,
}

// Levels are the wait queues' delays, longest first (a copy).
func Levels() []time.Duration { return append([]time.Duration(nil), levels...) }

// NextLevel picks the wait for a mail due in remaining: the longest level
// that does not overshoot the due time by more than half the shortest
// level. ok is false when the mail is due now (less than half the
// shortest level away, or overdue) and goes to the mail queue.
func NextLevel(remaining time.Duration) (level time.Duration, ok bool) {
	slack := levels[len(levels)-1] / 2
	for _, l := range levels {
		if l <= remaining+slack {
			return l, true
		}
	}
	return 0, false
}

// LevelQueue is the seed name of the wait queue for a level:
// mail.wait.4s.
func LevelQueue(level time.Duration) string {
	return "mail.wait." + strings.ReplaceAll(level.String(), ".", "_")
}

// FirstHop is the seed name of the queue a mail due in delay is published
// to first: the longest wait queue that fits the delay (wait is true), or
// MailQueue when the mail is due now.
func FirstHop(delay time.Duration) (queue string, wait bool) {
	if level, ok := NextLevel(delay); ok {
		return LevelQueue(level), true
	}
	return MailQueue, false
}

// Publishing is the message that carries a mail's body on any hop: the
// lab's persistent JSON message with the mail's scheduledTime in
// DueHeader, so the router needs no state of its own.
func Publishing(task string, body []byte, scheduledTime string) amqp.Publishing {
	msg := rabbit.Publishing(task, body)
	msg.Headers = amqp.Table{DueHeader: scheduledTime}
	return msg
}
