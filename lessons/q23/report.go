package q23

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/queuelab/qlab/lessons/measure"
	"github.com/queuelab/qlab/lessons/versions"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/seeds/raffle"
)

// Measured is what a part's run gave, read once it is done.
type Measured struct {
	Batches      []int // the size of each insert, in order
	Inserted     int   // users whose insert committed (acked)
	Parked       int   // users parked in the DLQ
	Deliveries   int   // attempts of every user together
	Added        int   // rows the table gained
	P50, Max     int64 // ms from publish to insert, of the inserted users
	UsersPerSec  float64
	ParkedReason map[string]string
}

// Measured reads what p's run measured.
func (p *part) Measured() Measured {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := Measured{Batches: slices.Clone(p.batches), Inserted: len(p.inserted), Parked: len(p.parked),
		Added: p.added, ParkedReason: map[string]string{}}
	var lat []int64
	var last int64
	for id, at := range p.inserted {
		lat = append(lat, (at - p.published[id]).Milliseconds())
		last = max(last, at.Milliseconds())
	}
	for _, n := range p.attempts {
		m.Deliveries += n
	}
	for id, why := range p.parked {
		m.ParkedReason[id] = why
	}
	if len(lat) > 0 {
		m.P50, m.Max = measure.Percentile(lat, 50), measure.Percentile(lat, 100)
	}
	if last > 0 {
		m.UsersPerSec = float64(m.Inserted) / (float64(last) / 1000)
	}
	return m
}

// ratesTable is parts (a) and (b): batch sizes, latency, throughput.
func ratesTable(parts []*part, db string) render.Table {
	t := render.Table{
		Title: fmt.Sprintf("Batches of up to %d users or %s, %d batchers (%s, %s)", BatchSize,
			BatchWait, Batchers, parts[0].on, db),
		Header: []string{"part", "users", "inserts", "users/insert", "latency p50", "max",
			"users/s"},
		Notes: []string{
			fmt.Sprintf("The seed's batch of %d is scaled to %d; its timeout (%s), %d "+
				"processors and %d batchers are kept.", SeedBatchSize, BatchSize, BatchWait,
				Processors, Batchers),
			"Latency: lesson time from the API's publish to the insert that stored the user; " +
				"users/s: users stored over the time from the first publish to the last insert.",
			fmt.Sprintf("At a low rate no batch fills: each waits out its %s and most users "+
				"wait long. At a high rate the batches fill before the timer.", BatchWait),
			fmt.Sprintf("With prefetch %d the broker hands a batcher at most %d unacked "+
				"messages: every batch waits out %s with %d, however many are queued.",
				SmallPrefetch, SmallPrefetch, BatchWait, SmallPrefetch),
			fmt.Sprintf("The seed sets no prefetch (its configuration lists none), and a "+
				"Broadway producer given no :qos has broadway_rabbitmq %s ask for "+
				"prefetch_count %d (amqp_client.ex, its default). Its batch "+
				"of %d can never fill: run unscaled with %d users queued at once and one "+
				"producer's window (Broadway's default producer concurrency is 1), each batch "+
				"holds %d and waits out %s.", versions.BroadwayRabbitMQ, BroadwayPrefetch, SeedBatchSize, BroadwayUsers,
				BroadwayPrefetch, BatchWait),
		},
	}
	for _, p := range parts {
		m := p.Measured()
		mean := 0.0
		if len(m.Batches) > 0 {
			mean = float64(m.Inserted) / float64(len(m.Batches))
		}
		t.Rows = append(t.Rows, []string{p.Title[4:], strconv.Itoa(p.Users),
			strconv.Itoa(len(m.Batches)), fmt.Sprintf("%.1f (max %d)", mean, slices.Max(m.Batches)),
			measure.FmtMs(m.P50), measure.FmtMs(m.Max), fmt.Sprintf("%.1f", m.UsersPerSec)})
	}
	return t
}

// poisonTable is parts (c) and (d): one taken email in a batch.
func poisonTable(parts []*part, db string) render.Table {
	t := render.Table{
		Title:  fmt.Sprintf("One taken email in a batch of %d (%s, %s)", BatchSize, parts[0].on, db),
		Header: []string{"handling", "users", "stored", "in DLQ", "deliveries", "rows added"},
		Notes: []string{
			fmt.Sprintf("%s was stored first; users %s and %s register %s again.", Taken.ID,
				parts[0].user((BatchSize+1)/2).ID, parts[1].user((BatchSize+1)/2).ID, Taken.Email),
			fmt.Sprintf("The seed counts retries in %s and retries every user of the failed "+
				"batch through %s (10 s): the healthy ones with the bad one, %d deliveries "+
				"each, then the DLQ. That header is the RaffleAPI's way; RabbitMQ owns the x- "+
				"prefix (Q13), so the fix counts in %s.", SeedRetryHeader, raffle.RetryQueue,
				MaxAttempts, parts[1].header()),
			"The fix settles each message on its own, as Broadway's Message.failed/2 marks " +
				"one message of a batch. It inserts row by row with ON CONFLICT DO NOTHING in " +
				"one transaction; the " +
				"skipped row is parked at once (no retry can free the email), the rest are " +
				"acked and never come back. Only a failed row is retried: a database error " +
				"fails every row of the batch, and each then spends its own budget.",
			"rows added is counted in the users table after the part: it equals stored, the " +
				"users whose summary says done.",
		},
	}
	for _, p := range parts {
		m := p.Measured()
		how := "the fix: each message on its own"
		if p.Seed {
			how = "the seed: the batch fails whole"
		}
		t.Rows = append(t.Rows, []string{how, strconv.Itoa(p.Users), strconv.Itoa(m.Inserted),
			strconv.Itoa(m.Parked), strconv.Itoa(m.Deliveries), strconv.Itoa(m.Added)})
	}
	return t
}
