//go:build cuda

package headtrain

import "context"

// fit is unavailable in a -tags cuda build (see ErrUnavailable).
func fit(context.Context, []Group, int, int, Options) (*Result, error) { return nil, ErrUnavailable }
