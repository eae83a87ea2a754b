// Package seeder is SeedER's query-adaptive Exphormer encoder with its
// policy and scoring heads (docs/methods.md §3.1 stages 3–4), and its
// training by REINFORCE over Plackett–Luce samples plus BPR.
//
// The network is written once over a generic float type: float32 runs
// training (its GEMMs and edge attention are the CPU engine's kernels),
// float64 is the reference the finite-difference gradient tests check
// every hand-written backward pass against. Inference runs the same
// forward pass as engine ops on any backend (Model.Bind, Encoder), so a
// GPU runs it; a test holds it to the float64 forward.
//
// A Batch is the disjoint union of several queries' candidate graphs, so
// one forward pass serves many concurrent queries (the scheduler in
// package retrieve batches them) and one training step a minibatch.
package seeder
