package cuda

import (
	"fmt"
	"sync"
)

// DefaultStreams is how many streams a backend's views (engine.Queuer)
// spread over when Options.Streams is 0.
const DefaultStreams = 4

// Queues hands a device's streams to views (Backend.Queue): the least
// used one, created on first need, up to a maximum; with every stream
// taken, views share them (their work then runs in one line, which is
// always correct). Queue ids start at 1 (0 is the default stream). It is
// safe for concurrent use and device-agnostic, so it is tested on the CPU.
type Queues struct {
	mu    sync.Mutex
	users []int // views holding queue i+1
	max   int
}

// NewQueues returns a set of at most max queues (max ≥ 1).
func NewQueues(max int) (*Queues, error) {
	if max < 1 {
		return nil, fmt.Errorf("cuda: %d streams (want at least 1)", max)
	}
	return &Queues{max: max}, nil
}

// Acquire returns the least used queue, calling create (under the set's
// lock) when a new one is due; a create error falls back to sharing an
// existing queue, or is returned when there is none.
func (q *Queues) Acquire(create func() error) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	best := -1
	for i, n := range q.users {
		if best < 0 || n < q.users[best] {
			best = i
		}
	}
	if (best < 0 || q.users[best] > 0) && len(q.users) < q.max {
		err := create()
		if err == nil {
			q.users = append(q.users, 0)
			best = len(q.users) - 1
		} else if best < 0 {
			return 0, err
		}
	}
	q.users[best]++
	return best + 1, nil
}

// Release returns queue id (from Acquire).
func (q *Queues) Release(id int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if id >= 1 && id <= len(q.users) && q.users[id-1] > 0 {
		q.users[id-1]--
	}
}

// Max is the most queues the set makes.
func (q *Queues) Max() int { return q.max }

// Created is how many queues exist.
func (q *Queues) Created() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.users)
}
