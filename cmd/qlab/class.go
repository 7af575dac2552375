package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/queuelab/qlab/class"
	"github.com/queuelab/qlab/exercises"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/render"
)

const classHelp = `Usage:
  qlab class serve [--addr 127.0.0.1:8090] [--public] [--max-students N]
  qlab class join URL --name NAME
  qlab class status
  qlab class leave

The instructor's room. "serve" keeps a live table of every student who
joined: which lessons ran to their end, which exercises pass, and the
first line of each failure. It prints the table here and serves it as a
web page at / (JSON at /api/progress). Students "join" once with the URL
it prints and their name; from then on qlab run reports each lesson that
finished and qlab ex each verdict. A report holds the item, done or
failing, and a failure's first line: no code, no passwords.

serve listens on loopback only, unless --public lets it take a LAN
address (every machine on the network can then read and report).`

func cmdClass(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("class", classHelp)
	addr := fs.String("addr", "127.0.0.1:8090", "serve: host:port to listen on; only loopback unless --public")
	public := fs.Bool("public", false, "serve: allow an --addr that is not loopback, so students on the LAN can join")
	maxStudents := fs.Int("max-students", 200, "serve: how many students the room holds; more get 503")
	name := fs.String("name", "", "join: the name the instructor sees (letters, spaces, up to 40 characters)")
	pos, err := parseInterspersed(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("class needs a command: serve, join, status or leave (see qlab class --help)")
	}
	switch cmd, rest := pos[0], pos[1:]; cmd {
	case "serve":
		if len(rest) > 0 {
			return usagef("class serve takes no arguments, got %q", rest)
		}
		if *maxStudents < 1 || *maxStudents > 10000 {
			return usagef("--max-students must be 1..10000, got %d", *maxStudents)
		}
		return classServe(ctx, *addr, *public, *maxStudents, stdout, stderr)
	case "join":
		if len(rest) != 1 {
			return usagef("class join takes the URL qlab class serve printed: qlab class join http://HOST:PORT --name NAME")
		}
		return classJoin(ctx, rest[0], *name, stdout)
	case "status", "leave":
		if len(rest) > 0 {
			return usagef("class %s takes no arguments", cmd)
		}
		if cmd == "leave" {
			if err := class.Forget(); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "Left the class: qlab no longer reports your progress.")
			return nil
		}
		return classStatus(stdout)
	default:
		return usagef("unknown class command %q (serve, join, status, leave)", cmd)
	}
}

// classItems are the room's columns: every lesson, then every exercise.
func classItems() []string {
	var items []string
	for _, l := range lessons.All {
		items = append(items, l.ID)
	}
	for _, ex := range exercises.All {
		items = append(items, exItem(ex))
	}
	return items
}

// exItem is an exercise's column in the room: "E05".
func exItem(ex exercises.Exercise) string { return fmt.Sprintf("E%02d", ex.Number()) }

func classServe(ctx context.Context, addr string, public bool, maxStudents int, stdout, stderr io.Writer) error {
	f := serveFlags{addr: addr, public: public}
	addr, err := f.listenAddr()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (%v): pick another with --addr", addr, err)
	}
	board := class.NewBoard(classItems(), maxStudents)
	srv := class.NewServer(class.NewHandler(board))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	url := "http://" + reachableAddr(ln.Addr().(*net.TCPAddr))
	fmt.Fprintf(stderr, "qlab class: the room is at %s/ (Ctrl-C stops; progress lives in memory).\n", url)
	fmt.Fprintf(stderr, "Students join with: qlab class join %s --name NAME\n", url)
	if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
		fmt.Fprintln(stderr, "Listening beyond loopback: every machine that reaches this one can read the room and report to it.")
	}
	return classWatch(ctx, board, served, stdout)
}

// classWatch prints the room each time it changes, and every 10 s on a
// terminal so its "seen" column ages, until ctx ends or the server fails.
func classWatch(ctx context.Context, board *class.Board, served <-chan error, stdout io.Writer) error {
	tty := isTerminal(stdout)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		changed := board.Changed()
		width := cmp.Or(terminalWidth(stdout), render.DefaultWidth) // a pipe gets 80, as lessons do
		text := board.Progress().Text(width, time.Now())
		if tty {
			text = "\x1b[H\x1b[2J" + text
		}
		if _, err := io.WriteString(stdout, text+"\n"); err != nil {
			return nil // stdout closed (a pipe's reader left): the server goes on being useless; stop
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return fmt.Errorf("the class server stopped: %w", err)
		case <-changed:
		case <-tick.C:
			if !tty {
				continue
			}
		}
	}
}

