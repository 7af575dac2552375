package created

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestRecordAndRead: what a process records comes back under its pid,
// each name once; a last line a kill cut short (no newline) is not read,
// for a cut prefix would match other runs' queues; files not named by a
// pid are no records.
func TestRecordAndRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made") // Record makes it
	t.Setenv(EnvDir, dir)
	Prefix("qlab-3f9a1c")
	Schema("qlab_3f9a1c_q18_07c2_due")
	Prefix("qlab-3f9a1c")
	if err := os.WriteFile(filepath.Join(dir, "424242"), []byte("prefix qlab-aaaaaa\nprefix qlab-b"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes"), []byte("prefix x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]Record{}
	for _, r := range recs {
		got[r.Pid] = r
	}
	if len(got) != 2 {
		t.Fatalf("want the records of this process and of 424242, got %+v", recs)
	}
	me := got[os.Getpid()]
	if len(me.Prefixes) != 1 || me.Prefixes[0] != "qlab-3f9a1c" || len(me.Schemas) != 1 || me.Schemas[0] != "qlab_3f9a1c_q18_07c2_due" {
		t.Errorf("this process's record: %+v", me)
	}
	if !me.Alive() {
		t.Errorf("this process reads as ended")
	}
	cut := got[424242]
	if len(cut.Prefixes) != 1 || cut.Prefixes[0] != "qlab-aaaaaa" {
		t.Errorf("the record cut short: want only its whole line, got %+v", cut)
	}
	if filepath.Base(me.Path) != strconv.Itoa(os.Getpid()) {
		t.Errorf("record path %s", me.Path)
	}
}

// TestNoDirNoRecord: without EnvDir nothing is written anywhere, and a
// directory that does not exist holds no records.
func TestNoDirNoRecord(t *testing.T) {
	t.Setenv(EnvDir, "")
	t.Chdir(t.TempDir())
	Prefix("qlab-3f9a1c")
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("wrote %v without %s", entries, EnvDir)
	}
	recs, err := Read(filepath.Join(t.TempDir(), "none"))
	if err != nil || len(recs) != 0 {
		t.Errorf("Read of a missing dir: %v, %v", recs, err)
	}
}

// TestSettled: a prefix is settled once every session opened under it
// closed clean; one still open, one whose close left something (no
// closed line), or one with no session at all (a test that declared
// under it by hand) is not.
func TestSettled(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	for _, p := range []string{"qlab-aaaaaa", "qlab-bbbbbb", "qlab-cccccc"} {
		Prefix(p)
	}
	Opened("qlab-aaaaaa")
	Opened("qlab-aaaaaa") // a second part of the same run
	Closed("qlab-aaaaaa")
	Opened("qlab-bbbbbb")
	recs, err := Read(dir)
	if err != nil || len(recs) != 1 {
		t.Fatalf("Read: %+v, %v", recs, err)
	}
	if got := recs[0].Unsettled(); len(got) != 3 || len(recs[0].Settled) != 0 {
		t.Errorf("one of two sessions closed: every prefix unsettled, got unsettled %v, settled %v", got, recs[0].Settled)
	}
	Closed("qlab-aaaaaa")
	recs, err = Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if len(r.Settled) != 1 || r.Settled[0] != "qlab-aaaaaa" {
		t.Errorf("settled = %v, want [qlab-aaaaaa]", r.Settled)
	}
	if got := r.Unsettled(); len(got) != 2 || got[0] != "qlab-bbbbbb" || got[1] != "qlab-cccccc" {
		t.Errorf("unsettled = %v, want the open session's and the session-less prefix", got)
	}
}
