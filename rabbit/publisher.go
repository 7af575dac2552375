package rabbit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrNacked means the broker refused a published message (a negative
// publisher confirm): it is not stored.
var ErrNacked = errors.New("broker nacked the message")

// Publisher publishes persistent JSON messages on a channel in confirm
// mode, each stamped with the run's id as its AppId (see Names.Run), so the
// run's consumers can tell its messages from foreign ones. Every confirmed
// publish of the package goes through one path (deliver: exchange, key,
// mandatory, confirm): when the broker closes the channel (a connection
// closed, a restart) it reopens it on the session's live connection and
// publishes again until the broker confirms, as Session.Retry says (for at
// most Session.GiveUpAfter): a message whose confirm was lost may then be
// stored twice (at least once, never silently dropped). Safe for
// concurrent use.
//
// Locks: mu guards ch (the current channel) and is held only to read or
// swap it, never during a broker call; retMu guards rets and returned.
type Publisher struct {
	s     *Session
	names Names
	mu    sync.Mutex
	ch    *amqp.Channel

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
// waiting for a broker that is away (Session.Retry).
func (s *Session) Publisher(ctx context.Context) (*Publisher, error) {
	var ch *amqp.Channel
	err := s.Retry(ctx, "opening a publisher", func() (err error) {
		ch, err = s.link.confirmChannel(ctx)
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
func (l *link) confirmChannel(ctx context.Context) (*amqp.Channel, error) {
	ch, err := withinValue(ctx, func() (*amqp.Channel, error) {
		ch, err := l.channel(ctx)
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

// live returns the publisher's channel, replacing it with a new one on
// the session's live connection if the broker closed it, unless the run
// cannot go on (Session.Err): then there is no broker to wait for.
func (p *Publisher) live(ctx context.Context) (*amqp.Channel, error) {
	p.mu.Lock()
	ch := p.ch
	p.mu.Unlock()
	if !ch.IsClosed() {
		return ch, nil
	}
	if failure := p.s.Err(); failure != nil {
		return nil, fmt.Errorf("the publish channel is lost and the run cannot go on: %w", failure)
	}
	fresh, err := p.s.link.confirmChannel(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ch != ch { // another publish replaced it while we dialled
		_ = fresh.Close()
		return p.ch, nil
	}
	p.ch = fresh
	p.listen(fresh)
	return fresh, nil
}

// route is where deliver sends a message: an exchange's broker name (""
// is the default exchange) and a routing key (on the default exchange, a
// queue's broker name). A mandatory message no queue takes comes back
// (basic.return) and deliver reports ErrReturned.
type route struct {
	exchange, key string
	mandatory     bool
}

// deliver is the package's one publish path: it publishes msg as given
// along r, waits for the broker's confirm and, for a mandatory r, checks
// that the broker did not hand it back. After a lost channel it publishes
// again on a new one (Session.Retry); a nack, a return or a context that
// ends is returned at once.
func (p *Publisher) deliver(ctx context.Context, r route, msg amqp.Publishing) error {
	return p.s.Retry(ctx, "waiting for the broker", func() error {
		ch, err := p.live(ctx)
		if err != nil {
			return err
		}
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, r.exchange, r.key, r.mandatory,
			false, // immediate: RabbitMQ does not support it
			msg)
		if err == nil {
			err = WaitConfirm(ctx, dc)
		}
		switch {
		case err != nil && ch.IsClosed(): // judged by this attempt's channel: a closed channel nacks what it had
			return &errLost{err}
		case err != nil:
			return err
		case r.mandatory && p.wasReturned(r.exchange, r.key, msg.MessageId, msg.AppId):
			return ErrReturned
		}
		p.s.watch.expectPublished(r, msg)
		return nil
	})
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
// callers can keep several publishes in flight (Q17's windows). It is not
// mandatory (no one would collect the return) and not retried: a message
// to a queue that is gone is confirmed and dropped.
func (p *Publisher) PublishAsync(ctx context.Context, queue, task string, body []byte) (*amqp.DeferredConfirmation, error) {
	msg := Publishing(task, body)
	Stamp(&msg, p.names)
	ch, err := p.live(ctx)
	if err != nil {
		return nil, err
	}
	return ch.PublishWithDeferredConfirmWithContext(ctx, "", p.names.Of(queue), false, false, msg)
}

// PublishMessage sends msg to seed queue, stamped with the run's id, and
// waits for its confirm, like Publish. It publishes mandatory: a message
// no queue takes (its queue was deleted) is ErrReturned, not confirmed and
// dropped. Use it for headers of your own (a retry counter such as
// x-retries) or a per-message Expiration; start from Publishing(task,
// body) to keep the lab's properties.
func (p *Publisher) PublishMessage(ctx context.Context, queue string, msg amqp.Publishing) error {
	name := p.names.Of(queue)
	if err := p.publishRun(ctx, route{key: name, mandatory: true}, msg); err != nil {
		return fmt.Errorf("publishing %s to %s: %w", msg.MessageId, name, err)
	}
	return nil
}

// PublishTo sends task's message to the run's exchange (seed name) with
// routing key key, mandatory, and waits for its confirm; a message no
// binding matches is ErrReturned. Like Publish it survives a lost channel.
func (p *Publisher) PublishTo(ctx context.Context, exchange, key, task string) error {
	name := p.names.Of(exchange)
	if err := p.publishRun(ctx, route{exchange: name, key: key, mandatory: true}, Publishing(task, nil)); err != nil {
		return fmt.Errorf("publishing %s to exchange %s: %w", task, name, err)
	}
	return nil
}

// publishRun stamps msg as the run's (its app-id and seal) and delivers
// it along r.
func (p *Publisher) publishRun(ctx context.Context, r route, msg amqp.Publishing) error {
	Stamp(&msg, p.names)
	return p.deliver(ctx, r, msg)
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
	ch := p.ch
	p.mu.Unlock()
	return ch.Close()
}
