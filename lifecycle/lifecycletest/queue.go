package lifecycletest

// wQueue is a first-in first-out queue of states in chunks, so that a
// growing frontier is never copied.
type wQueue struct {
	chunks [][]wState
	head   int
	n      int
}

const wChunk = 1024

func (q *wQueue) len() int { return q.n }

func (q *wQueue) push(s wState) {
	if len(q.chunks) == 0 || len(q.chunks[len(q.chunks)-1]) == wChunk {
		q.chunks = append(q.chunks, make([]wState, 0, wChunk))
	}
	last := &q.chunks[len(q.chunks)-1]
	*last = append(*last, s)
	q.n++
}

func (q *wQueue) pop() wState {
	c := q.chunks[0]
	s := c[q.head]
	c[q.head] = wState{}
	q.head++
	q.n--
	if q.head == wChunk {
		q.chunks, q.head = q.chunks[1:], 0
	}
	return s
}
