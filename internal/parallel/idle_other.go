//go:build !linux

package parallel

import "errors"

// OnIdleThread runs fn; only Linux has a policy for threads that run
// only when no other thread wants the core, so it reports false here.
func OnIdleThread(fn func()) bool {
	fn()
	return false
}

const schedIdle = -2 // no such policy here

func setIdlePolicy() error { return errors.New("parallel: no idle thread policy on this system") }

func threadPolicy() int { return -1 }
