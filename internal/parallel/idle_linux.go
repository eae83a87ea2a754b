package parallel

import (
	"runtime"
	"syscall"
	"unsafe"
)

// schedIdle is Linux's SCHED_IDLE scheduling policy.
const schedIdle = 5

// OnIdleThread runs fn on an OS thread of its own that the kernel runs
// only when no other thread wants the core (Linux's SCHED_IDLE policy),
// and reports whether the policy was set (false: fn ran on an ordinary
// thread). A thread of ordinary policy that wakes, such as the one that
// polls the network for an arriving query, then preempts fn's at once,
// where it would otherwise wait out the running thread's time slice (some
// ms). The thread ends with fn, since an unprivileged thread may not give
// the policy back up. A panic in fn is raised again in the caller.
func OnIdleThread(fn func()) bool {
	type outcome struct {
		idle     bool
		panicked bool
		value    any
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		var o outcome
		defer func() {
			if r := recover(); r != nil {
				o.panicked, o.value = true, r
			}
			done <- o
		}()
		o.idle = setIdlePolicy()
		fn()
	}()
	o := <-done
	if o.panicked {
		panic(o.value)
	}
	return o.idle
}

// setIdlePolicy gives the calling thread the SCHED_IDLE policy.
func setIdlePolicy() bool {
	var param struct{ priority int32 }
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedIdle, uintptr(unsafe.Pointer(&param)))
	return errno == 0
}

// threadPolicy is the calling thread's scheduling policy.
func threadPolicy() int {
	p, _, _ := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	return int(p)
}
