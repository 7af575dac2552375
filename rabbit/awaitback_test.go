package rabbit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/queuelab/qlab/rabbit"
)

// AwaitBack reads the depth until it shows what was handed back, stops
// at the first error, and gives up quietly when its bound (here the
// caller's context) ends: a read that leaves messages in place returns
// once they are in place, or as soon as it cannot tell.
func TestAwaitBackWaitsForTheHandedBack(t *testing.T) {
	depths := []int{1, 2, 4, 9}
	reads := 0
	depth := func(context.Context) (int, error) {
		reads++
		return depths[min(reads, len(depths))-1], nil
	}
	rabbit.AwaitBack(context.Background(), 4, depth)
	assert.Equal(t, 3, reads, "1 and 2 are short of 4: read again; 4 is all back")

	reads = 0
	rabbit.AwaitBack(context.Background(), 4, func(context.Context) (int, error) {
		reads++
		return 0, errors.New("no answer")
	})
	assert.Equal(t, 1, reads, "an error ends the wait")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	reads = 0
	rabbit.AwaitBack(ctx, 4, func(context.Context) (int, error) { reads++; return 3, nil })
	assert.Error(t, ctx.Err(), "returned only once the bound ended")
	assert.Greater(t, reads, 1, "read again until then")
}
