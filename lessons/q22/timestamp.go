package q22

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
)

// SentMsHeader carries the publish time in milliseconds, beside the
// timestamp property, which AMQP 0-9-1 encodes in whole seconds.
const SentMsHeader = "x-sent-at-ms"

// Stamps is what one message carried through the broker: the publish
// time, the timestamp property and the millisecond header read back.
type Stamps struct {
	Sent      time.Time
	Timestamp time.Time // the timestamp property as delivered
	HeaderMs  int64     // SentMsHeader as delivered
}

// RoundTrip publishes one message stamped sent (property and header) to a
// queue of its own (server-named, exclusive: the broker deletes it with
// the connection) and reads it back with basic.get.
func RoundTrip(ctx context.Context, conn *amqp.Connection, sent time.Time) (Stamps, error) {
	return roundTrip(ctx, conn, sent, sent)
}

// AmqplibVersion is the amqplib release the seeds' stack was measured
// with: it writes the timestamp property as the number it is given. The
// seeds set no such property: seed 002 keeps a millisecond "timestamp" in
// the JSON body, seed 003 names none; a publisher that passes amqplib
// `timestamp: Date.now()` puts milliseconds there (lessons/q22/README.md).
const AmqplibVersion = versions.Amqplib

// AmqplibStamp is what amqplib puts on the wire for `timestamp:
// Date.now()` at sent: the milliseconds, in a field AMQP 0-9-1 defines
// as seconds. amqp091-go writes t.Unix(), so time.Unix(ms, 0) puts the
// same number there.
func AmqplibStamp(sent time.Time) time.Time { return time.Unix(sent.UnixMilli(), 0) }

// RoundTripAmqplib is RoundTrip with the timestamp property written as
// amqplib writes the seed's Date.now() (AmqplibStamp): Timestamp is what a
// reader that follows the spec (amqp091-go) makes of it.
func RoundTripAmqplib(ctx context.Context, conn *amqp.Connection, sent time.Time) (Stamps, error) {
	return roundTrip(ctx, conn, sent, AmqplibStamp(sent))
}

// roundTrip publishes a probe stamped stamp (the property) and sent (the
// header) and reads it back.
func roundTrip(ctx context.Context, conn *amqp.Connection, sent, stamp time.Time) (Stamps, error) {
	ch, err := conn.Channel()
	if err != nil {
		return Stamps{}, err
	}
	defer ch.Close()
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		return Stamps{}, err
	}
	msg := amqp.Publishing{Timestamp: stamp, Headers: amqp.Table{SentMsHeader: sent.UnixMilli()}, Body: []byte("probe")}
	if err := ch.PublishWithContext(ctx, "", q.Name, false, false, msg); err != nil {
		return Stamps{}, err
	}
	var st Stamps
	back, err := rabbit.PollUntil(ctx, 20*time.Millisecond, 5*time.Second, func() (bool, error) {
		d, ok, err := ch.Get(q.Name, true) // basic.get is not a wait: poll, bounded
		if ok {
			ms, _ := d.Headers[SentMsHeader].(int64)
			st = Stamps{Sent: sent, Timestamp: d.Timestamp, HeaderMs: ms}
		}
		return ok, err
	})
	switch {
	case err != nil:
		return Stamps{}, err
	case !back:
		return Stamps{}, fmt.Errorf("the probe message did not come back from %s", q.Name)
	}
	return st, nil
}

// timestampTrap measures the trap on the broker: one message published
// at a time with 700 ms past the second. It reports nothing on a backend
// without a broker (false).
func timestampTrap(ctx context.Context, b flow.Backend) (render.Table, bool) {
	s, err := rabbit.SessionOf(b)
	if err != nil {
		return render.Table{}, false
	}
	conn, err := s.Dial(ctx)
	if err != nil {
		return trapTable([][]string{{"could not measure", oneLine(err.Error())}}, b), true
	}
	defer conn.Close()
	sent := time.Now().Truncate(time.Second).Add(700 * time.Millisecond)
	st, err := RoundTrip(ctx, conn, sent)
	if err != nil {
		return trapTable([][]string{{"could not measure", oneLine(err.Error())}}, b), true
	}
	js, err := RoundTripAmqplib(ctx, conn, sent)
	if err != nil {
		return trapTable([][]string{{"could not measure", oneLine(err.Error())}}, b), true
	}
	return trapTable([][]string{
		{"published at", st.Sent.UTC().Format("15:04:05.000")},
		{"timestamp property read back", st.Timestamp.UTC().Format("15:04:05.000") +
			fmt.Sprintf(" (%d ms lost)", st.Sent.Sub(st.Timestamp).Milliseconds())},
		{SentMsHeader + " header read back", time.UnixMilli(st.HeaderMs).UTC().Format("15:04:05.000")},
		{"amqplib " + AmqplibVersion + ", timestamp: Date.now()", fmt.Sprintf("%d on the wire: milliseconds", js.Timestamp.Unix())},
		{"that read as AMQP's seconds", fmt.Sprintf("the year %d (amqp091-go; amqplib hands back the "+
			"number, so a TypeScript reader that knows it is ms is right)", js.Timestamp.UTC().Year())},
	}, b), true
}

func trapTable(rows [][]string, b flow.Backend) render.Table {
	return render.Table{Title: "The timestamp trap, on RabbitMQ " + flow.FactsOf(b).Version,
		Header: []string{"", "value"}, Rows: rows}
}
