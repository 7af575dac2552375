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
// run's consumers can tell its messages from foreign ones. Safe for
// concurrent use.
type Publisher struct {
	names Names
	ch    *amqp.Channel
	mu    sync.Mutex
}

// Publisher opens a confirm-mode channel on the session's connection.
func (s *Session) Publisher(ctx context.Context) (*Publisher, error) {
	ch, err := withinValue(ctx, func() (*amqp.Channel, error) {
		ch, err := s.conn.Channel()
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
	return &Publisher{names: s.Names, ch: ch}, nil
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
// callers can keep several publishes in flight.
func (p *Publisher) PublishAsync(ctx context.Context, queue, task string, body []byte) (*amqp.DeferredConfirmation, error) {
	return p.send(ctx, queue, Publishing(task, body))
}

// PublishMessage sends msg as given to seed queue and waits for its
// confirm, like Publish. Use it for headers of your own (a retry counter
// such as x-retries) or a per-message Expiration; start from
// Publishing(task, body) to keep the lab's properties.
func (p *Publisher) PublishMessage(ctx context.Context, queue string, msg amqp.Publishing) error {
	dc, err := p.send(ctx, queue, msg)
	if err != nil {
		return fmt.Errorf("publishing %s to %s: %w", msg.MessageId, queue, err)
	}
	return WaitConfirm(ctx, dc)
}

// send stamps msg with the run's id and publishes it to seed queue.
func (p *Publisher) send(ctx context.Context, queue string, msg amqp.Publishing) (*amqp.DeferredConfirmation, error) {
	msg.AppId = p.names.Run
	return p.sendTo(ctx, p.names.Of(queue), msg)
}

// sendTo publishes msg as it is to broker queue name.
func (p *Publisher) sendTo(ctx context.Context, name string, msg amqp.Publishing) (*amqp.DeferredConfirmation, error) {
	// amqp091-go serialises publishes itself; the lock keeps Close out of
	// the way of a publish in progress.
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ch.PublishWithDeferredConfirmWithContext(ctx, "", name, false, false, msg)
}

// Publish sends task's message to seed queue and waits for the broker's
// confirm, bounded by ctx (and at most a few seconds). It returns nil only
// once the broker has taken responsibility for the message.
func (p *Publisher) Publish(ctx context.Context, queue, task string, body []byte) error {
	dc, err := p.PublishAsync(ctx, queue, task, body)
	if err != nil {
		return fmt.Errorf("publishing %s to %s: %w", task, queue, err)
	}
	return WaitConfirm(ctx, dc)
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
