package parallel

import (
	"errors"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// idleRefused reports whether this kernel (or a sandbox's filter) refuses
// the idle policy to an unprivileged thread, which OnIdleThread then
// reports rather than fails on.
func idleRefused() bool {
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		err = setIdlePolicy()
	}()
	wg.Wait()
	return errors.Is(err, syscall.EPERM)
}

func TestOnIdleThreadRunsFnAtIdlePriority(t *testing.T) {
	ran, policy, onIdle := false, -1, false
	idle := OnIdleThread(func() { ran, policy, onIdle = true, threadPolicy(), onIdleThread() })
	if !ran {
		t.Fatal("fn did not run")
	}
	if runtime.GOOS != "linux" {
		return
	}
	if !idle && idleRefused() {
		t.Skip("this system refuses SCHED_IDLE to the process")
	}
	if !idle || policy != schedIdle || !onIdle {
		t.Fatalf("on Linux: reported idle %v, thread policy %d, onIdleThread %v; want true, SCHED_IDLE (%d), true", idle, policy, onIdle, schedIdle)
	}
	if onIdleThread() {
		t.Fatal("the caller's thread took the idle policy too")
	}
}

func TestOnIdleThreadRaisesFnsPanic(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want fn's panic %q", r, "boom")
		}
	}()
	OnIdleThread(func() { panic("boom") })
	t.Fatal("OnIdleThread returned after fn panicked")
}

func TestOnIdleThreadPassesGoexitOn(t *testing.T) {
	returned := make(chan bool, 1)
	go func() {
		defer func() { returned <- false }()
		OnIdleThread(runtime.Goexit)
		returned <- true
	}()
	if <-returned {
		t.Fatal("OnIdleThread returned after fn called runtime.Goexit")
	}
}
