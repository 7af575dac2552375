package idempotent

// MailServer sends the email of a task to its customer. With a non-empty
// idempotency key it has seen before it sends nothing and returns the
// message id of the email it sent for that key (as Stripe, Postmark or
// SES do with an idempotency key); with "" it always sends.
type MailServer interface {
	Send(task, key string) (msgID string, err error)
}

// Store is your database. Each method is one atomic statement, and what
// it holds outlives any failure of your handler. Get reads key; Put
// writes value under key (an upsert); Insert writes value under key
// unless key is there and reports whether it wrote (INSERT … ON CONFLICT
// DO NOTHING); Delete removes key.
type Store interface {
	Get(key string) (value string, ok bool)
	Put(key, value string) error
	Insert(key, value string) (inserted bool, err error)
	Delete(key string) error
}
