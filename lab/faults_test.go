package lab

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The switchboard breaks what was registered and is still open, once;
// CloseHolding waits for a holder within its bound, oldest first.
func TestFaults(t *testing.T) {
	f := &Faults{}
	var cut []int
	f.AddConn(func() { cut = append(cut, 1) })
	remove := f.AddConn(func() { cut = append(cut, 2) })
	remove() // that connection closed on its own
	assert.Equal(t, 1, f.CutConnections())
	assert.Equal(t, []int{1}, cut)
	assert.Equal(t, 0, f.CutConnections(), "a cut connection is not cut again")

	_, ok := f.CloseHolding(context.Background(), 10*time.Millisecond)
	assert.False(t, ok, "no channel holds a delivery")
	var closed []string
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.AddHolder("W1 holding A", func() { closed = append(closed, "A") })
		f.AddHolder("W2 holding B", func() { closed = append(closed, "B") })
	}()
	what, ok := f.CloseHolding(context.Background(), 5*time.Second)
	assert.True(t, ok)
	assert.Equal(t, "W1 holding A", what)
	assert.Equal(t, []string{"A"}, closed)

	var none *Faults
	none.AddConn(func() { t.Fatal("nil registers nothing") })()
	assert.Equal(t, 0, none.CutConnections())
	assert.Nil(t, FaultsFrom(context.Background()))
	assert.Same(t, f, FaultsFrom(WithFaults(context.Background(), f)))
}
