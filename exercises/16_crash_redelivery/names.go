package survivor

import "context"

// Delivery is one message as the surviving worker receives it.
type Delivery struct {
	ID string // the message: its row's id in the status store
	// Redelivered is the broker's flag: the message was handed to a
	// worker before, which never acked it (here: Worker-1, now dead).
	Redelivered bool
}

// Send sends the message's greeting through the mail API: one call, one
// email, nil when it went out.
type Send func(ctx context.Context) error
