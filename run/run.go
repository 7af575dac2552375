// Package run is the one way a front end starts a lesson: `qlab run`,
// `qlab tui` and `qlab compare` all go through it, and `qlab serve` takes
// its queue names from it (NamesFor). It checks a Request (backend,
// names, prefix), finds a broker for a broker run, picks the names the run
// declares under, and starts the lesson with lesson.Run, the caller's
// logger and sinks. Package main keeps only flags and output.
//
//	req := run.Request{Lesson: l, Options: lesson.Options{Speed: 10, Logger: log}}
//	ready, err := run.Prepare(ctx, req) // checked, broker found, names picked
//	res, err := ready.Start(ctx, render.LogSink{W: os.Stdout})
package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/rabbit/cluster"
)

// ErrInvalid marks a request that cannot run as asked (a backend the
// lesson lacks, a bad naming or prefix): the caller's mistake, which a CLI
// reports as a usage error.
var ErrInvalid = errors.New("invalid run request")

// invalid is an error of the caller's: it says only what is wrong, and
// errors.Is(err, ErrInvalid) holds.
type invalid struct{ error }

func (e invalid) Is(target error) bool { return target == ErrInvalid }
func (e invalid) Unwrap() error        { return e.error }

func invalidf(format string, args ...any) error { return invalid{fmt.Errorf(format, args...)} }

// Naming says which names a broker run declares under.
type Naming string

// The namings a request may ask for.
const (
	// PerRun, the default, puts every name under a fresh private prefix,
	// so runs never collide.
	PerRun Naming = "run"
	// Exact declares the seed document's exact names (for the management
	// UI), under a person's Prefix if one is given.
	Exact Naming = "exact"
)

// Request is what a front end asks for.
type Request struct {
	Lesson lesson.Lesson
	// Options are the run's options. Backend "" means the lesson's
	// default; Broker "" means Prepare finds one (Discover) for a broker
	// run; Names unset means Prepare picks them from Naming and Prefix.
	Options lesson.Options
	Naming  Naming // "" is PerRun; "seed" is an old spelling of Exact
	Prefix  string // with Exact: a person's prefix (rabbit.CheckPrefix)
	// Discover is how Prepare looks for a broker (RABBITMQ_URL, the
	// default URL, Docker when allowed).
	Discover rabbit.DiscoverOptions
}

// Check validates req without any I/O and returns it with its naming
// spelled canonically. Every error wraps ErrInvalid.
func Check(req Request) (Request, error) {
	naming, err := CheckNaming(req.Naming, req.Prefix)
	if err != nil {
		return req, err
	}
	req.Naming = naming
	if req.Options.Backend == "" {
		req.Options.Backend = req.Lesson.DefaultBackend()
	}
	if req.Lesson.Runner(req.Options.Backend) == nil {
		return req, invalid{lesson.ErrNoBackend{Lesson: req.Lesson, Backend: req.Options.Backend}}
	}
	return req, nil
}

// CheckNaming validates a naming and prefix and returns the naming spelled
// canonically. Every error wraps ErrInvalid.
func CheckNaming(naming Naming, prefix string) (Naming, error) {
	switch naming {
	case "":
		naming = PerRun
	case "seed": // the old spelling, which read too much like --seed
		naming = Exact
	case PerRun, Exact:
	default:
		return naming, invalidf("--names must be run or exact, got %q", naming)
	}
	if prefix == "" {
		return naming, nil
	}
	if naming != Exact {
		return naming, invalidf("--prefix goes with --names exact (run names have a private prefix already)")
	}
	if err := rabbit.CheckPrefix(prefix); err != nil {
		return naming, invalidf("--prefix: %v", err)
	}
	return naming, nil
}

// Ready is a checked request with its broker and names settled: Start runs
// it.
type Ready struct {
	Lesson  lesson.Lesson
	Options lesson.Options
	// Broker is the broker a broker run found (zero in memory).
	Broker rabbit.Broker
}

// Prepare checks req, finds a broker for a broker run whose Options.Broker
// is empty (for a lesson that needs a cluster, Lesson.Cluster, always the
// cluster `qlab broker cluster up` recorded), runs the lesson's
// Preflight on it (an error wrapping lesson.ErrBrokerTooOld for a broker
// too old for the lesson), and picks its names. A broker that cannot be
// found is a *rabbit.NoBrokerError (its Details say where it looked).
func Prepare(ctx context.Context, req Request) (Ready, error) {
	req, err := Check(req)
	if err != nil {
		return Ready{}, err
	}
	r := Ready{Lesson: req.Lesson, Options: req.Options}
	if r.Options.Backend != lab.Rabbit {
		return r, nil
	}
	if r.Lesson.Cluster { // whatever broker a front end found: this lesson's is the cluster
		if r.Broker, err = recordedCluster(ctx, r.Lesson); err != nil {
			return Ready{}, err
		}
		r.Options.Broker = r.Broker.URL
	}
	if r.Options.Broker == "" {
		if r.Broker, err = rabbit.Discover(ctx, req.Discover); err != nil {
			return Ready{}, err
		}
		r.Options.Broker = r.Broker.URL
	}
	if r.Lesson.Preflight != nil { // a lesson the broker may be too old for (lesson.ErrBrokerTooOld)
		if err := r.Lesson.Preflight(ctx, r.Options.Broker); err != nil {
			return Ready{}, err
		}
	}
	if r.Options.Names == nil {
		r.Options.Names = rabbitenv.Of(NamesFor(req.Naming, req.Prefix))
	}
	return r, nil
}

