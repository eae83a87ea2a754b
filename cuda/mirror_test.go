package cuda

import (
	"slices"
	"sync"
	"testing"
)

func wantRead[T int32 | int64](t *testing.T, m *Mirror[T], n int, want []T) {
	t.Helper()
	got, ok := m.Read(n)
	switch {
	case want == nil && ok:
		t.Fatalf("Read(%d) = %v, want unknown", n, got)
	case want != nil && (!ok || !slices.Equal(got, want)):
		t.Fatalf("Read(%d) = %v, %v; want %v", n, got, ok, want)
	}
}

func TestMirrorZeroedThenWritten(t *testing.T) {
	m := NewMirror[int64](4, true)
	wantRead(t, m, 4, []int64{0, 0, 0, 0})
	wantRead(t, m, 2, []int64{0, 0})
	m.Write(1, []int64{7, 8})
	wantRead(t, m, 4, []int64{0, 7, 8, 0})
	m.Write(3, []int64{9})
	wantRead(t, m, 4, []int64{0, 7, 8, 9})
	wantRead(t, m, 5, nil) // past the buffer
	wantRead(t, m, -1, nil)
}

func TestMirrorUnknownUntilWhollyUploaded(t *testing.T) {
	m := NewMirror[int32](3, false) // scratch: not zeroed
	wantRead(t, m, 0, nil)
	m.Write(0, []int32{1, 2}) // partial: the third element is still the device's
	wantRead(t, m, 2, nil)
	m.Write(0, []int32{4, 5, 6})
	wantRead(t, m, 3, []int32{4, 5, 6})
	m.Forget() // a kernel wrote it
	wantRead(t, m, 3, nil)
	m.Write(1, []int32{1})
	wantRead(t, m, 3, nil)
}

func TestMirrorCopiesUploads(t *testing.T) {
	src := []int32{1, 2, 3}
	m := NewMirror[int32](3, true)
	m.Write(0, src)
	src[0] = 99 // the caller may reuse its slice after Upload
	wantRead(t, m, 3, []int32{1, 2, 3})
}

func TestMirrorBoundAliases(t *testing.T) {
	src := []int64{3, 1, 4}
	m := BoundMirror(src)
	got, ok := m.Read(3)
	if !ok || &got[0] != &src[0] {
		t.Fatalf("a bound mirror should alias its source: %v %v", got, ok)
	}
	if _, ok := m.Read(2); !ok {
		t.Fatal("prefix of a bound mirror unknown")
	}
}

func TestMirrorConcurrentUse(t *testing.T) { // for -race
	m := NewMirror[int32](64, true)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				switch (g + i) % 3 {
				case 0:
					m.Write(g, []int32{int32(i)})
				case 1:
					m.Read(32)
				default:
					if i%17 == 0 {
						m.Forget()
					}
				}
			}
		}()
	}
	wg.Wait()
}
