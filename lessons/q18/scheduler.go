// Package q18 is lesson Q18 — the minute scheduler and a topic exchange.
//
// Notice: the birthday scheduler (seed 003) runs a cron every minute that
// takes the CREATED rows due within the next hour, marks them QUEUED and
// publishes them to the topic exchange birthday.messages; workers
// (prefetch 5, manual acks) claim each row in the status store, send it
// and mark it SENT. Four things go wrong, and each part measures one:
//
//	(a) a row due in 59 minutes is published, and sent, at once: early;
//	(b) QUEUED is written before the publish, so a publish that fails leaves
//	    the row QUEUED for ever (the cron picks only CREATED rows);
//	(c) a routing key no binding matches (wedding) is confirmed by the
//	    broker and dropped, unless the publish is mandatory;
//	(d) a scheduler that publishes twice sends twice, unless the worker's
//	    claim is one atomic UPDATE.
//
// Each part runs the seed's way and a fix side by side, on a fresh backend
// and a fresh store. The seed's numbers are kept (every minute, within the
// hour); the lesson runs at 600× (one lesson minute is 100 ms), never by
// shrinking them.
//
// Why so long: four parts, (a) to (d), each running the seed's way and a
// fix on a fresh backend and store: early.go, stuck.go, routing.go and
// twice.go. variant.go and worker.go are the scheduler and the workers they
// share.
package q18

import (
	"context"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/seeds/birthday"
)

var Lesson = lesson.Lesson{
	ID:    "Q18",
	Title: "The minute scheduler and a topic exchange",
	Notice: "A cron every minute publishes the rows due within the hour to the topic exchange " +
		"birthday.messages: (a) a row due in 59 minutes is sent at once; (b) QUEUED is written " +
		"before the publish, so a failed publish strands the row; (c) a wedding key no binding " +
		"matches is confirmed and dropped; (d) a tick published twice is sent twice with " +
		"check-then-act. Beside each runs its fix: publishing at the due minute, publishing first " +
		"or an outbox relay, mandatory, an atomic claim.",
	Notices: map[lab.Backend]string{lab.InMem: "The scheduler, the topic exchange and the workers " +
		"on Go channels, with the status store a map (store.NewMemory) that keeps the same " +
		"contract as the SQL stores the broker run uses. (a), (b) and (d) come out the same on " +
		"both backends. (c)'s silent drop is the broker's: memory can only show where the " +
		"topology routes wedding (nowhere); qlab run 18 --backend rabbit shows the confirm."},
	InMem:      runQ18,
	Rabbit:     runQ18,
	Default:    lab.Rabbit, // the seed's system is the broker's, and so is (c)'s silent drop
	WatchSpeed: 600,        // qlab run's and the TUI's: a lesson minute is 100 ms, the ~70 minutes in ~7 s
	Length:     66 * time.Minute,
	TestSpeed:  600,
	Topologies: func() []flow.Topology { return []flow.Topology{birthday.Topology()} },
	Faults:     true, // in the fault suite (lessons/faults): PublishTo survives a lost channel
	Store:      true, // the fault suite cuts its status store's database too
	Parity: lesson.Parity{
		TimingSensitive: "part (d)'s check-then-act sends twice when the broker hands a row's two " +
			"copies to the two workers (the gate waits for both); if one worker gets both, its " +
			"handler takes one at a time and the gate's bound lets the first go alone",
	},
	LosesOnPurpose: []string{"Q2", "R3"}, // (b) the row left QUEUED; (c) the wedding the broker dropped
}

// sendTime is how long the external API takes to send one message.
const sendTime = 2 * time.Second

// The lesson's actors.
const (
	Relay = "Outbox-Relay"
)

// runQ18 runs the four parts in order and reports what each measured.
func runQ18(ctx context.Context, env *lesson.Env) error {
	parts := []func(context.Context, *lesson.Env) error{earlySend, stuckQueued, routing, twice}
	for _, part := range parts {
		if err := part(ctx, env); err != nil {
			return err
		}
	}
	return nil
}
