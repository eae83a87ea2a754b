package parallel

import (
	"runtime"
	"testing"
)

func TestOnIdleThreadRunsFnAtIdlePriority(t *testing.T) {
	ran, policy := false, -1
	idle := OnIdleThread(func() { ran, policy = true, threadPolicy() })
	if !ran {
		t.Fatal("fn did not run")
	}
	if runtime.GOOS == "linux" {
		if !idle || policy != schedIdle {
			t.Fatalf("on Linux: reported idle %v, thread policy %d; want true and SCHED_IDLE (%d)", idle, policy, schedIdle)
		}
		if p := threadPolicy(); p == schedIdle {
			t.Fatal("the caller's thread took the idle policy too")
		}
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
