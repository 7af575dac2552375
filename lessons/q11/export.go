package q11

import (
	"context"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
)

// What qlab serve needs to publish a scheduled mail the way strategy (c)
// does on the broker: the lesson's topology, its names, its parsing of
// scheduledTime, its choice of the first hop and its message. The lesson
// itself uses the same functions, so the two cannot drift apart.

// Broker names of the lesson, as seed names (a run adds its prefix).
const (
	MailQueue   = q11MailQueue   // where a mail that is due waits for the mail worker
	RouterQueue = q11RouterQueue // where every level wait queue dead-letters to
	DueHeader   = q11DueHeader   // the header a mail's scheduledTime travels in
)

// Mail is one schedule-email request as the seed's API takes it, and the
// JSON body of the message that carries it (the mail worker decodes it).
type Mail = q11Request

// Topology is the lesson's topology: mail.queue, the per-message-TTL
// delay queue, the router's queue and the fixed-TTL level wait queues.
func Topology() rabbit.Topology { return q11Topology() }

// ParseScheduledTime validates an ISO-8601 scheduledTime against now and
// returns the due time and the delay until then (0 once it is due). A time
// without a zone is read in now's location.
func ParseScheduledTime(s string, now time.Time) (due time.Time, delay time.Duration, err error) {
	return parseScheduledTime(s, now)
}

// FirstHop is the seed name of the queue a mail due in delay is published
// to first: the longest level wait queue that fits the delay (wait is
// true), or MailQueue when the mail is due now.
func FirstHop(delay time.Duration) (queue string, wait bool) {
	if level, ok := nextLevel(delay); ok {
		return levelQueue(level), true
	}
	return q11MailQueue, false
}

// MailPublishing is the message that carries a mail's body on any hop:
// the lab's persistent JSON message with the mail's scheduledTime in
// DueHeader, so the router needs no state of its own.
func MailPublishing(task string, body []byte, scheduledTime string) amqp.Publishing {
	msg := rabbit.Publishing(task, body)
	msg.Headers = amqp.Table{q11DueHeader: scheduledTime}
	return msg
}

// Service is strategy (c) running for mails that arrive from outside the
// lesson (qlab serve): the router that moves each mail from mail.router
// to its next level, or to mail.queue once due, and the mail worker that
// sends it with the mock mailer. Each runs on a connection of its own.
type Service struct {
	worker *rabbit.Session
	router *levelScheduler
}

// StartService starts the router and the mail worker on siblings of s,
// whose names must have Topology declared, reporting to stream (whose
// clock must run at speed 1: scheduledTime is calendar time). Both run
// until ctx ends or Stop, which deletes nothing.
func StartService(ctx context.Context, s *rabbit.Session, stream *lab.Stream) (*Service, error) {
	worker, err := s.Sibling(ctx)
	if err != nil {
		return nil, err
	}
	l := &q11Lesson{env: &lesson.Env{Stream: stream}, s: worker, cal: newCalendar(stream.Clock()), book: &mailBook{}}
	if err := l.startWorker(ctx); err != nil {
		_ = worker.Close(ctx)
		return nil, err
	}
	router, err := l.startLevelScheduler(ctx, 1)
	if err != nil {
		_ = worker.Close(ctx)
		return nil, err
	}
	return &Service{worker: worker, router: router}, nil
}

// Stop closes the router's and the worker's connections: a mail either
// holds unacknowledged goes back to its queue.
func (sv *Service) Stop(ctx context.Context) {
	sv.router.stop(ctx)
	_ = sv.worker.Close(ctx) // it declared nothing: this only stops the worker and closes the connection
}
