package cpu

import "fmt"

func shapeErr(op string) error { return fmt.Errorf("cpu: %s: shape does not match the buffers", op) }
