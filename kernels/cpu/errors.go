package cpu

import (
	"fmt"

	"github.com/gleaner-rag/gleaner/engine"
)

func shapeErr(op string) error { return fmt.Errorf("cpu: %s: shape does not match the buffers", op) }

var errReadOnly = fmt.Errorf("cpu: an op's output: %w", engine.ErrReadOnly)
