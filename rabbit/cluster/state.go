package cluster

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrNoCluster means no state file records a cluster.
var ErrNoCluster = errors.New("no cluster recorded")

// DefaultStateFile is where the qlab command records the cluster it
// started: os.UserCacheDir()/qlab/cluster.json.
func DefaultStateFile() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "qlab", "cluster.json"), nil
}

// save writes the state file (atomically: a crash leaves the old or the
// new one; readable by this user only: a Docker cluster's cookie is in
// it), if the cluster has one.
func (c *Cluster) save() error {
	if c.file == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.file), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.file)
}

// Load reads the cluster recorded in file, to reach it (status, kill,
// revive) or remove it (Down) from another process than the one that
// started it. The error wraps ErrNoCluster when file does not exist.
// progress receives Down's and Revive's lines; nil discards them.
func Load(file string, progress io.Writer) (*Cluster, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoCluster, file)
	}
	if err != nil {
		return nil, err
	}
	c := &Cluster{file: file, progress: cmp.Or[io.Writer](progress, io.Discard)}
	if err := json.Unmarshal(b, &c.state); err != nil {
		return nil, fmt.Errorf("reading %s: %v (remove it if no cluster runs)", file, err)
	}
	switch c.Kind {
	case Local:
		c.drv = &localDriver{}
	case Docker:
		c.drv = &dockerDriver{cookie: c.Cookie} // connects on first use
	default:
		return nil, fmt.Errorf("reading %s: unknown cluster kind %q", file, c.Kind)
	}
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("reading %s: %v", file, err)
	}
	return c, nil
}

// LoadRecorded is Load of DefaultStateFile: the cluster `qlab broker
// cluster up` started, for a lesson that needs one.
func LoadRecorded(progress io.Writer) (*Cluster, error) {
	file, err := DefaultStateFile()
	if err != nil {
		return nil, err
	}
	return Load(file, progress)
}

// StateFile is where the cluster is recorded, "" if nowhere.
func (c *Cluster) StateFile() string { return c.file }

// check refuses a state file Up could not have written: a node directory
// outside the cluster's own (Down deletes them) or a nameless node.
func (c *Cluster) check() error {
	if len(c.Nodes) == 0 || c.ID == "" {
		return errors.New("no nodes recorded")
	}
	for _, n := range c.Nodes {
		if n.Name == "" || n.Short == "" || n.Port == 0 {
			return fmt.Errorf("node %q is incomplete", n.Short)
		}
		if c.Kind == Local && n.Root != c.Root {
			return fmt.Errorf("node %s runs in chroot %q, not the cluster's %q", n.Short, n.Root, c.Root)
		}
		if c.Kind == Local && (filepath.Base(c.Dir) != c.ID || n.Dir != filepath.Join(c.Dir, n.Short)) {
			return fmt.Errorf("node %s's directory %q is not under the cluster's own", n.Short, n.Dir)
		}
	}
	return nil
}
