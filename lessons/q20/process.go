package q20

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuelab/qlab/lab"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/seeds/birthday"
	"github.com/queuelab/qlab/store/sqlstore"
)

// The crashing worker is this very program run again: the lesson starts
// its own executable (qlab, or the test binary under go test) with
// EnvWorker set, and this package's init turns that process into the
// worker before main (or the test runner) starts. So `qlab run 20` and
// `go test` crash a real process of their own, with nothing else to build.

// EnvWorker, when set (to a workerConfig as JSON), makes the process Q20's
// crashing worker instead of what it was started as.
const EnvWorker = "QLAB_Q20_WORKER"

func init() {
	if raw, ok := os.LookupEnv(EnvWorker); ok {
		os.Exit(workerMain(raw))
	}
}

// workerConfig is what the worker process needs: where the broker, its
// queue and the store are, its prefetch, each message's step, the speed.
type workerConfig struct {
	AMQP     string          // the broker's URL
	Names    rabbit.Names    // the run's: its queues' names, its app-id
	Store    sqlstore.Config // the same database the lesson opened
	Prefetch int
	Steps    map[string]step // message id → how far to take it
	Speed    float64         // lesson time per real time
}

// workerBound is how long (real time) a worker process lives at most
// beyond its work, whatever happens to the lesson that started it.
const workerBound = 2 * time.Minute

// workTime is the real time the worker's sends take at its speed: at a
// slow speed (the TUI's 0.05×) far more than at the lesson's own.
func (cfg workerConfig) workTime() time.Duration {
	return time.Duration(float64(time.Duration(len(cfg.Steps))*sendTime) / cfg.Speed)
}

// workerMain is the worker process: it consumes the queue with manual
// acks, takes each message to its step, says "holding" and waits to be
// killed. It exits by itself when its stdin closes (the lesson is gone)
// or after workerBound, so it can never outlive the lesson for long.
func workerMain(raw string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "q20 worker:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), workerBound+cfg.workTime())
	defer cancel()
	go func() { // the lesson holds our stdin: EOF means it died
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	if err := consume(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "q20 worker:", err)
		return 1
	}
	return 0
}

// consume is the worker's loop: prefetch cfg.Prefetch, manual acks, each
// delivery taken to its step; then it holds them all until ctx ends.
func consume(ctx context.Context, cfg workerConfig) error {
	db, err := sqlstore.Open(ctx, cfg.Store)
	if err != nil {
		return err
	}
	defer db.Close()
	// A session under the run's names, to tell its messages from anyone
	// else's (Screen), as the run's own consumers do. Never closed: it
	// owns no queue, and the process ends by SIGKILL.
	clock := lab.NewClock(cfg.Speed) // lesson time, as the lesson's own
	s, err := rabbit.Open(ctx, cfg.AMQP, cfg.Names, clock, nil)
	if err != nil {
		return err
	}
	ch, err := s.Connection().Channel()
	if err != nil {
		return err
	}
	if err := ch.Qos(cfg.Prefetch, 0, false); err != nil {
		return err
	}
	deliveries, err := ch.Consume(cfg.Names.Of(birthday.Queue), "", false, // autoAck: no, acks are by hand
		false, false, false, nil) // exclusive, noLocal, noWait
	if err != nil {
		return err
	}
	say := func(what, id string) { fmt.Println(what, id) }
	for n := 0; n < len(cfg.Steps); n++ {
		var d amqp.Delivery
		select {
		case got, ok := <-deliveries:
			if !ok { // no reconnect: this worker is here to die, not to recover
				return errors.New("the broker closed the connection before the kill")
			}
			d = got
		case <-ctx.Done():
			return ctx.Err()
		}
		if !s.Guest().Screen(ctx, birthday.Queue, d) {
			n-- // someone else's, or unreadable: moved to the run's hold queue
			continue
		}
		to, ok := cfg.Steps[d.MessageId]
		if !ok {
			return fmt.Errorf("message %q is none of this worker's", d.MessageId)
		}
		if err := work(ctx, db, d.MessageId, to, clock.Wait, say); err != nil {
			return err
		}
	}
	say(sayHolding, "")
	<-ctx.Done() // holding every unacked message until SIGKILL
	return nil
}

// process is a worker process the lesson started.
type process struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	lines  chan string   // its progress, one line each; closed at its end
	exited chan struct{} // closed once it has exited and been waited for
	stderr bytes.Buffer  // what it said went wrong
	err    error         // cmd.Wait's: "signal: killed" after a kill
	once   sync.Once
}

// startWorker starts the worker process with cfg.
func startWorker(cfg workerConfig) (*process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("q20: cannot find this program to start its worker: %w", err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	p := &process{cmd: exec.Command(exe), lines: make(chan string, 64),
		exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), EnvWorker+"="+string(raw))
	p.cmd.Stderr = &p.stderr
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("q20: starting the worker process: %w", err)
	}
	p.stdin = stdin
	go p.read(stdout)
	return p, nil
}

// read passes the process's lines on until it ends, then waits for it
// (Wait must come after the last read of its stdout).
func (p *process) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		p.lines <- sc.Text()
	}
	close(p.lines)
	p.err = p.cmd.Wait()
	close(p.exited)
}

// Pid is the process's id.
func (p *process) Pid() int { return p.cmd.Process.Pid }

// killBound is how long kill waits for the killed process to be reaped.
const killBound = 10 * time.Second

// kill sends SIGKILL (no handler, no clean-up, no goodbye to the broker:
// the kernel closes its socket) and waits until it is gone, within
// killBound. Calling it again does nothing more.
func (p *process) kill() error {
	p.once.Do(func() {
		_ = p.cmd.Process.Kill() // SIGKILL on Unix
		_ = p.stdin.Close()
		go func() { // drain what it wrote, so read reaches Wait
			for range p.lines {
			}
		}()
	})
	select {
	case <-p.exited:
		return nil
	case <-time.After(killBound):
		return fmt.Errorf("q20: worker process %d still there %s after SIGKILL", p.Pid(), killBound)
	}
}

// exit says how the process ended ("signal: killed").
func (p *process) exit() string {
	<-p.exited
	if p.err == nil {
		return "exit status 0"
	}
	return p.err.Error()
}

// errWorker is the error of a worker process that failed on its own.
func (p *process) errWorker(what string) error {
	<-p.exited
	msg := strings.TrimSpace(p.stderr.String())
	if msg == "" {
		msg = p.exit()
	}
	return fmt.Errorf("q20: the worker process ended before %s: %s", what, msg)
}

var errNoHold = errors.New("q20: the worker process never said it holds its messages")
