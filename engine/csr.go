package engine

import "fmt"

// CSRMatrix is a sparse matrix in compressed sparse row form: the entries
// of row i are at positions Ptr[i]..Ptr[i+1] of Idx (column) and Val
// (value; nil means every value is 1).
type CSRMatrix struct {
	Rows, Cols int
	Ptr        []int64
	Idx        []int32
	Val        []float32
}

// Check validates the structure.
func (a *CSRMatrix) Check() error {
	if len(a.Ptr) != a.Rows+1 || a.Ptr[0] != 0 || a.Ptr[a.Rows] > int64(len(a.Idx)) {
		return fmt.Errorf("engine: csr: pointers do not describe %d rows over %d entries", a.Rows, len(a.Idx))
	}
	if a.Val != nil && len(a.Val) < len(a.Idx) {
		return fmt.Errorf("engine: csr: %d values for %d entries", len(a.Val), len(a.Idx))
	}
	for i := 0; i < a.Rows; i++ {
		if a.Ptr[i] > a.Ptr[i+1] {
			return fmt.Errorf("engine: csr: pointers decrease at row %d", i)
		}
	}
	for _, j := range a.Idx[:a.Ptr[a.Rows]] {
		if j < 0 || int(j) >= a.Cols {
			return fmt.Errorf("engine: csr: column %d outside %d", j, a.Cols)
		}
	}
	return nil
}

// PropagationMatrix returns P (m×m, CSR with values) for the subgraph;
// isolated rows get P_ii = 1 when keep is set, so P·H reproduces H there.
func PropagationMatrix(adj CSRMatrix, deg []float32, keep bool) (CSRMatrix, error) {
	if err := adj.Check(); err != nil {
		return CSRMatrix{}, err
	}
	if len(deg) < adj.Rows {
		return CSRMatrix{}, fmt.Errorf("engine: smooth: %d degrees for %d nodes", len(deg), adj.Rows)
	}
	p := CSRMatrix{Rows: adj.Rows, Cols: adj.Cols, Ptr: make([]int64, 1, adj.Rows+1)}
	for i := 0; i < adj.Rows; i++ {
		row := adj.Idx[adj.Ptr[i]:adj.Ptr[i+1]]
		var sum float32
		for _, j := range row {
			if deg[j] <= 0 {
				return CSRMatrix{}, fmt.Errorf("engine: smooth: node %d has subgraph neighbours but global degree %v", j, deg[j])
			}
			sum += 1 / deg[j]
		}
		for _, j := range row {
			p.Idx = append(p.Idx, j)
			p.Val = append(p.Val, (1/deg[j])/sum)
		}
		if len(row) == 0 && keep {
			p.Idx, p.Val = append(p.Idx, int32(i)), append(p.Val, 1)
		}
		p.Ptr = append(p.Ptr, int64(len(p.Idx)))
	}
	return p, nil
}
