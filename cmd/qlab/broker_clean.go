package main

import (
	"cmp"
	"context"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/queuelab/qlab/flow"
	"github.com/queuelab/qlab/lesson"
	"github.com/queuelab/qlab/lessons"
	"github.com/queuelab/qlab/lessons/runstore"
	"github.com/queuelab/qlab/rabbit"
	"github.com/queuelab/qlab/render"
	"github.com/queuelab/qlab/serve"
	"github.com/queuelab/qlab/store/sqlstore"
)

// cleanFlags are the flags of `qlab broker clean`.
type cleanFlags struct {
	prefix  string
	created string
	lesson  string
	dryRun  bool
}

func (f *cleanFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.prefix, "prefix", "", "clean: the killed run's prefix (qlab-3f9a1c for a run's own, or yours from --names exact --prefix)")
	fs.StringVar(&f.lesson, "lesson", "", "clean: only lesson N's queues (default: every broker lesson's)")
	fs.StringVar(&f.created, "created", "", "clean: what ended test processes recorded in DIR (make test's; see CONTRIBUTING.md)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "clean: list what would be deleted, delete nothing")
}

// topologies are what the lessons f names declare on the broker (all of
// them, and qlab serve's, without --lesson).
func (f cleanFlags) topologies() ([]flow.Topology, error) {
	pick := lessons.All
	if f.lesson != "" {
		l, err := lessons.Parse(f.lesson)
		if err != nil {
			return nil, usagef("--lesson: %v", err)
		}
		if l.Topologies == nil {
			return nil, usagef("--lesson %s: lesson %s declares nothing on the broker", f.lesson, l.ID)
		}
		pick = []lesson.Lesson{l}
	}
	var topos []flow.Topology
	for _, l := range pick {
		if l.Topologies != nil {
			topos = append(topos, l.Topologies()...)
		}
	}
	if f.lesson == "" { // and what qlab serve declares
		topos = append(topos, serve.Topology())
	}
	return topos, nil
}

// brokerClean deletes what a killed run left under f.prefix and lists it.
func brokerClean(ctx context.Context, stdout io.Writer, f cleanFlags) error {
	if f.created != "" {
		if f.prefix != "" || f.lesson != "" {
			return usagef("clean takes --prefix P or --created DIR, not both")
		}
		return brokerCleanCreated(ctx, stdout, f.created, f.dryRun)
	}
	if f.prefix == "" {
		return usagef("clean needs --prefix P: the prefix of the run to clean up (it never touches the seed's own names)")
	}
	names, err := rabbit.PersonNames(strings.TrimSuffix(f.prefix, "."))
	if err != nil {
		return usagef("--prefix: %v", err)
	}
	topos, err := f.topologies()
	if err != nil {
		return err
	}
	b, err := rabbit.Discover(ctx, discoverOptions)
	if err != nil {
		return err
	}
	res, err := rabbit.Clean(ctx, b.URL, names, topos, f.dryRun)
	stores, storeErr := runstore.Clean(ctx, strings.TrimSuffix(names.Prefix, "."), os.Getenv(sqlstore.EnvURL), f.dryRun)
	writeCleaned(stdout, names.Prefix, res, stores, f.dryRun)
	return cmp.Or(err, storeErr)
}

// writeCleaned lists what Clean deleted and what it left, one line each:
// on the broker (res) and of the run's status stores (stores).
func writeCleaned(w io.Writer, prefix string, res rabbit.CleanResult, stores runstore.Cleaned, dryRun bool) {
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	for _, q := range res.Deleted {
		printWrapped(w, "  ", "%s queue %s (%s)", verb, q.Name, render.Count(q.Messages, "ready message"))
	}
	for _, x := range res.Exchanges {
		printWrapped(w, "  ", "%s exchange %s", verb, x)
	}
	for _, q := range res.InUse {
		printWrapped(w, "  ", "left queue %s: %d consumers attached, so a run with this prefix is still going", q.Name, q.Consumers)
	}
	for _, s := range stores.Schemas {
		printWrapped(w, "  ", "%s schema %s (a killed run's status store)", verb, s)
	}
	for _, d := range stores.Dirs {
		printWrapped(w, "  ", "%s dir %s (a killed run's SQLite store)", verb, d)
	}
	for _, s := range stores.InUse {
		printWrapped(w, "  ", "left store %s: its run is still going", s)
	}
	if len(res.Deleted)+len(res.Exchanges)+len(res.InUse)+len(stores.Schemas)+len(stores.Dirs)+len(stores.InUse) == 0 {
		printWrapped(w, "  ", "nothing to clean under %s: no queue or exchange a lesson declares is on the broker "+
			"under it, and no status store (a run killed before its first declare left nothing; one that ended "+
			"cleaned up after itself)", strings.TrimSuffix(prefix, "."))
		return
	}
	printWrapped(w, "  ", "%s %d, left %d in use; %d lesson names not on the broker under %s "+
		"(clean knows only the names lessons declare: a hold queue of foreign messages, <run>.foreign, stays)",
		verb, len(res.Deleted)+len(res.Exchanges), len(res.InUse), res.Absent, prefix)
}
