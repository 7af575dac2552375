package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/lesson/rabbitenv"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/run"
	"github.com/queuelab/qlab/serve"
)

const serveHelp = `Usage: qlab serve [flags]

Serves the seeds' HTTP APIs on 127.0.0.1, in front of the broker, and logs
every request as it arrives (--json: the event stream):

  POST /api/v1/users {"name": ..., "email": ...}
      seed 004's RaffleAPI: publishes the user through raffle_exchange to
      raffle_queue and answers 200 {"id": uuid} before anything is stored.
  POST /api/sequential/schedule-email {"to", "subject", "scheduledTime"}
      seed 001's Q11: publishes the mail to its first delay hop, as lesson
      11's strategy (c) does (scheduledTime is ISO-8601, within a day);
      Q11's router and mail worker take it on until it is sent.

Bad input is a 400 with {"error": ...} (a body that is not application/json
a 415, one that does not arrive within 5 s a 408) and never reaches the
broker. With
publisher confirms (the default) a message the broker surely does not have
is a 503 (send it again); one whose confirm never came is a 504 with its id
(the broker may have it: sending it again may store it twice).
--confirms=false answers 200 anyway, as the seed does. Ctrl-C lets the
requests in flight finish (10 s at most) and deletes the queues and
exchanges the run declared (--keep leaves them). docs/broker.md has a curl
walk-through.`

// serveFlags are the flags of `qlab serve`.
type serveFlags struct {
	addr     string
	port     int
	public   bool
	confirms bool
	keep     bool
	json     bool
	noColor  bool
	names    string
	prefix   string
	verbose  *bool
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "host:port to listen on; only loopback unless --public")
	fs.IntVar(&f.port, "port", 0, "the port to listen on (overrides --addr's port; 0 keeps it)")
	fs.BoolVar(&f.public, "public", false, "allow an --addr that is not loopback: the API takes anyone's requests")
	fs.BoolVar(&f.confirms, "confirms", true, "wait for the broker's publisher confirm before answering 200 (--confirms=false is the seed's way)")
	fs.BoolVar(&f.keep, "keep", false, "leave the queues and exchanges, and what they hold, on the broker at shutdown; qlab broker clean --prefix P removes them")
	fs.BoolVar(&f.json, "json", false, "print the event stream as JSON lines instead of the log")
	fs.BoolVar(&f.noColor, "no-color", false, "plain text, no ANSI colour (NO_COLOR does the same)")
	fs.StringVar(&f.names, "names", "run", "queue names: run (a private per-run prefix) or exact (the seeds' names)")
	fs.StringVar(&f.prefix, "prefix", "", "with --names exact: the seeds' names under your own prefix (alice → alice.raffle_queue)")
	f.verbose = verboseFlag(fs)
}

// listenAddr is the address to listen on: --addr with --port applied,
// refused when it is not loopback and --public is not given.
func (f *serveFlags) listenAddr() (string, error) {
	host, port, err := net.SplitHostPort(f.addr)
	if err != nil {
		return "", usagef("--addr %q: want host:port, e.g. 127.0.0.1:8080", f.addr)
	}
	if f.port < 0 || f.port > 65535 {
		return "", usagef("--port must be 0..65535, got %d", f.port)
	}
	if f.port != 0 {
		port = strconv.Itoa(f.port)
	}
	if !f.public && !isLoopback(host) {
		return "", usagef("--addr %s is not a loopback address: the API would take requests from the network; add --public if you mean it", f.addr)
	}
	return net.JoinHostPort(host, port), nil
}

