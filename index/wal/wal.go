// Package wal is gleaner's write-ahead log: an append-only folder of
// checksummed records, each synced to disk before Append returns, so a
// record Append acknowledged survives kill -9 and power loss.
//
// The folder holds segment files named by the sequence number of their
// first record (%020d.wal). A segment starts with a header (magic, format
// version, the log's id, the id of what the log extends, CRC-32C); each
// record is its length, the CRC-32C of the rest, its sequence number, its
// place in its group and the payload. Sequence numbers start at 1 and
// have no gaps across segments.
//
// The records of one Append form a group, its last record marked; only a
// complete group counts. Opening checks every record. An incomplete or
// damaged last group of the last segment is a write a crash interrupted
// (a kill leaves it short; a power loss may leave any of its blocks
// unwritten): it was never acknowledged, and it is cut off whole with a
// warning. Damage anywhere else (a later group follows it) is corruption,
// reported with the file and offset; nothing is applied past it.
//
// A Log is safe for concurrent use; one process at a time may open a
// folder (a lock file excludes others).
package wal

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

const (
	magic   = "GLNRWAL\x00"
	version = 1
	// MaxRecord bounds one record's payload: a longer length read from a
	// file is damage, not an allocation to attempt.
	MaxRecord = 256 << 20
	recHeader = 8 + recBody // length (with the group's end bit), crc, number, place
	// groupEnd marks the last record of an Append in the length field.
	groupEnd = 1 << 31
	suffix   = ".wal"
	lockFile = "LOCK"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a log whose damage is not a torn tail.
var ErrCorrupt = errors.New("wal: log damaged")

// ErrLocked is returned when another process has the log open.
var ErrLocked = errors.New("wal: the log is open in another process")

// Header identifies a log: its own id and the id of what it extends (an
// index's manifest checksum), fixed when the log is created.
type Header struct {
	ID      string `json:"id"`
	Extends string `json:"extends"`
}

// Options configure a log.
type Options struct {
	Logger *slog.Logger // warnings (a torn tail cut off); required
	// NoSync skips fsync: for tests of logic only, never for data that
	// matters.
	NoSync bool
}

// Log is an open write-ahead log.
type Log struct {
	dir  string
	o    Options
	lock *os.File
	hdr  Header

	mu    sync.Mutex
	segs  []segment // in order; the last is being appended to
	f     *os.File  // the last segment, open for appending
	last  uint64    // the last record's sequence number (0: none)
	bytes int64     // all segments' sizes
	err   error     // a failed write: the log refuses further appends
	buf   []byte    // Append's records, kept for the next (a commit's garbage is query latency)
}

type segment struct {
	first uint64 // the first record's sequence number (named so)
	path  string
	size  int64
}

// Open opens the log in dir, creating it (with a fresh id, extending
// extends, its first record numbered start) when dir does not exist or
// holds no segment. An existing log's header is kept as it was written:
// the caller checks that it extends what it should.
func Open(dir, extends string, start uint64, o Options) (*Log, error) {
	if o.Logger == nil {
		return nil, fmt.Errorf("wal: Options.Logger is required")
	}
	if start < 1 {
		return nil, fmt.Errorf("wal: records are numbered from 1, not %d", start)
	}
	if err := makeDir(dir, o.NoSync); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, o: o}
	if err := l.takeLock(); err != nil {
		return nil, err
	}
	if err := l.recover(extends, start); err != nil {
		l.lock.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) takeLock() error {
	f, err := os.OpenFile(filepath.Join(l.dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if !tryLock(f, true) {
		f.Close()
		return fmt.Errorf("%w: %s", ErrLocked, l.dir)
	}
	l.lock = f
	return nil
}

// Locked reports whether a process holds the log in dir open.
func Locked(dir string) bool {
	f, err := os.Open(filepath.Join(dir, lockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if !tryLock(f, false) {
		return true
	}
	unlock(f)
	return false
}

// Exists reports whether dir holds a log.
func Exists(dir string) bool {
	segs, err := segmentPaths(dir)
	return err == nil && len(segs) > 0
}

// PeekStats describe a log from outside: its files, and whether a process
// has it open.
type PeekStats struct {
	Segments int
	Bytes    int64
	Locked   bool
}

// Peek describes the log in dir without opening it (no lock taken, no
// record read).
func Peek(dir string) PeekStats {
	segs, _ := segmentPaths(dir)
	st := PeekStats{Segments: len(segs), Locked: Locked(dir)}
	for _, s := range segs {
		if fi, err := os.Stat(s.path); err == nil {
			st.Bytes += fi.Size()
		}
	}
	return st
}

// Header is the log's identity.
func (l *Log) Header() Header { return l.hdr }

// Last is the sequence number of the last record (0: none yet).
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Empty reports whether the log holds no record (a new log, or one whose
// records were all dropped after a checkpoint).
func (l *Log) Empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segs) == 0 || l.segs[0].first > l.last
}

// Stats are the log's size.
type Stats struct {
	Segments int
	Bytes    int64
	Last     uint64
}

// Stats reports the log's segments, bytes and last sequence number.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Stats{Segments: len(l.segs), Bytes: l.bytes, Last: l.last}
}

// segmentPaths lists dir's segment files in sequence order.
func segmentPaths(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segment
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, suffix) {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(name, suffix), 10, 64)
		if err != nil || len(name) != 20+len(suffix) {
			return nil, fmt.Errorf("%w: %s: %s is not a segment name", ErrCorrupt, dir, name)
		}
		segs = append(segs, segment{first: first, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmpU64(a.first, b.first) })
	return segs, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// recover reads every segment, cutting off a torn tail, and opens the
// last for appending (creating the first when there is none).
func (l *Log) recover(extends string, start uint64) error {
	segs, err := segmentPaths(l.dir)
	if err != nil {
		return err
	}
	segs, err = dropTornSegment(segs, l.o.Logger)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		id := make([]byte, 8)
		rand.Read(id)
		l.hdr = Header{ID: hex.EncodeToString(id), Extends: extends}
		l.last = start - 1
		return l.newSegment(start)
	}
	next := segs[0].first
	for i := range segs {
		s := &segs[i]
		if s.first != next {
			return fmt.Errorf("%w: %s starts at record %d, want %d (a segment is missing)", ErrCorrupt, s.path, s.first, next)
		}
		lastSeg := i == len(segs)-1
		end, hdr, err := scanSegment(s.path, s.first, lastSeg, l.o.Logger, func(uint64, []byte) error { return nil })
		if err != nil {
			return err
		}
		if i == 0 {
			l.hdr = hdr
		} else if hdr != l.hdr {
			return fmt.Errorf("%w: %s belongs to another log (id %s, not %s)", ErrCorrupt, s.path, hdr.ID, l.hdr.ID)
		}
		s.size = end.size
		next = end.next
		l.bytes += end.size
	}
	l.segs, l.last = segs, next-1
	f, err := os.OpenFile(segs[len(segs)-1].path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	l.f = f
	return nil
}

// dropTornSegment removes the last segment when its header is damaged
// and it holds no valid record: a crash while it was being started (it
// never held an acknowledged record).
func dropTornSegment(segs []segment, log *slog.Logger) ([]segment, error) {
	if len(segs) == 0 {
		return segs, nil
	}
	s := segs[len(segs)-1]
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	_, _, herr := readHeader(bufio.NewReader(f))
	f.Close()
	if herr == nil {
		return segs, nil
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	if at := laterGroup(b, 0, s.first); at >= 0 {
		return nil, fmt.Errorf("%w: %s: header: %v, with a valid record at byte %d", ErrCorrupt, s.path, herr, at)
	}
	if err := os.Remove(s.path); err != nil {
		return nil, err
	}
	log.Warn("wal: removed a segment whose start was torn by a crash (it held no record)", "file", s.path, "reason", herr.Error())
	return segs[:len(segs)-1], nil
}

// scanEnd is where a scan stopped: the valid size and the next sequence
// number.
type scanEnd struct {
	size int64
	next uint64
}

// scanSegment reads the segment at path, calling fn for each record. In
// the last segment a torn tail is cut off (with a warning).
func scanSegment(path string, first uint64, last bool, log *slog.Logger, fn func(uint64, []byte) error) (scanEnd, Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return scanEnd{}, Header{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return scanEnd{}, Header{}, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	hdr, hlen, err := readHeader(r)
	if err != nil {
		return scanEnd{}, Header{}, fmt.Errorf("%w: %s: header: %v", ErrCorrupt, path, err)
	}
	off, next := int64(hlen), first
	g := group{start: off, next: next} // the group being read
	for off < st.Size() {
		seq, start, payload, n, end, err := readRecord(r, st.Size()-off)
		switch {
		case err != nil:
		case seq != next:
			err = fmt.Errorf("record %d where %d was due", seq, next)
		case start != g.next:
			err = fmt.Errorf("record %d says its group starts at %d, not %d", seq, start, g.next)
		}
		if err != nil {
			return tornTail(path, off, st.Size(), g, last, err, log, hdr)
		}
		g.records = append(g.records, payload)
		off += n
		next++
		if end { // the group is whole: its records count
			for i, p := range g.records {
				if err := fn(g.next+uint64(i), p); err != nil {
					return scanEnd{}, Header{}, err
				}
			}
			g = group{start: off, next: next}
		}
	}
	if len(g.records) > 0 {
		return tornTail(path, off, st.Size(), g, last, fmt.Errorf("the last group has no end mark"), log, hdr)
	}
	return scanEnd{size: off, next: next}, hdr, nil
}

// group is the records of one Append read so far.
type group struct {
	start   int64  // its offset
	next    uint64 // its first record's number
	records [][]byte
}

// tornTail decides what damage at off, in group g, means: in the last
// segment's last group (no later group follows it), a write a crash
// interrupted, cut off whole with a warning; anywhere else corruption.
func tornTail(path string, off, size int64, g group, last bool, cause error, log *slog.Logger, hdr Header) (scanEnd, Header, error) {
	if !last {
		return scanEnd{}, Header{}, fmt.Errorf("%w: %s at byte %d: %v (not the end of the log, so not a torn write)", ErrCorrupt, path, off, cause)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return scanEnd{}, Header{}, err
	}
	if at := laterGroup(b, off+1, g.next); at >= 0 {
		return scanEnd{}, Header{}, fmt.Errorf("%w: %s at byte %d: %v, with a later group of records at byte %d (not a torn write)", ErrCorrupt, path, off, cause, at)
	}
	if err := os.Truncate(path, g.start); err != nil {
		return scanEnd{}, Header{}, err
	}
	if err := syncFile(path); err != nil {
		return scanEnd{}, Header{}, err
	}
	log.Warn("wal: cut off a write a crash interrupted at the end of the log (it was never acknowledged)",
		"file", path, "offset", g.start, "bytes", size-g.start, "records", g.next, "reason", cause.Error())
	return scanEnd{size: g.start, next: g.next}, hdr, nil
}

// A record is its length word (the bytes after the length and the
// checksum, with groupEnd on a group's last record), the CRC-32C of what
// follows, its number, its place in its group (0 for the group's first),
// and the payload.
const recBody = 12 // number and place

// validAt reports a valid record at at in b: its size, number, the
// number its group starts at, and its end mark.
func validAt(b []byte, at int64) (size int64, seq, start uint64, end, ok bool) {
	if at+recHeader > int64(len(b)) {
		return 0, 0, 0, false, false
	}
	word := binary.LittleEndian.Uint32(b[at:])
	n := int64(word &^ groupEnd)
	if n < recBody || n-recBody > MaxRecord || at+8+n > int64(len(b)) {
		return 0, 0, 0, false, false
	}
	body := b[at+8 : at+8+n]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[at+4:]) {
		return 0, 0, 0, false, false
	}
	seq = binary.LittleEndian.Uint64(body)
	return 8 + n, seq, seq - uint64(binary.LittleEndian.Uint32(body[8:])), word&groupEnd != 0, true
}

// laterGroup returns the offset of a valid record of a group that starts
// after the group numbered from first, at or after from in b; −1 when
// there is none: the damage is in the last group, which no Append
// finished (a later Append starts only after the earlier one synced).
func laterGroup(b []byte, from int64, first uint64) int64 {
	for at := from; at+recHeader <= int64(len(b)); at++ {
		if _, _, start, _, ok := validAt(b, at); ok && start > first {
			return at
		}
	}
	return -1
}

func readHeader(r *bufio.Reader) (Header, int, error) {
	var fixed [16]byte // magic, version, length
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return Header{}, 0, err
	}
	if string(fixed[:8]) != magic {
		return Header{}, 0, fmt.Errorf("not a gleaner log segment")
	}
	if v := binary.LittleEndian.Uint32(fixed[8:]); v != version {
		return Header{}, 0, fmt.Errorf("log format version %d, this gleaner reads %d", v, version)
	}
	n := binary.LittleEndian.Uint32(fixed[12:])
	if n > 4096 {
		return Header{}, 0, fmt.Errorf("header of %d bytes", n)
	}
	body := make([]byte, n+4)
	if _, err := io.ReadFull(r, body); err != nil {
		return Header{}, 0, err
	}
	sum := crc32.Update(crc32.Checksum(fixed[:], castagnoli), castagnoli, body[:n])
	if sum != binary.LittleEndian.Uint32(body[n:]) {
		return Header{}, 0, fmt.Errorf("header checksum mismatch")
	}
	id, extends, ok := strings.Cut(string(body[:n]), "\n")
	if !ok {
		return Header{}, 0, fmt.Errorf("header without an id")
	}
	return Header{ID: id, Extends: extends}, len(fixed) + len(body), nil
}

func encodeHeader(h Header) []byte {
	body := h.ID + "\n" + h.Extends
	b := make([]byte, 16, 16+len(body)+4)
	copy(b, magic)
	binary.LittleEndian.PutUint32(b[8:], version)
	binary.LittleEndian.PutUint32(b[12:], uint32(len(body)))
	b = append(b, body...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readRecord reads one record of at most avail bytes.
func readRecord(r *bufio.Reader, avail int64) (seq, start uint64, payload []byte, n int64, end bool, err error) {
	if avail < recHeader {
		return 0, 0, nil, 0, false, fmt.Errorf("%d bytes left, less than a record header", avail)
	}
	var h [recHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, nil, 0, false, err
	}
	word := binary.LittleEndian.Uint32(h[:4])
	size := int64(word &^ groupEnd)
	if size < recBody || size-recBody > MaxRecord {
		return 0, 0, nil, 0, false, fmt.Errorf("record length %d", size)
	}
	if 8+size > avail {
		return 0, 0, nil, 0, false, fmt.Errorf("record of %d bytes with %d left", 8+size, avail)
	}
	payload = make([]byte, size-recBody)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, 0, nil, 0, false, err
	}
	sum := crc32.Update(crc32.Checksum(h[8:], castagnoli), castagnoli, payload)
	if sum != binary.LittleEndian.Uint32(h[4:8]) {
		return 0, 0, nil, 0, false, fmt.Errorf("record checksum mismatch")
	}
	seq = binary.LittleEndian.Uint64(h[8:])
	return seq, seq - uint64(binary.LittleEndian.Uint32(h[16:])), payload, 8 + size, word&groupEnd != 0, nil
}

// appendRecord appends record seq, place within its group, to b.
func appendRecord(b []byte, seq uint64, place uint32, payload []byte, end bool) []byte {
	var h [recHeader]byte
	word := uint32(recBody + len(payload))
	if end {
		word |= groupEnd
	}
	binary.LittleEndian.PutUint32(h[:4], word)
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint32(h[16:], place)
	sum := crc32.Update(crc32.Checksum(h[8:], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:8], sum)
	return append(append(b, h[:]...), payload...)
}

// newSegment starts the segment whose first record will be first.
func (l *Log) newSegment(first uint64) error {
	path := filepath.Join(l.dir, fmt.Sprintf("%020d%s", first, suffix))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	h := encodeHeader(l.hdr)
	fail := func(err error) error { // no stray segment: reopening would find a gap
		f.Close()
		os.Remove(path)
		l.syncDir()
		return err
	}
	if _, err := f.Write(h); err != nil {
		return fail(err)
	}
	if err := l.sync(f); err != nil {
		return fail(err)
	}
	if err := l.syncDir(); err != nil {
		return fail(err)
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f = f
	l.segs = append(l.segs, segment{first: first, path: path, size: int64(len(h))})
	l.bytes += int64(len(h))
	return nil
}

// keptBuffer is the largest record buffer Append keeps for the next.
const keptBuffer = 8 << 20

// Append writes payloads as the next records and syncs them to disk; it
// returns the first record's sequence number. After a failed write the
// log refuses appends (what reached the disk is unknown until it is
// opened again).
func (l *Log) Append(payloads ...[]byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	buf := l.buf[:0]
	for i, p := range payloads {
		if len(p) > MaxRecord {
			return 0, fmt.Errorf("wal: a record of %d bytes exceeds the limit of %d: split the batch", len(p), MaxRecord)
		}
		buf = appendRecord(buf, l.last+1+uint64(i), uint32(i), p, i == len(payloads)-1)
	}
	if cap(buf) <= keptBuffer {
		l.buf = buf
	}
	if _, err := l.f.Write(buf); err != nil {
		l.err = fmt.Errorf("wal: writing %s failed, the log refuses appends until reopened: %w", l.dir, err)
		return 0, l.err
	}
	if err := l.sync(l.f); err != nil {
		l.err = fmt.Errorf("wal: syncing %s failed, the log refuses appends until reopened: %w", l.dir, err)
		return 0, l.err
	}
	first := l.last + 1
	l.last += uint64(len(payloads))
	l.segs[len(l.segs)-1].size += int64(len(buf))
	l.bytes += int64(len(buf))
	return first, nil
}

// Rotate starts a new segment for the records after the last, so that
// Drop can later remove the older ones whole.
func (l *Log) Rotate() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if s := l.segs[len(l.segs)-1]; s.first == l.last+1 {
		return nil // the current segment is empty
	}
	return l.newSegment(l.last + 1)
}

// Drop removes the segments whose records are all numbered ≤ upTo (never
// the one being appended to).
func (l *Log) Drop(upTo uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.segs) > 1 && l.segs[1].first <= upTo+1 {
		if err := os.Remove(l.segs[0].path); err != nil {
			return err
		}
		l.bytes -= l.segs[0].size
		l.segs = l.segs[1:]
	}
	return l.syncDir()
}

// Replay calls fn with every record numbered after after, in order.
func (l *Log) Replay(after uint64, fn func(seq uint64, payload []byte) error) error {
	l.mu.Lock()
	segs := slices.Clone(l.segs)
	l.mu.Unlock()
	if len(segs) > 0 && after+1 < segs[0].first {
		return fmt.Errorf("%w: %s: records %d–%d are gone (the log starts at %d)", ErrCorrupt, l.dir, after+1, segs[0].first-1, segs[0].first)
	}
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].first <= after+1 {
			continue
		}
		_, _, err := scanSegment(s.path, s.first, false, l.o.Logger, func(seq uint64, p []byte) error {
			if seq <= after {
				return nil
			}
			return fn(seq, p)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Close closes the log and releases its lock.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var err error
	if l.f != nil {
		err = l.f.Close()
		l.f = nil
	}
	return errors.Join(err, l.lock.Close())
}

func (l *Log) sync(f *os.File) error {
	if l.o.NoSync {
		return nil
	}
	return f.Sync()
}

func (l *Log) syncDir() error {
	if l.o.NoSync {
		return nil
	}
	return syncFile(l.dir)
}

// makeDir creates dir when missing and syncs its parent, so the new
// folder's name survives a power loss.
func makeDir(dir string, noSync bool) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if noSync {
		return nil
	}
	return syncFile(filepath.Dir(dir))
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
