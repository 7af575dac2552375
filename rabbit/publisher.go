package rabbit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrNacked means the broker refused a published message (a negative
// publisher confirm): it is not stored.
var ErrNacked = errors.New("broker nacked the message")

// Publisher publishes persistent JSON messages on a channel in confirm
// mode, each stamped with the run's id as its AppId (see Names.Run), so the
// run's consumers can tell its messages from foreign ones. When the broker
// closes the channel (a connection closed, a restart) Publish and
// PublishMessage reopen it on the session's live connection and publish
// again until the broker confirms, for at most Session.GiveUpAfter: a
// message whose confirm was lost may then be stored twice (at least once,
// never silently dropped). Safe for concurrent use.
type Publisher struct {
	s     *Session
	names Names
	ch    *amqp.Channel
	mu    sync.Mutex

	// Messages published mandatory that the broker handed back: the
	// current channel's return notifications, and the returns read from it
	// that their publisher has not yet collected. Only code holding retMu
	// reads rets, so a return read by one publish is in returned before
	// any other publish looks there (see wasReturned).
	retMu    sync.Mutex
	rets     chan amqp.Return
	returned []amqp.Return
}

// Publisher opens a confirm-mode channel on the session's connection,
// waiting for a broker that is away (Session.GiveUpAfter at most).
func (s *Session) Publisher(ctx context.Context) (*Publisher, error) {
	var ch *amqp.Channel
	err := s.awaitBroker(ctx, "opening a publisher", func() (err error) {
		ch, err = s.confirmChannel(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	p := &Publisher{s: s, names: s.Names, ch: ch}
	p.listen(ch)
	return p, nil
}

// ErrReturned means the broker handed a mandatory message back
// (basic.return): no queue took it, e.g. its queue was deleted. Without
// mandatory the broker would have confirmed it and dropped it.
var ErrReturned = errors.New("the broker returned the message: no queue took it")

// returnBuffer holds returns between a publish and its collection; only
// mandatory publishes that are waited on produce them, so a few in flight.
const returnBuffer = 64

// listen takes ch's return notifications from now on.
func (p *Publisher) listen(ch *amqp.Channel) {
	p.retMu.Lock()
	defer p.retMu.Unlock()
	p.rets = ch.NotifyReturn(make(chan amqp.Return, returnBuffer))
}

// wasReturned reports whether the broker handed back the message published
// mandatory on this publisher to exchange ("" is the default exchange)
// with routing key key, message id msgID and app id appID, once its
// confirm is in. RabbitMQ sends the basic.return of an unroutable
// mandatory message before its basic.ack, and amqp091-go's one reader
// goroutine puts the return in the notification channel before it
// resolves the confirm, so after the confirm the return is either in that
// channel or already read into returned by another publish.
func (p *Publisher) wasReturned(exchange, key, msgID, appID string) bool {
	p.retMu.Lock()
	defer p.retMu.Unlock()
	for drained := false; !drained; {
		select {
		case r, ok := <-p.rets:
			if !ok {
				drained = true
				break
			}
			p.returned = append(p.returned, r)
		default:
			drained = true
		}
	}
	for i, r := range p.returned {
		if r.Exchange == exchange && r.RoutingKey == key && r.MessageId == msgID && r.AppId == appID {
			p.returned = append(p.returned[:i], p.returned[i+1:]...)
			return true
		}
	}
	return false
}

// confirmChannel opens a channel in confirm mode on the live connection.
func (s *Session) confirmChannel(ctx context.Context) (*amqp.Channel, error) {
	ch, err := withinValue(ctx, func() (*amqp.Channel, error) {
		ch, err := s.channel(ctx)
		if err != nil {
			return nil, err
		}
		if err := ch.Confirm(false); err != nil {
			ch.Close()
			return nil, err
		}
		return ch, nil
	})
	if err != nil {
		return nil, fmt.Errorf("opening a confirm channel: %w", err)
	}
	return ch, nil
}

// channel is the publisher's current channel.
func (p *Publisher) channel() *amqp.Channel {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ch
}

// reopen replaces channel lost, now closed, with a new one on the live
// connection, unless another publish has replaced it already.
func (p *Publisher) reopen(ctx context.Context, lost *amqp.Channel) error {
	p.mu.Lock()
	replaced := p.ch != lost
	p.mu.Unlock()
	if replaced {
		return nil
	}
	ch, err := p.s.confirmChannel(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != lost { // replaced while we dialled
		_ = ch.Close()
		return nil
	}
	p.ch = ch
	p.listen(ch)
	_ = lost.Close()
	return nil
}

// confirmed runs publish (a send and its confirm) until the broker
// confirms it, reopening the channel after a loss, with a doubling pause,
// until ctx ends, Session.GiveUpAfter has passed (which fails the session)
// or the session has failed (Session.Err: its consumers already gave the
// broker up). An error with the channel still open (a nack, a context) is
// returned at once.
func (p *Publisher) confirmed(ctx context.Context, what string, publish func() error) error {
	bound := p.s.giveUpAfter()
	giveUp := time.Now().Add(bound)
	pause := reconnectPause
	retrying := false
	for {
		// The channel this attempt uses: a loss is judged by it, not by
		// whatever channel a concurrent publish has reopened meanwhile
		// (whose nack would otherwise pass for a real one).
		ch := p.channel()
		err := publish()
		if err == nil || ctx.Err() != nil || !ch.IsClosed() {
			return err
		}
		if time.Now().After(giveUp) {
			// The broker has been away for the run's whole bound: the run
			// cannot go on, and its consumers need not wait out theirs too.
			err = fmt.Errorf("the broker did not take %s back within %v: %w", what, bound, err)
			p.s.fail(err)
			return err
		}
		if failure := p.s.Err(); failure != nil {
			return fmt.Errorf("%s not published again: %w", what, failure)
		}
		p.s.Warn("rabbit: publish lost its channel; publishing again", "message", what, "err", err.Error())
		if !retrying { // the run is busy, not stalled, while it publishes again (WaitSettled)
			retrying = true
			p.s.busyRetrying(1)
			defer p.s.busyRetrying(-1)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return err
		case <-p.s.failed: // the run cannot go on (a consumer gave the broker up): no second 30 s wait
			return fmt.Errorf("%s not published again: %w", what, p.s.Err())
		}
		pause = min(2*pause, time.Second)
		if rerr := p.reopen(ctx, ch); rerr != nil {
			p.s.Warn("rabbit: reopening the publish channel failed", "err", rerr.Error())
		}
	}
}

// TaskBody is the JSON body of a lab message when the caller gives none.
type TaskBody struct {
	Task string `json:"task"`
}

// Publishing is the message Publish sends for task with body: persistent,
// content-type application/json, MessageId = task. A nil body becomes
// {"task": task}. The Publisher adds the run's AppId when it sends it.
func Publishing(task string, body []byte) amqp.Publishing {
	if body == nil {
		body, _ = json.Marshal(TaskBody{Task: task}) // a struct of one string always marshals
	}
	return amqp.Publishing{
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		MessageId:    task,
		Body:         body,
	}
}

// PublishAsync sends task's message to seed queue (through the default
// exchange) and returns the deferred confirm without waiting for it, so
// callers can keep several publishes in flight. It is not mandatory (no
// one would collect the return) and not retried: a message to a queue
// that is gone is confirmed and dropped.
func (p *Publisher) PublishAsync(ctx context.Context, queue, task string, body []byte) (*amqp.DeferredConfirmation, error) {
	msg := Publishing(task, body)
	msg.AppId = p.names.Run
	return p.publish(ctx, p.names.Of(queue), false, msg)
}

// PublishMessage sends msg as given to seed queue and waits for its
// confirm, like Publish. It publishes mandatory: a message no queue takes
// (its queue was deleted) is ErrReturned, not confirmed and dropped. Use
// it for headers of your own (a retry counter such as x-retries) or a
// per-message Expiration; start from Publishing(task, body) to keep the
// lab's properties.
func (p *Publisher) PublishMessage(ctx context.Context, queue string, msg amqp.Publishing) error {
	return p.confirmed(ctx, msg.MessageId, func() error {
		if err := p.send(ctx, queue, msg); err != nil {
			return fmt.Errorf("publishing %s to %s: %w", msg.MessageId, queue, err)
		}
		return nil
	})
}

// send stamps msg with the run's id, publishes it mandatory to seed queue
// and waits for its confirm; a message the broker hands back is
// ErrReturned.
func (p *Publisher) send(ctx context.Context, queue string, msg amqp.Publishing) error {
	msg.AppId = p.names.Run
	name := p.names.Of(queue)
	dc, err := p.publish(ctx, name, true, msg)
	if err != nil {
		return err
	}
	if err := WaitConfirm(ctx, dc); err != nil {
		return err
	}
	if p.wasReturned("", name, msg.MessageId, msg.AppId) {
		return fmt.Errorf("queue %s: %w", name, ErrReturned)
	}
	return nil
}

// sendTo publishes msg as it is to broker queue name, not mandatory.
func (p *Publisher) sendTo(ctx context.Context, name string, msg amqp.Publishing) (*amqp.DeferredConfirmation, error) {
	return p.publish(ctx, name, false, msg)
}

// publish publishes msg to broker queue name through the default exchange.
func (p *Publisher) publish(ctx context.Context, name string, mandatory bool, msg amqp.Publishing) (*amqp.DeferredConfirmation, error) {
	// amqp091-go serialises publishes itself; the lock keeps Close out of
	// the way of a publish in progress.
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ch.PublishWithDeferredConfirmWithContext(ctx, "", name, mandatory,
		false, // immediate: RabbitMQ does not support it
		msg)
}

// Publish sends task's message to seed queue and waits for the broker's
// confirm, bounded by ctx (and at most a few seconds). It returns nil only
// once the broker has taken responsibility for the message.
func (p *Publisher) Publish(ctx context.Context, queue, task string, body []byte) error {
	return p.PublishMessage(ctx, queue, Publishing(task, body))
}

// WaitConfirm waits for one deferred confirm, bounded by ctx and a few
// seconds; a nack is ErrNacked.
func WaitConfirm(ctx context.Context, dc *amqp.DeferredConfirmation) error {
	select {
	case <-dc.Done(): // already confirmed: the usual case with several in flight, and no timer needed
		if !dc.Acked() {
			return ErrNacked
		}
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return fmt.Errorf("waiting for the publisher confirm: %w", err)
	}
	if !ok {
		return ErrNacked
	}
	return nil
}

// Close closes the publisher's channel.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ch.Close()
}

// busyRetrying counts a publish that starts (+1) or stops (-1) waiting out
// a lost channel.
func (s *Session) busyRetrying(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retrying += n
}
