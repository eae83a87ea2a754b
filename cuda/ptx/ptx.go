// Package ptx holds the PTX that nvcc makes from cuda/kernels/*.cu, one
// file per kernel and compute capability (`bash cuda/check.sh --update`
// writes them; `make cuda-check` fails when they no longer match the
// sources), embedded so that the cuda backend loads its kernels through the
// driver's module API with no nvcc at run time. Each file's second line
// records the sha256 of the kernel's source and the headers beside it; this
// package's test recomputes it, so a kernel changed without regenerating
// its PTX fails the default build's tests on every machine.
package ptx

import (
	"embed"
	"fmt"
	"regexp"
	"strings"
)

//go:embed *.ptx
var files embed.FS

// Archs are the compute capabilities with PTX: 80 (A100) and 90 (H100,
// H200); the driver JIT-compiles PTX for newer devices.
var Archs = []int{80, 90}

// Source returns the PTX of kernel (a cuda/kernels file name without .cu)
// for compute capability arch.
func Source(kernel string, arch int) (string, error) {
	b, err := files.ReadFile(fmt.Sprintf("%s.compute_%d.ptx", kernel, arch))
	if err != nil {
		return "", fmt.Errorf("ptx: no PTX for kernel %q, compute_%d (have: %s)", kernel, arch, strings.Join(Kernels(), ", "))
	}
	return string(b), nil
}

// Kernels lists the kernels with PTX, sorted.
func Kernels() []string {
	ents, _ := files.ReadDir(".")
	var out []string
	for _, e := range ents {
		if k, _, ok := strings.Cut(e.Name(), ".compute_"); ok && (len(out) == 0 || out[len(out)-1] != k) {
			out = append(out, k)
		}
	}
	return out
}

var entryRE = regexp.MustCompile(`(?m)^\.(?:visible )?\.entry\s+([A-Za-z0-9_$]+)`)

// Entries lists the kernel entry points of a PTX module (C++-mangled
// names, which the module API looks up).
func Entries(ptx string) []string {
	var out []string
	for _, m := range entryRE.FindAllStringSubmatch(ptx, -1) {
		out = append(out, m[1])
	}
	return out
}

// SourceHash reads the source-sha256 line of a PTX file.
func SourceHash(ptx string) string {
	for _, line := range strings.SplitN(ptx, "\n", 4)[:min(3, strings.Count(ptx, "\n"))] {
		if h, ok := strings.CutPrefix(line, "// source-sha256: "); ok {
			return strings.TrimSpace(h)
		}
	}
	return ""
}
