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
// ms). Goroutines fn starts run as usual. The thread ends with fn, since
// an unprivileged thread may not give the policy back up. A panic in fn
// is raised again in the caller (with its value, not its stack), and
// runtime.Goexit in fn exits the caller's goroutine too.
func OnIdleThread(fn func()) bool {
	done := make(chan idleOutcome, 1)
	go runIdle(fn, done)
	o := <-done
	switch {
	case o.panicked:
		panic(o.value)
	case !o.returned:
		runtime.Goexit()
	}
	return o.idle
}

// idleOutcome is how fn ended on its idle thread.
type idleOutcome struct {
	idle, returned, panicked bool
	value                    any
}

// runIdle runs fn on the calling goroutine's thread, made idle, and
// sends how it ended. The process's main thread cannot exit with the
// goroutine and would stay idle, taking the signals sent to the process
// at that priority: there runIdle holds the thread (locked, so nothing
// else runs on it) while another goroutine, on another thread, runs fn.
func runIdle(fn func(), done chan<- idleOutcome) {
	runtime.LockOSThread() // never unlocked but on the main thread: the thread exits with this goroutine
	if syscall.Gettid() == syscall.Getpid() {
		inner := make(chan idleOutcome, 1)
		go runIdle(fn, inner)
		o := <-inner
		runtime.UnlockOSThread()
		done <- o
		return
	}
	var o idleOutcome
	defer func() {
		if !o.returned {
			if r := recover(); r != nil {
				o.panicked, o.value = true, r
			}
		}
		done <- o
	}()
	o.idle = setIdlePolicy() == nil
	fn()
	o.returned = true
}

// setIdlePolicy gives the calling thread the SCHED_IDLE policy.
func setIdlePolicy() error {
	var param struct{ priority int32 }
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedIdle, uintptr(unsafe.Pointer(&param))); errno != 0 {
		return errno
	}
	return nil
}

// threadPolicy is the calling thread's scheduling policy (−1: unknown).
func threadPolicy() int {
	p, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	if errno != 0 {
		return -1
	}
	return int(p)
}
