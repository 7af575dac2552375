// Package store is the status store behind the idempotency, scheduler and
// batch lessons (seeds 003 and 004): one contract, three implementations.
//
// A message's row moves CREATED → QUEUED → SENDING → SENT or FAILED. The
// idempotency the seeds rely on is the database's, not a Go map pretending:
// Claim is `UPDATE … SET status='SENDING' WHERE id=? AND status='QUEUED'`,
// one statement, so of any number of workers claiming one row exactly one
// wins; Insert is `INSERT … ON CONFLICT DO NOTHING`. The outbox writes a
// row's status change and the entry a relay publishes in one transaction, so
// a scheduler that dies between the two leaves neither half. The users table
// is seed 004's: a batch insert that one duplicate email fails whole, and one
// that skips the conflicting rows and says which.
//
// Implementations: NewMemory here (a map: it dies with the process, which the
// crash lesson shows), and SQLite (embedded, the default) and PostgreSQL in
// store/sqlstore, which the in-memory lessons never link. store/storetest is
// the contract every implementation runs.
package store

import (
	"context"
	"errors"
	"time"
)

// Status is where a message's row stands.
type Status string

// The statuses, in the order a message normally passes through them.
const (
	Created Status = "CREATED" // stored, waiting for its due time
	Queued  Status = "QUEUED"  // handed to the queue (or the outbox) by the scheduler
	Sending Status = "SENDING" // claimed by one worker, which is sending it
	Sent    Status = "SENT"    // sent; a redelivered copy is skipped
	Failed  Status = "FAILED"  // given up, with LastError saying why
)

// AllStatuses lists every Status in order; Counts reports each of them.
var AllStatuses = []Status{Created, Queued, Sending, Sent, Failed}

// Row is one message's status row.
type Row struct {
	ID        string    // primary key
	Kind      string    // what the message is, e.g. "birthday": the routing key it is published with
	Status    Status    // Insert stores Created when it is empty
	Due       time.Time // when it should be sent
	Attempts  int       // how many times it has been claimed
	LastError string    // the reason given by the last Requeue or MarkFailed
	Updated   time.Time // set by the store on every change
}

// OutboxEntry is a message waiting for the relay to publish it: written in
// the transaction that queued its row.
type OutboxEntry struct {
	Seq     int64     // increasing in the order entries were written
	ID      string    // the row's id: the message to publish
	Kind    string    // the row's Kind: the routing key
	Created time.Time // when the entry was written
}

// User is a row of seed 004's users table: ID and Email are each unique.
type User struct {
	ID    string
	Name  string
	Email string
}

// Errors the contract names; implementations wrap them, so test with
// errors.Is.
var (
	// ErrNotFound: no row (or outbox entry) has that id.
	ErrNotFound = errors.New("store: not found")
	// ErrNotSending: the row exists but is not SENDING, so it cannot be
	// marked SENT, FAILED or requeued by a worker that did not claim it.
	ErrNotSending = errors.New("store: row is not SENDING")
	// ErrDuplicate: a user's id or email is already taken (a unique
	// violation); InsertUsers stored none of the batch.
	ErrDuplicate = errors.New("store: duplicate user")
	// ErrUnavailable: the database cannot be opened or reached. From a
	// write, it leaves the outcome unknown: the statement may have
	// committed before the connection was lost (read the row to know).
	ErrUnavailable = errors.New("database unavailable")
)

// Store is the status store. Every method is safe for concurrent use by
// many goroutines (and, for the SQL stores, many processes).
type Store interface {
	Statuses
	Outbox
	Users
	// Close releases the store; a SQL store's data stays in its database.
	Close() error
}

// Statuses is the status table: the scheduler's and the workers' half.
type Statuses interface {
	// Insert adds r unless a row with r.ID exists (INSERT … ON CONFLICT DO
	// NOTHING) and reports whether it was added; an existing row is left
	// as it is. An empty Status is stored as Created.
	Insert(ctx context.Context, r Row) (added bool, err error)
	// Get returns the row with that id, or ErrNotFound.
	Get(ctx context.Context, id string) (Row, error)
	// QueueDue marks every CREATED row due at or before until as QUEUED, in
	// one statement, and returns those rows ordered by Due then ID. Two
	// schedulers calling it at once never both get the same row.
	QueueDue(ctx context.Context, until time.Time) ([]Row, error)
	// Claim moves the row from QUEUED to SENDING and counts an attempt, in
	// one statement (UPDATE … WHERE id=? AND status='QUEUED'). won is true
	// for exactly one of any number of concurrent callers; it is false, with
	// a nil error, when the row is in any other status (already claimed,
	// SENT: the idempotency check). ErrNotFound when there is no such row.
	Claim(ctx context.Context, id string) (won bool, err error)
	// Requeue moves a claimed row back from SENDING to QUEUED, recording
	// reason as LastError, for a transient failure that will be retried.
	// ErrNotSending if the row is not SENDING; ErrNotFound if absent.
	Requeue(ctx context.Context, id, reason string) error
	// MarkSent moves a claimed row from SENDING to SENT. ErrNotSending if
	// the row is not SENDING (nothing unclaimed is ever marked sent);
	// ErrNotFound if absent.
	MarkSent(ctx context.Context, id string) error
	// MarkFailed moves a claimed row from SENDING to FAILED with reason as
	// LastError. ErrNotSending if the row is not SENDING; ErrNotFound if
	// absent.
	MarkFailed(ctx context.Context, id, reason string) error
	// Counts returns how many rows are in each status, every Status
	// present (zero included): the TUI's store panel.
	Counts(ctx context.Context) (map[Status]int, error)
}

// Outbox is the transactional outbox: the fix for a scheduler that marks a
// row QUEUED and then fails to publish it (the row is stuck, since the
// scheduler only picks CREATED rows).
type Outbox interface {
	// QueueDueToOutbox does what QueueDue does and, in the same transaction,
	// writes one OutboxEntry per row it queued: both happen or neither.
	QueueDueToOutbox(ctx context.Context, until time.Time) ([]Row, error)
	// PendingOutbox returns up to limit entries not yet marked relayed,
	// oldest (lowest Seq) first; none for a limit below 1.
	PendingOutbox(ctx context.Context, limit int) ([]OutboxEntry, error)
	// MarkRelayed records that the entry was published (and confirmed), so
	// PendingOutbox no longer returns it. Marking it again is a no-op;
	// ErrNotFound if no entry has that Seq.
	MarkRelayed(ctx context.Context, seq int64) error
}

// Users is seed 004's users table.
type Users interface {
	// InsertUsers inserts the batch in one transaction: all of it, or, when
	// any user's id or email is taken (by a stored user or another in the
	// batch), none of it and an error wrapping ErrDuplicate: one bad row
	// fails the whole batch, as in the seed.
	InsertUsers(ctx context.Context, users []User) error
	// InsertUsersSkipping inserts each user whose id and email are free
	// (INSERT … ON CONFLICT DO NOTHING, per row) and returns the indexes,
	// in increasing order, of those it skipped because one was taken. Any
	// other error stores none of the batch.
	InsertUsersSkipping(ctx context.Context, users []User) (skipped []int, err error)
	// CountUsers returns how many users are stored.
	CountUsers(ctx context.Context) (int, error)
}
