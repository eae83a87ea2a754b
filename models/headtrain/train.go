// Package headtrain trains a models.Head on groups of latents (one
// positive, several negatives per query) with gorgonia: listwise softmax
// cross-entropy, Adam, seeded initialisation and shuffling, so the same
// data and seed give the same head.
package headtrain

import (
	"context"
	"errors"
	"fmt"

	"github.com/gleaner-rag/gleaner/models"
)

// Group is one training query: Latents holds 1+K rows of length In, the
// positive first.
type Group struct {
	Latents []float32
}

// Options configures training.
// Every field is used as given; DefaultOptions holds the defaults.
type Options struct {
	Hidden    int     // hidden units (default 16)
	Epochs    int     // passes over the groups (default 30)
	Batch     int     // groups per step (default 32)
	LearnRate float64 // Adam learning rate (default 0.01)
	Seed      uint64  // default 1
}

// DefaultOptions are the training settings `gleaner index` uses.
func DefaultOptions() Options {
	return Options{Hidden: 16, Epochs: 30, Batch: 32, LearnRate: 0.01, Seed: 1}
}

// MaxEpochs and MaxHidden bound training, so a mistyped flag cannot run
// for days or allocate gigabytes.
const (
	MaxEpochs = 10000
	MaxHidden = 4096
)

func (o Options) Validate() error {
	switch {
	case o.Hidden < 1 || o.Hidden > MaxHidden:
		return fmt.Errorf("headtrain: hidden units %d: want 1 to %d", o.Hidden, MaxHidden)
	case o.Epochs < 1 || o.Epochs > MaxEpochs:
		return fmt.Errorf("headtrain: epochs %d: want 1 ≤ epochs ≤ %d", o.Epochs, MaxEpochs)
	case o.Batch < 1:
		return fmt.Errorf("headtrain: batch %d: want ≥ 1", o.Batch)
	case !(o.LearnRate > 0):
		return fmt.Errorf("headtrain: learning rate %v: want > 0", o.LearnRate)
	}
	return nil
}

// ErrTooFewGroups is returned when there is too little data to train on.
var ErrTooFewGroups = errors.New("too few training groups")

// ErrUnavailable is returned by a build without the trainer: under the
// cuda build tag gorgonia needs cuDNN, so a -tags cuda build leaves it out.
// Heads are files in the index: train them with a default build.
var ErrUnavailable = errors.New("headtrain: this build has no head trainer (a -tags cuda build: gorgonia needs cuDNN under that tag); train the head with a default build of gleaner (gleaner train head)")

// Result is the trained head and the mean loss of each epoch.
type Result struct {
	Head   *models.Head
	Losses []float64
}

// Train fits a head to groups of 1+k latents of length in.
func Train(ctx context.Context, groups []Group, in, k int, o Options) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if in <= 0 || k <= 0 || len(groups) < o.Batch {
		return nil, fmt.Errorf("headtrain: need latents, negatives and at least %d groups; have in=%d k=%d groups=%d: %w", o.Batch, in, k, len(groups), ErrTooFewGroups)
	}
	for i, g := range groups {
		if len(g.Latents) != (1+k)*in {
			return nil, fmt.Errorf("headtrain: group %d has %d values, want %d", i, len(g.Latents), (1+k)*in)
		}
	}
	return fit(ctx, groups, in, k, o)
}
