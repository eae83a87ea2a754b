package engine

// Hit is one scored item: Index is the row or node number.
type Hit struct {
	Index int32
	Score float32
}
