package q20

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// part is one crash under one policy: its store, what the workers did.
type part struct {
	env *lesson.Env
	p   policy
	db  store.Store

	mu          sync.Mutex
	sends       map[string]int    // message → times the mail API sent it
	redelivered map[string]bool   // message → the survivor got it redelivered
	did         map[string]string // message → what the survivor did with it
}

func newPart(env *lesson.Env, p policy, db store.Store) *part {
	return &part{env: env, p: p, db: db, sends: map[string]int{},
		redelivered: map[string]bool{}, did: map[string]string{}}
}

// insert stores the part's rows as the scheduler left them: QUEUED.
func (pt *part) insert(ctx context.Context) error {
	for _, id := range pt.p.ids() {
		r := store.Row{ID: id, Kind: "birthday", Status: store.Queued}
		if _, err := pt.db.Insert(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// steps maps each message to the step the crash catches it at.
func (pt *part) steps() map[string]step {
	out := map[string]step{}
	for i, id := range pt.p.ids() {
		out[id] = script[i]
	}
	return out
}

// relay turns the crashing worker's progress into events by actor: a
// claim starts an attempt, a send ends it well.
func (pt *part) relay(actor string) progress {
	return func(what, id string) {
		e := lab.Event{Task: id, Queue: birthday.Queue, Actor: actor, Attempt: 1}
		switch what {
		case sayClaimed:
			e.Kind = lab.Started // the claim: the row is SENDING
		case saySent:
			pt.sent(id)
			e.Kind, e.Note = lab.Succeeded, "sent by the mail API"
		default:
			return
		}
		pt.env.Stream.Emit(e)
	}
}

// sent counts one send of message id.
func (pt *part) sent(id string) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.sends[id]++
}

// sentBefore reports whether message id was sent at all (the lab knows;
// the surviving worker, reading SENDING, does not).
func (pt *part) sentBefore(id string) bool {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.sends[id] > 0
}

func (pt *part) note(id, what string, redelivered bool) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	pt.did[id] = what
	pt.redelivered[id] = pt.redelivered[id] || redelivered
}

// survivor is the surviving worker: the seed's idempotency check on the
// atomic claim, and the part's policy for a row left SENDING.
func (pt *part) survivor() flow.Handler {
	return func(ctx context.Context, d *flow.Delivery) flow.Decision {
		did := "claimed, sent"
		won, err := pt.db.Claim(ctx, d.Task)
		if err == nil && !won {
			var dec flow.Decision
			if won, dec, err = pt.notClaimed(ctx, d); err == nil && !won {
				return dec
			}
			did = "took SENDING over, sent"
		}
		if err == nil {
			err = pt.env.Stream.Attempt(d.Event(Survivor), func() error {
				if err := pt.env.Stream.Clock().Wait(ctx, sendTime); err != nil {
					return err
				}
				pt.sent(d.Task)
				return pt.db.MarkSent(ctx, d.Task)
			})
		}
		if err != nil {
			return flow.Park(birthday.DLQ, err.Error())
		}
		pt.note(d.Task, did, d.Redelivered)
		return flow.Ack()
	}
}

// notClaimed is the survivor's answer to a row it could not claim: SENT is
// skipped (the seed's check); SENDING on a redelivery means, in this
// lesson only, that the worker that claimed it died (the lesson killed
// it), before or after the send: resend takes the row over (won), skip
// acks it as sent. Where the worker may live (Q21) the rule is false.
func (pt *part) notClaimed(ctx context.Context, d *flow.Delivery) (bool, flow.Decision, error) {
	r, err := pt.db.Get(ctx, d.Task)
	if err != nil {
		return false, flow.Decision{}, err
	}
	if r.Status == store.Sending && d.Redelivered && pt.p.resend {
		err := pt.db.Requeue(ctx, d.Task, "redelivered while SENDING: its worker died")
		if err == nil {
			var won bool
			if won, err = pt.db.Claim(ctx, d.Task); err == nil && !won {
				err = fmt.Errorf("%s: claimed by another worker while taken over", d.Task)
			}
		}
		return err == nil, flow.Decision{}, err
	}
	e := d.Event(Survivor)
	switch {
	case r.Status == store.Sending && d.Redelivered && !pt.sentBefore(d.Task):
		e.Kind = lab.Lost
		e.Note = "row SENDING: skipped as sent, but its worker died before the send: never sent"
		pt.note(d.Task, "skipped SENDING: lost", true)
	default:
		e.Kind = lab.Duplicate
		e.Note = fmt.Sprintf("row is %s: skipped, acked, not sent again", r.Status)
		pt.note(d.Task, "skipped "+string(r.Status), d.Redelivered)
	}
	pt.env.Stream.Emit(e)
	return false, flow.Ack(), nil
}

// outcome is what one part measured.
type outcome struct {
	policy
	steps       map[string]step
	sends       map[string]int
	redelivered map[string]bool
	did         map[string]string
	status      map[string]store.Status // each row at the end ("" where the store died)
	kept        int                     // rows the store still had after the crash
	pid         int                     // the killed worker process (0 in memory)
	exit        string                  // how it ended ("signal: killed")
}

// finish reads what the part did and its rows; kept says whether the
// store outlived the crash.
func (pt *part) finish(ctx context.Context, kept bool) (outcome, error) {
	pt.mu.Lock()
	o := outcome{policy: pt.p, steps: pt.steps(), sends: maps.Clone(pt.sends),
		redelivered: maps.Clone(pt.redelivered), did: maps.Clone(pt.did),
		status: map[string]store.Status{}}
	pt.mu.Unlock()
	if !kept {
		return o, nil
	}
	for _, id := range pt.p.ids() {
		r, err := pt.db.Get(ctx, id)
		if err != nil {
			return o, err
		}
		o.status[id] = r.Status
		o.kept++
	}
	return o, nil
}
