// Package methodspec reads the benchmarks' method specs: a method name,
// or name?setting=value&… ("vector?search=exact").
package methodspec

import (
	"fmt"
	"strings"

	"github.com/gleaner-rag/gleaner/retrieve"
)

// Config is the configuration spec names, every setting applied.
func Config(spec string) (*retrieve.Config, error) {
	name, settings, _ := strings.Cut(strings.TrimSpace(spec), "?") // no "?": no settings
	cfg, err := retrieve.NewConfig(name)
	if err != nil {
		return nil, err
	}
	for _, kv := range strings.Split(settings, "&") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not setting=value", spec, kv)
		}
		if err := cfg.Set(k, v); err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
	}
	return cfg, nil
}
