package sim

// queue is a FIFO of waiting jobs that reuses its storage: a long run
// pushes and pops millions.
type queue struct {
	items []*job
	head  int
	buf   []*job // scan's scratch
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

// scan offers up to n jobs from the head, oldest first, to keep; those
// it does not keep leave the queue, and the rest keep their order.
func (q *queue) scan(n int, keep func(*job) bool) {
	end := min(q.head+n, len(q.items))
	kept := q.buf[:0]
	for _, j := range q.items[q.head:end] {
		if keep(j) {
			kept = append(kept, j)
		}
	}
	start := end - len(kept)
	clear(q.items[q.head:start])
	copy(q.items[start:end], kept)
	q.head = start
	clear(kept)
	q.buf = kept[:0]
}
