package sim

// queue is a FIFO of waiting jobs that reuses its storage: a long run
// pushes and pops millions.
type queue struct {
	items []*job
	head  int
}

func (q *queue) len() int { return len(q.items) - q.head }

func (q *queue) push(j *job) {
	if q.head > 0 && q.head >= len(q.items)/2 {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, j)
}

func (q *queue) pop() *job {
	j := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	return j
}
