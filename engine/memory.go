package engine

import "fmt"

// Element is a type a buffer can hold.
type Element interface{ float32 | int32 | int64 }

func dtypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return F32
	case int32:
		return I32
	}
	return I64
}

// Upload allocates a buffer on b and copies src into it.
func Upload[T Element](b Backend, src []T) (Buffer, error) {
	buf, err := b.Alloc(dtypeOf[T](), len(src))
	if err != nil {
		return nil, err
	}
	if err := b.Upload(buf, 0, src); err != nil {
		b.Free(buf)
		return nil, err
	}
	return buf, nil
}

// Download copies a whole buffer back to host memory.
func Download[T Element](b Backend, buf Buffer) ([]T, error) {
	if buf.DType() != dtypeOf[T]() {
		return nil, fmt.Errorf("engine: download of a %s buffer as %s", buf.DType(), dtypeOf[T]())
	}
	out := make([]T, buf.Len())
	return out, b.Download(out, buf, 0)
}
