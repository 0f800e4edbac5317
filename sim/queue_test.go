package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/sim/workload"
)

func TestQueueScan(t *testing.T) {
	var q queue
	for i := range 10 {
		q.push(&job{w: workload.Job{GPUs: i}})
	}
	q.pop() // 0
	var seen []int
	q.scan(5, func(j *job) bool { // 1..5: drop the even ones
		seen = append(seen, j.w.GPUs)
		return j.w.GPUs%2 == 1
	})
	assert.Equal(t, []int{1, 2, 3, 4, 5}, seen, "oldest first")
	var left []int
	for q.len() > 0 {
		left = append(left, q.pop().w.GPUs)
	}
	assert.Equal(t, []int{1, 3, 5, 6, 7, 8, 9}, left, "the rest in order")
	q.scan(3, func(*job) bool { return false }) // empty: nothing to do
	assert.Zero(t, q.len())
}
