package server

import "testing"

func TestProcsLeaveEveryCoreToQueries(t *testing.T) {
	base := DefaultConfig()
	base.WriteCores = 1
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want int
	}{
		{"read only", func(c *Config) {}, 2},
		{"writes on idle threads", func(c *Config) { c.Writes = true }, 3},
		{"a fleet replica without writes", func(c *Config) { c.Fleet = &Fleet{} }, 3},
		{"writes on ordinary threads", func(c *Config) { c.Writes, c.WriteIdle = true, false }, 2},
		{"write cores unbounded", func(c *Config) { c.Writes, c.WriteCores = true, 0 }, 2},
		{"three write cores", func(c *Config) { c.Writes, c.WriteCores = true, 3 }, 5},
	} {
		c := base
		tc.edit(&c)
		if got := Procs(2, c); got != tc.want {
			t.Errorf("%s: Procs(2) = %d, want %d", tc.name, got, tc.want)
		}
	}
}
