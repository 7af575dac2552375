package exercises

import (
	"testing"

	"github.com/stretchr/testify/assert"

	batchsettle "github.com/queuelab/qlab/exercises/19_batch_settle"
	dlqbounded "github.com/queuelab/qlab/exercises/20_dlq_bounded"
	"github.com/queuelab/qlab/lessons/q23"
	"github.com/queuelab/qlab/lessons/q24"
)

// Exercises 19 and 20 spell their lesson's numbers and names out instead
// of importing the lesson (which links the SQL drivers into every
// re-check's build): they stay the lesson's.
func TestRaffleExercisesUseTheirLessonsNames(t *testing.T) {
	assert.Equal(t, q23.BatchSize, batchsettle.BatchSize)
	assert.Equal(t, q23.MaxAttempts, batchsettle.MaxAttempts)
	assert.Equal(t, q24.DLQWait, dlqbounded.DLQWait)
	assert.Equal(t, q24.Parked, dlqbounded.Parked)
	assert.Equal(t, q24.Topology(), dlqbounded.Topology())
}
