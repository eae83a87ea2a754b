// Package fuseattn holds FuseRAG's evidence fusion (docs/methods.md §7):
// explicit text anchors chosen by 0-1 knapsack under the decoder's token
// budget (stage 2b), and the latent memory (query-conditioned pooling, GAT
// fusion, low-rank memory key/values) that a decoder attends to jointly
// with its text (stages 2a and 3). Greedy evidence retrieval (stage 1) is
// graphops.GreedyEvidence; the method that strings the stages together is
// retrieve's "fuserag".
package fuseattn
