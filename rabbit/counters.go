package rabbit

import amqp "github.com/rabbitmq/amqp091-go"

// The counters a broker writes on a delivery, besides x-death. A quorum
// queue counts a message's returns in x-delivery-count; RabbitMQ 4.3
// narrowed that count to failed deliveries and added x-acquired-count,
// which counts every time a consumer took the message (the 4.3.0 release
// notes; rabbitmq-server pull requests #13885 and #15387).
const (
	DeliveryCountHeader = "x-delivery-count"
	AcquiredCountHeader = "x-acquired-count"
)

// HeaderCount reads the integer header key of headers; ok is false when
// the header is absent or not an integer the broker would write.
func HeaderCount(headers amqp.Table, key string) (n int64, ok bool) {
	v, present := headers[key]
	if !present {
		return 0, false
	}
	return integer(v)
}

// Total is how many times the message died, in any queue and for any
// reason (saturating at math.MaxInt64).
func (ds Deaths) Total() int64 {
	return ds.sum(func(Death) bool { return true })
}
