package engine

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Opener constructs a backend; it returns an error when the backend cannot
// run here (no device, not compiled in).
type Opener func() (Backend, error)

var (
	regMu    sync.Mutex
	openers  = map[string]Opener{}
	opened   = map[string]Backend{}
	openErrs = map[string]error{}
)

// Register makes a backend available by name. Backends register from their
// package's init; a name registered twice is a programming error.
func Register(name string, open Opener) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := openers[name]; dup {
		panic("engine: backend " + name + " registered twice")
	}
	openers[name] = open
}

// Names lists the registered backends.
func Names() []string {
	regMu.Lock()
	defer regMu.Unlock()
	out := make([]string, 0, len(openers))
	for n := range openers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Open returns the backend called name, constructing it once. An unknown
// name or a backend that cannot run here is an error.
func Open(name string) (Backend, error) {
	regMu.Lock()
	defer regMu.Unlock()
	if b, ok := opened[name]; ok {
		return b, nil
	}
	if err, ok := openErrs[name]; ok {
		return nil, err
	}
	open, ok := openers[name]
	if !ok {
		known := make([]string, 0, len(openers))
		for n := range openers {
			known = append(known, n)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("engine: unknown backend %q (registered: %s; import kernels/cpu for cpu)", name, strings.Join(known, ", "))
	}
	b, err := open()
	if err != nil {
		openErrs[name] = fmt.Errorf("engine: backend %q unavailable: %w", name, err)
		return nil, openErrs[name]
	}
	opened[name] = b
	return b, nil
}
