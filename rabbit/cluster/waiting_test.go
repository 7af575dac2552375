package cluster

import (
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// A step over 5 s says what it waits for every 5 s; a short one says
// nothing; the step's error comes back.
func TestWaitingSaysWhatItWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		c := &Cluster{progress: &out}
		err := c.waiting("n3: rabbitmqctl start_app", func() error {
			time.Sleep(12 * time.Second)
			return errors.New("boom")
		})
		assert.EqualError(t, err, "boom")
		assert.Equal(t, "  … still waiting for n3: rabbitmqctl start_app (5s)\n"+
			"  … still waiting for n3: rabbitmqctl start_app (10s)\n", out.String())

		out.Reset()
		assert.NoError(t, c.waiting("n2: rabbitmqctl stop_app", func() error { time.Sleep(time.Second); return nil }))
		assert.Empty(t, out.String())
	})
}
