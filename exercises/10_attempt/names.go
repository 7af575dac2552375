package attempt

// RetriesHeader is the worker's own retry counter: how many times the
// message was retried so far. It has no "x-" prefix because RabbitMQ
// keeps x- headers for itself.
const RetriesHeader = "qlab-retries"

// MaxRetries is the largest count (of retries, or of rejects in x-death)
// a worker of the lab ever writes or causes; a larger one was not written
// by it and is refused.
const MaxRetries = 100
