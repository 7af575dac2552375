package class

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrFull is Board.Add's answer to a new student once the room holds its
// maximum: the server says 503 rather than grow without bound.
var ErrFull = errors.New("the class is full")

// Cell is a student's latest verdict on one item.
type Cell struct {
	Status Status    `json:"status"`
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
}

// StudentProgress is one row of the room.
type StudentProgress struct {
	Name     string          `json:"name"`
	Done     int             `json:"done"` // items whose latest verdict is Done
	LastSeen time.Time       `json:"last_seen"`
	Cells    map[string]Cell `json:"cells"` // by item; an item not started has none
}

// Progress is the whole room: the items in course order and one row per
// student, sorted by name.
type Progress struct {
	Items    []string          `json:"items"`
	Students []StudentProgress `json:"students"`
}

// Board holds a class's progress in memory. Its methods are safe for
// concurrent use.
type Board struct {
	items []string
	max   int

	mu       sync.Mutex
	students map[string]*StudentProgress
	changed  chan struct{} // closed at the next change, then replaced
}

// NewBoard returns an empty board that accepts reports on items (in the
// order the page shows them) from at most maxStudents students.
func NewBoard(items []string, maxStudents int) *Board {
	return &Board{
		items:    slices.Clone(items),
		max:      maxStudents,
		students: map[string]*StudentProgress{},
		changed:  make(chan struct{}),
	}
}

// Items returns the items the board accepts, in course order.
func (b *Board) Items() []string { return slices.Clone(b.items) }

// Add records r, received at now, as its student's latest verdict on its
// item. It returns an error wrapping ErrBadReport when r is invalid and
// ErrFull when r's student is new and the room is full.
func (b *Board) Add(r Report, now time.Time) error {
	if err := r.Validate(b.items); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.students[r.Student]
	if !ok {
		if len(b.students) >= b.max {
			return ErrFull
		}
		s = &StudentProgress{Name: r.Student, Cells: map[string]Cell{}}
		b.students[r.Student] = s
	}
	if old, ok := s.Cells[r.Item]; ok && old.Status == Done {
		s.Done--
	}
	s.Cells[r.Item] = Cell{Status: r.Status, Detail: r.Detail, At: now.UTC()}
	if r.Status == Done {
		s.Done++
	}
	s.LastSeen = now.UTC()
	close(b.changed)
	b.changed = make(chan struct{})
	return nil
}

// Changed returns a channel closed at the board's next change.
func (b *Board) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Progress returns a copy of the room as it is now.
func (b *Board) Progress() Progress {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := Progress{Items: slices.Clone(b.items), Students: []StudentProgress{}}
	for _, s := range b.students {
		c := *s
		c.Cells = make(map[string]Cell, len(s.Cells))
		for k, v := range s.Cells {
			c.Cells[k] = v
		}
		p.Students = append(p.Students, c)
	}
	slices.SortFunc(p.Students, func(a, b StudentProgress) int { return cmp.Compare(a.Name, b.Name) })
	return p
}
