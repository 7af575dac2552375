// Package q20 is lesson Q20 — a crash, redelivery, and the store that
// makes it harmless.
//
// Notice: the birthday worker (seed 003) holds five messages at once
// (prefetch 5, manual acks). On the broker the lesson starts that worker
// as a process of its own (this program again) and kills it with SIGKILL
// while it holds them, each caught at another step: sent and marked SENT
// but not acked, sent but still SENDING, claimed SENDING but not sent,
// not yet claimed. The broker sees the connection die and hands all five
// to the surviving worker with the redelivered flag set; the status store
// (SQLite shared by both processes, or PostgreSQL) says which were SENT,
// and those are skipped, as the seed promises.
//
// What the seed does not say: a row left SENDING may or may not have been
// sent, and the store cannot tell. Resending it (this lesson's policy)
// sends one message twice; skipping it loses another. Both run, counted.
// The resend rule reads SENDING on a redelivery as "its worker died",
// which is true here only because the lesson killed it: a redelivery says
// the channel died, and in Q21 the worker whose node stops lives on and is
// still sending when its copy comes back, so resending would send twice.
// The count table says so.
// In memory there is no second process and no broker: the crash takes the
// queue, the held messages and the map store down with the process, and
// what was not sent is lost.
//
// Why so long: the crash runs under two policies (resend or skip a row left
// SENDING), on the broker with a real second process (broker.go,
// process.go) and in memory (memory.go); steps.go says where each of the
// five messages is caught.
package q20

import (
	"context"
	"fmt"
	"time"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	_ "github.com/queuelab/qlab/lesson/rabbitenv" // the broker mechanism env.Open uses
	"github.com/queuelab/qlab/seeds/birthday"
)

var Lesson = lesson.Lesson{
	ID:    "Q20",
	Title: "A crash, redelivery, and the store that makes it harmless",
	Notice: "A worker process (this program, started again) holds five birthday messages (prefetch 5, " +
		"manual acks) and is killed with SIGKILL, each message caught at another step; the broker " +
		"redelivers all five to the surviving worker, and the shared SQL store skips those " +
		"already SENT. A row left SENDING may or may not have been sent: resending it (R1–R5) " +
		"sends R3 twice, skipping it (S1–S5) never sends S4. The table counts redeliveries " +
		"absorbed, duplicates and losses.",
	Notices: map[lab.Backend]string{lab.InMem: "In memory the worker is a goroutine of this " +
		"process, its five messages sit in a Go channel and the status store is a map: the " +
		"crash takes all of it down at once. Nothing is redelivered, nothing remembers which " +
		"rows were SENT, and the messages not yet sent (R4, R5, S4, S5) are lost. qlab run 20 " +
		"--backend rabbit kills a real process and lets the broker and SQLite absorb it."},
	InMem:      runQ20,
	Rabbit:     runQ20,
	Default:    lab.Rabbit, // the redelivery is the broker's, the surviving store SQL's
	Store:      true,       // the fault suite cuts its status store's database too
	WatchSpeed: 2,
	Length:     3 * time.Second,
	TestSpeed:  10,
	Topologies: func() []flow.Topology { return []flow.Topology{birthday.Topology()} },
	// Not in the fault suite: the crashing worker does not reconnect (it
	// is there to die), so a fault that closes its connection before the
	// kill ends the run with an error saying so, within the bound. A
	// killed lesson's worker exits when its stdin closes
	// (TestWorkerDiesWithTheLesson).
	Faults: false,
	Parity: lesson.Parity{
		Crashed: []string{"R1", "R2", "R3", "R4", "R5", "S1", "S2", "S3", "S4", "S5"},
	},
	LosesOnPurpose: []string{"S4"}, // skipped as SENDING, never sent: the skip policy's loss
}

// The seed's numbers and the lesson's actors.
const (
	Prefetch  = birthday.Prefetch // QUEUE_CONCURRENCY: five unacked messages in the worker's hands
	Scheduler = birthday.Scheduler
	Crashing  = "Worker-1" // the worker that dies
	Survivor  = "Worker-2" // the worker that takes over
)

// policy is what the surviving worker does with a redelivered message
// whose row is SENDING: its worker died after the claim, before or after
// the send, and the row cannot say which.
type policy struct {
	name   string
	prefix string // the part's message ids: R1 … R5
	resend bool   // take the row over and send again; false: skip it as sent
}

// The two policies; resend is the lesson's pick (a birthday greeting twice
// is better than none), skip is shown beside it.
var (
	resend = policy{name: "resend SENDING", prefix: "R", resend: true}
	skip   = policy{name: "skip SENDING", prefix: "S"}
)

// runQ20 crashes the worker once under each policy and reports both.
func runQ20(ctx context.Context, env *lesson.Env) error {
	// In memory the run's planned interrupt (Options.Interrupt, armed once
	// for the whole run) is this process dying: every part after it too.
	life, die := context.WithCancel(ctx)
	defer die()
	if env.Stream.Backend() == lab.InMem {
		defer env.InterruptAfter(die)()
	}
	var out []outcome
	for _, p := range []policy{resend, skip} {
		env.Phase(fmt.Sprintf("%s1–%s5: the worker holding them is killed; survivor's policy: %s",
			p.prefix, p.prefix, p.name))
		o, err := crash(ctx, life, env, p)
		if err != nil {
			return err
		}
		out = append(out, o)
	}
	env.Report(stepTable(out, env.Stream.Backend()))
	env.Report(countTable(out, env.Stream.Backend()))
	return nil
}

// ids are a part's messages, in the order they are published.
func (p policy) ids() []string {
	var out []string
	for i := range script {
		out = append(out, fmt.Sprintf("%s%d", p.prefix, i+1))
	}
	return out
}

// crash runs one part on the run's backend; in memory, life ends when
// the process dies of the run's planned interrupt.
func crash(ctx, life context.Context, env *lesson.Env, p policy) (outcome, error) {
	if env.Stream.Backend() == lab.InMem {
		return crashInMemory(ctx, life, env, p)
	}
	return crashProcess(ctx, env, p)
}

// holdBound is how long (real time) the lesson waits for the worker
// process to start and reach its steps, beyond the time its sends take.
const holdBound = 30 * time.Second
