//go:build !linux

package parallel

// OnIdleThread runs fn; only Linux has a policy for threads that run
// only when no other thread wants the core, so it reports false here.
func OnIdleThread(fn func()) bool {
	fn()
	return false
}

func threadPolicy() int { return -1 }

const schedIdle = -2 // no such policy here
