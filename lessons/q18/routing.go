package q18

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store"
)

// Part (c): the topic exchange routes birthday and anniversary to the main
// queue. A third kind, wedding, matches no binding. Published as the seed
// publishes (confirms on, mandatory off), the broker acks it and drops
// it: the publisher's confirm says all is well. Published mandatory, the
// broker returns it (312 NO_ROUTE) before the ack, and flow's PublishTo
// reports flow.ErrUnroutable: the scheduler knows.

// routingRows are part (c)'s messages: R3 goes out as the seed publishes,
// R4 mandatory.
var routingRows = []row{
	{"R1", "birthday", 0},
	{"R2", "anniversary", 0},
	{"R3", "wedding", 0},
	{"R4", "wedding", 0},
}

// silent is the row published without mandatory.
const silent = "R3"

// routed is what the publisher learnt about one message.
type routed struct {
	id, key   string
	mandatory bool
	answer    string // what the publish call said
	acked     bool   // a broker's confirm said ack
	returned  bool   // the message came back unroutable (flow.ErrUnroutable)
}

// routing publishes part (c)'s rows and reports what the publisher was
// told and where each one went.
func routing(ctx context.Context, env *lesson.Env) error {
	told, o, on, err := runRouting(ctx, env)
	if err != nil {
		return err
	}
	env.Report(routingTable(told, o, on))
	return nil
}

// runRouting runs part (c) and returns what the publisher was told, the
// outcome, and what it ran on.
func runRouting(ctx context.Context, env *lesson.Env) ([]routed, outcome, string, error) {
	env.Phase("(c) R1–R4: birthday and anniversary arrive; wedding matches no binding")
	v, err := open(ctx, env, "routing", routingRows, atomicClaim, 1)
	if err != nil {
		return nil, outcome{}, "", err
	}
	defer v.close(ctx)
	var told []routed
	tick := func(ctx context.Context) error {
		queued, err := v.db.QueueDue(ctx, v.now().Add(birthday.Horizon))
		for _, r := range queued {
			if err != nil {
				break
			}
			rt := routed{id: r.ID, key: r.Kind, mandatory: r.ID != silent}
			err = v.route(ctx, r, &rt)
			told = append(told, rt)
		}
		return err
	}
	if err := v.cron(ctx, 0, tick); err != nil {
		return nil, outcome{}, "", err
	}
	o, err := v.finish(ctx, "routing")
	return told, o, flow.FactsOf(v.b).On(), err
}

// route publishes r, mandatory or as the seed does, and records in rt
// what the publisher was told.
func (v *variant) route(ctx context.Context, r store.Row, rt *routed) error {
	if !rt.mandatory {
		return v.publishPlain(ctx, r, rt)
	}
	err := v.publish(ctx, birthday.Scheduler, r)
	switch {
	case err == nil:
		rt.answer, rt.acked = "confirmed", flow.FactsOf(v.b).Broker
		return nil
	case errors.Is(err, flow.ErrUnroutable):
		rt.answer, rt.returned = "unroutable (returned)", true
		return nil
	}
	return err
}

// publishPlain publishes r without mandatory. On a broker it publishes on
// a confirm channel of its own, as the seed's publisher does, and reads
// the confirm and any return; memory has no broker to answer, only the
// topology, which routes r's key nowhere. Either way the stream reports
// the message lost, which the publisher itself never learns.
func (v *variant) publishPlain(ctx context.Context, r store.Row, rt *routed) error {
	if routes := birthday.Topology().Route(birthday.Exchange, r.Kind); len(routes) > 0 {
		return fmt.Errorf("q18: key %q routes to %v: not a silent drop", r.Kind, routes)
	}
	v.mu.Lock()
	v.copies[r.ID]++
	v.published[r.ID] = v.since()
	v.mu.Unlock()
	rt.answer = "none: no broker (memory)"
	how := "a broker acks it and drops it when it is not mandatory (see --backend rabbit)"
	if s, err := rabbit.SessionOf(v.b); err == nil {
		if rt.acked, rt.returned, err = publishUnmandatory(ctx, s, r.Kind, r.ID); err != nil {
			return err
		}
		rt.answer = fmt.Sprintf("confirm ack=%v, returned=%v", rt.acked, rt.returned)
		how = fmt.Sprintf("published without mandatory: the broker's confirm said ack=%v "+
			"and nothing came back, so the publisher never knew", rt.acked)
	}
	// Not refused: the broker took the message (its confirm said so) and
	// dropped it; only the lab, which knows no binding matched, can say so.
	at := lab.Event{Task: r.ID, Queue: birthday.Exchange, Actor: birthday.Scheduler}
	enq, lost := at, at
	enq.Kind, enq.Note = lab.Enqueued, fmt.Sprintf("to exchange %s with key %q", birthday.Exchange, r.Kind)
	lost.Kind = lab.Lost
	lost.Note = fmt.Sprintf("unroutable: no binding of %s matches key %q; %s", birthday.Exchange, r.Kind, how)
	v.env.Stream.Emit(enq)
	v.env.Stream.Emit(lost)
	return nil
}

// publishUnmandatory publishes task to the session's topic exchange with
// key, mandatory off, as the seed's publisher does, on a confirm channel of
// its own (rabbit.Probes.PublishWatched), and reports the confirm and
// whether a basic.return came back.
func publishUnmandatory(ctx context.Context, s *rabbit.Session, key, task string) (
	confirmed, returned bool, err error) {
	u, err := s.Probes().PublishWatched(ctx, s.Names.Of(birthday.Exchange), key, task, false /* mandatory: off */)
	return u.Confirmed, u.Returned, err
}