// ErrNoCluster marks a cluster lesson's run with no cluster to run on:
// the error says in one line how to start one, and a CLI exits 2.
var ErrNoCluster = errors.New("no cluster is up")

// recordedCluster is the cluster `qlab broker cluster up` recorded, as
// the broker of lesson l, which needs one (Lesson.Cluster): its nodes'
// URLs as one list. RABBITMQ_URL, when set, must list that cluster's
// nodes: the lesson stops one of them, and only a cluster qlab started
// can be stopped. Every node must run. It never tries the single broker.
func recordedCluster(ctx context.Context, l lesson.Lesson) (rabbit.Broker, error) {
	c, err := cluster.LoadRecorded(nil)
	if errors.Is(err, cluster.ErrNoCluster) {
		return rabbit.Broker{}, fmt.Errorf("%w: lesson %d runs on a three-node RabbitMQ cluster; "+
			"start one with: qlab broker cluster up", ErrNoCluster, l.Number())
	}
	if err != nil {
		return rabbit.Broker{}, err
	}
	if env := strings.TrimSpace(os.Getenv(rabbit.EnvURL)); env != "" {
		for _, u := range rabbit.SplitURLs(env) {
			if !slices.Contains(c.URLs(), u) {
				return rabbit.Broker{}, invalidf("RABBITMQ_URL names %s, not a node of the cluster "+
					"qlab broker cluster up started, and lesson %d stops one of its nodes: unset "+
					"RABBITMQ_URL, or set it to the list qlab broker cluster up prints",
					rabbit.Redact(u), l.Number())
			}
		}
	}
	for _, n := range c.Nodes {
		if st := c.State(ctx, n); st != cluster.Running {
			return rabbit.Broker{}, fmt.Errorf("%w: node %s of the recorded cluster is %s; "+
				"qlab broker cluster revive %s, or qlab broker cluster down and up", ErrNoCluster, n.Short, st, n.Short)
		}
	}
	b, err := rabbit.Probe(ctx, c.URLList(), "the cluster qlab broker cluster up recorded")
	if err != nil {
		return rabbit.Broker{}, fmt.Errorf("%w: the recorded cluster does not answer (%v); "+
			"qlab broker cluster down, then up", ErrNoCluster, err)
	}
	return b, nil
}

// Start runs the prepared lesson, every event to sinks, and always ends
// the stream with one summary per task (lesson.Run). A run that lost
// tasks its lesson does not lose on purpose fails with a
// *lesson.LostError naming them and their reasons (lesson.CheckLost).
func (r Ready) Start(ctx context.Context, sinks ...lab.Sink) (lesson.Result, error) {
	res, err := lesson.Run(ctx, r.Lesson, r.Options, sinks...)
	return res, lesson.CheckLost(r.Lesson, r.Options, res, err)
}

// NamesFor are the broker names of a run with naming and prefix (checked
// by Check): a fresh private prefix, the seed's under a person's prefix,
// or the seed's own.
func NamesFor(naming Naming, prefix string) rabbit.Names {
	if naming != Exact {
		return rabbit.RunNames()
	}
	if prefix == "" {
		return rabbit.SeedNames()
	}
	if names, err := rabbit.PersonNames(prefix); err == nil {
		return names
	}
	return rabbit.SeedNames()
}

// PrefixNote names the prefix a broker run declares under and the command
// that removes what it leaves if it is killed; "" for the seed's own names
// or no broker.
func (r Ready) PrefixNote() string { return PrefixNote(r.Options.Names) }

// PrefixNote is Ready.PrefixNote for any run declaring under names (qlab
// serve's too).
func PrefixNote(names *lesson.Names) string {
	if names == nil || names.Prefix == "" {
		return ""
	}
	p := strings.TrimSuffix(names.Prefix, ".")
	return fmt.Sprintf("This run's queues are under the prefix %s; if it is killed, remove them with: qlab broker clean --prefix %s", p, p)
}

// FindBroker looks for a broker without starting one (no Docker), for a
// view that offers the broker backend (the TUI): RABBITMQ_URL's own
// failure when it is set, else one line on how to start one.
func FindBroker(ctx context.Context, opts rabbit.DiscoverOptions) (rabbit.Broker, error) {
	opts.Docker = false
	b, err := rabbit.Discover(ctx, opts)
	var nb *rabbit.NoBrokerError
	switch {
	case errors.As(err, &nb) && nb.EnvURL:
		return b, err // RABBITMQ_URL is the only broker tried: say what is wrong with it
	case errors.Is(err, rabbit.ErrNoBroker):
		return b, errors.New("none answers; start one with `rabbitmq-server -detached` (or qlab broker up with Docker)")
	}
	return b, err
}