// reachableAddr is addr as a student types it: a wildcard listen address
// (0.0.0.0, ::) becomes this machine's first LAN address.
func reachableAddr(addr *net.TCPAddr) string {
	if !addr.IP.IsUnspecified() {
		return addr.String()
	}
	ifaces, _ := net.InterfaceAddrs()
	for _, a := range ifaces {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
			return net.JoinHostPort(ip.IP.String(), fmt.Sprint(addr.Port))
		}
	}
	return net.JoinHostPort("127.0.0.1", fmt.Sprint(addr.Port))
}

func classJoin(ctx context.Context, rawURL, name string, stdout io.Writer) error {
	base, err := class.CheckURL(rawURL)
	if err != nil {
		return usageError{err}
	}
	if name == "" {
		return usagef("class join needs --name: the name your instructor sees")
	}
	if err := class.CheckName(name); err != nil {
		return usagef("--name %q: %v", name, err)
	}
	if _, err := class.Probe(ctx, base); err != nil {
		return err
	}
	m := class.Member{URL: base, Name: name}
	if err := m.Save(); err != nil {
		return fmt.Errorf("could not remember the class: %w", err)
	}
	path, _ := class.ConfigPath()
	fmt.Fprintf(stdout, "Joined %s as %q (remembered in %s).\n", base, name, path)
	fmt.Fprintln(stdout, "qlab run and qlab ex now report each finished lesson and verdict; qlab class leave stops it.")
	return nil
}

func classStatus(stdout io.Writer) error {
	m, ok, err := class.Load()
	if err != nil {
		return err
	}
	if !ok || !m.Joined() {
		fmt.Fprintln(stdout, "Not in a class: qlab class join URL --name NAME joins one.")
		return nil
	}
	fmt.Fprintf(stdout, "In the class at %s as %q.\n", m.URL, m.Name)
	return nil
}

// classReport tells the joined class, if any, what became of item. A
// report that fails says so on warn, in one line, and changes nothing
// else: the lesson's or exercise's own result stands.
func classReport(ctx context.Context, item string, status class.Status, detail string, warn io.Writer) {
	m, ok, err := class.Load()
	if err != nil {
		fmt.Fprintln(warn, "qlab class: "+err.Error())
		return
	}
	if !ok || !m.Joined() {
		return
	}
	if err := m.Send(context.WithoutCancel(ctx), item, status, detail); err != nil {
		fmt.Fprintf(warn, "qlab class: %v (your result stands; qlab class leave stops reporting)\n", err)
	}
}

// reportLesson reports a lesson run that reached its end (or failed); an
// interrupted run reports nothing.
func reportLesson(ctx context.Context, l lesson.Lesson, runErr error, warn io.Writer) {
	switch {
	case errors.Is(runErr, context.Canceled) || ctx.Err() != nil:
	case runErr == nil:
		classReport(ctx, l.ID, class.Done, "", warn)
	default:
		classReport(ctx, l.ID, class.Failing, runErr.Error(), warn)
	}
}

// reportExercise reports an exercise's verdict: passed, or failing with
// what failed first. A compiler's output is never sent (it quotes the
// student's code), only that it does not compile.
func reportExercise(ctx context.Context, r exRun, warn io.Writer) {
	switch r.Status {
	case exSkip:
		return
	case exPass:
		classReport(ctx, exItem(r.Ex), class.Done, "", warn)
	case exFail:
		detail := notYet(r).Error()
		if failed := r.Failed(); len(failed) > 0 {
			detail = "✗ " + failed[0]
		}
		classReport(ctx, exItem(r.Ex), class.Failing, detail, warn)
	default:
		classReport(ctx, exItem(r.Ex), class.Failing, strings.TrimPrefix(notYet(r).Error(), fmt.Sprintf("exercise %d (%s) not passed yet: ", r.Ex.Number(), r.Ex.Lesson)), warn)
	}
}