// isLoopback reports whether host names only this machine: localhost or a
// loopback IP. "" and 0.0.0.0 mean every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	fs := newFlagSet("serve", serveHelp)
	f.register(fs)
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("serve takes no arguments, got %q (see qlab serve --help)", pos)
	}
	addr, err := f.listenAddr()
	if err != nil {
		return err
	}
	// The run's checks and names for --names and --prefix, as qlab run has them.
	rf := runFlags{planFlags: planFlags{speed: 1}, backend: "rabbit", names: f.names, prefix: f.prefix, keep: f.keep}
	if err := rf.check(); err != nil {
		return err
	}
	b, err := discoverBroker(ctx)
	if err != nil {
		return withDetails(err, *f.verbose)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (%v): pick another port with --port", addr, err)
	}
	defer ln.Close()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	out := &watchedOutput{w: stdout, stop: stop}
	v := newServeView(f, out, stdout, stderr)
	stream := lab.NewStream("serve", lab.Rabbit, lab.NewClock(1), v.sink, &v.rec)
	logger := proseLogger(stderr, slog.LevelWarn)
	opts := serve.Options{Confirms: f.confirms, Keep: f.keep, Logger: logger}
	broker, err := serve.OpenBroker(ctx, b, run.NamesFor(run.Naming(rf.names), rf.prefix), opts, stream)
	if err != nil {
		return err
	}
	v.note(serveBanner(reachOf(ln.Addr().String(), net.InterfaceAddrs), f.confirms))
	v.note(run.PrefixNote(rabbitenv.Of(broker.Names())))
	api := serve.New(broker.Pub, stream)
	serveErr := serve.Serve(ctx, ln, api, serve.DrainTimeout)
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), serve.DrainTimeout)
	defer cancel()
	closeErr := broker.Close(cleanup, api.Unknown()...)
	stream.Finish()
	v.results()
	if f.keep {
		v.note("\n" + keptNote(rabbitenv.Of(broker.Names()), invoked()))
	}
	if err := out.Err(); err != nil {
		return fmt.Errorf("%w (%v): the API stopped and deleted the queues it created", errOutputClosed, err)
	}
	return errors.Join(serveErr, closeErr)
}

// serveView is what `qlab serve` shows: the log fitted to the terminal as
// qlab run prints it (or JSON lines with --json, its notes then on
// stderr), and at the end the "what happened" table.
type serveView struct {
	sink  lab.Sink
	page  *render.Page // nil with --json
	notes io.Writer
	rec   lab.Recorder
}

func newServeView(f serveFlags, out io.Writer, stdout, stderr io.Writer) *serveView {
	if f.json {
		return &serveView{sink: render.NewJSONSink(out), notes: stderr}
	}
	page := render.Page{W: out, Color: !f.noColor && colorWanted(stdout), Layout: render.LayoutFor(terminalWidth(stdout))}
	return &serveView{sink: page, page: &page, notes: out}
}

// note prints a note for the person at the terminal; "" prints nothing.
func (v *serveView) note(s string) {
	if s != "" {
		fmt.Fprintln(v.notes, s)
	}
}

// results writes the closing table (not with --json: the summaries say it).
func (v *serveView) results() {
	if v.page != nil && len(v.rec.Events) > 0 {
		v.page.Results(v.rec.Events, nil)
	}
}

// discoverBroker finds the broker as every command does and returns its
// URL (RABBITMQ_URL only when set, else the default URL, else Docker).
func discoverBroker(ctx context.Context) (string, error) {
	b, err := rabbit.Discover(ctx, discoverOptions)
	return b.URL, err
}

// serveBanner says where the API listens (an address one can use, not
// 0.0.0.0), whether others on the network can reach it, what its 200
// means, and a first request to try.
func serveBanner(r reach, confirms bool) string {
	mode := "Publisher confirms on: a 200 means the broker has the message."
	if !confirms {
		mode = "Publisher confirms OFF (the seed's way): a 200 means only that it was sent."
	}
	banner := fmt.Sprintf("qlab serve: listening on %s; Ctrl-C stops.\n", r.local)
	if note := publicNote("the API", r, ""); note != "" {
		banner += note + "\n"
	}
	return banner + fmt.Sprintf("%s\nTry:\n"+
		"  curl -s %s%s \\\n"+
		"    -H 'Content-Type: application/json' \\\n"+
		"    -d '{\"name\":\"John Silva\",\"email\":\"john@example.com\"}'",
		mode, r.local, serve.UsersPath)
}

func ptr[T any](v T) *T { return &v }
