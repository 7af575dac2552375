package rabbit

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The run's seal. A message's app-id says which run published it, but
// anyone who sees the run's queue names can write it: a forged copy of a
// live task (its message-id, the run's app-id, a well-formed body) would
// pass every other check and be handled as one more attempt. So each
// message the run publishes also carries SealHeader, an HMAC of its task
// id under a key that never leaves the process, and the flow's consumers
// hold a message without the right seal like any other forgery. The
// broker keeps headers when it dead-letters a message, so a task's seal
// follows it through wait queues and DLQs. An exact copy of a real
// message (read off the broker with its headers) still passes: the seal
// proves who wrote a message, not that it is the only copy.

// SealHeader is the header that carries a run's seal on its messages.
const SealHeader = "qlab-seal"

// sealKeys holds each run's key (by Names.Run), made on first use: every
// session of the run in this process seals and checks with the same one.
var sealKeys sync.Map

// sealKey is run's key.
func sealKey(run string) []byte {
	if k, ok := sealKeys.Load(run); ok {
		return k.([]byte)
	}
	k := make([]byte, 32)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+)
	actual, _ := sealKeys.LoadOrStore(run, k)
	return actual.([]byte)
}

// sealOf is the seal of task's messages in run.
func sealOf(run, task string) string {
	mac := hmac.New(sha256.New, sealKey(run))
	mac.Write([]byte(task))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// Stamp marks msg as a message of the run with names, as the run's
// publishers do: its app-id and its seal (set on a copy of its headers,
// which may be a delivery's). The seal's key lives in this process only:
// a lesson that publishes with amqp091-go's own calls stamps its messages
// with it, and nothing outside the process can.
func Stamp(msg *amqp.Publishing, names Names) {
	msg.AppId = names.Run
	headers := make(amqp.Table, len(msg.Headers)+1)
	for k, v := range msg.Headers {
		headers[k] = v
	}
	headers[SealHeader] = sealOf(names.Run, msg.MessageId)
	msg.Headers = headers
}

// Sealed reports whether d carries the run's seal for its message-id:
// only this process, publishing for the run, could have written it.
func (g *Guest) Sealed(d amqp.Delivery) bool {
	got, _ := d.Headers[SealHeader].(string)
	return hmac.Equal([]byte(got), []byte(sealOf(g.s.Names.Run, d.MessageId)))
}
