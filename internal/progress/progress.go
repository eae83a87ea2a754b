// Package progress reports the progress of long jobs: a redrawn bar when
// the output is a terminal, periodic log lines otherwise.
package progress

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Reporter receives progress of named stages. Implementations are safe for
// concurrent use.
type Reporter interface {
	// Stage starts a stage of total units (0 when unknown).
	Stage(name string, total int)
	// Set reports that done units of the current stage are complete.
	Set(done int)
	// Finish ends the current stage.
	Finish()
}

// Nop discards progress.
type Nop struct{}

func (Nop) Stage(string, int) {}
func (Nop) Set(int)           {}
func (Nop) Finish()           {}

// New returns a bar on w when w is a terminal, else a reporter that logs a
// line through log at most every interval.
func New(w io.Writer, log *slog.Logger, interval time.Duration) Reporter {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return &bar{w: w}
	}
	return &logLines{log: log, every: interval}
}

type bar struct {
	mu    sync.Mutex
	w     io.Writer
	name  string
	total int
	start time.Time
	last  time.Time
}

func (b *bar) Stage(name string, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.name, b.total, b.start, b.last = name, total, time.Now(), time.Time{}
	b.draw(0)
}

func (b *bar) Set(done int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.last) > 100*time.Millisecond {
		b.draw(done)
	}
}

func (b *bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.draw(b.total)
	fmt.Fprintln(b.w)
}

func (b *bar) draw(done int) {
	b.last = time.Now()
	const width = 30
	el := time.Since(b.start).Round(100 * time.Millisecond)
	if b.total <= 0 {
		fmt.Fprintf(b.w, "\r%-18s %d  %v", b.name, done, el)
		return
	}
	fill := min(width, width*done/b.total)
	fmt.Fprintf(b.w, "\r%-18s [%s%s] %d/%d  %v", b.name, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, b.total, el)
}

type logLines struct {
	mu    sync.Mutex
	log   *slog.Logger
	every time.Duration
	name  string
	total int
	start time.Time
	last  time.Time
}

func (l *logLines) Stage(name string, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.name, l.total, l.start, l.last = name, total, time.Now(), time.Now()
	if total > 0 {
		l.log.Info("stage started", "stage", name, "total", total)
		return
	}
	l.log.Info("stage started", "stage", name)
}

func (l *logLines) Set(done int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.last) >= l.every {
		l.last = time.Now()
		l.log.Info("progress", "stage", l.name, "done", done, "total", l.total, "elapsed", time.Since(l.start).Round(time.Millisecond))
	}
}

func (l *logLines) Finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log.Info("stage finished", "stage", l.name, "elapsed", time.Since(l.start).Round(time.Millisecond))
}
