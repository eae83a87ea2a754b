package fleet

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/corpus/store"
	"github.com/gleaner-rag/gleaner/index"
	"github.com/gleaner-rag/gleaner/index/live"
	"github.com/gleaner-rag/gleaner/internal/safefile"
	"github.com/nats-io/nats.go/jetstream"
)

// Snapshot describes an index stored in the log's object store.
type Snapshot struct {
	Name     string
	Seq      uint64 // the last batch of the log the index includes
	Log      string // the log's identity (its stream's name and creation time)
	Checksum string // the manifest checksum of the index it holds
	Nodes    int
	Bytes    uint64
	Time     time.Time
}

// A snapshot is uploaded under a name of its own (pendingPrefix), read
// back whole, and only then given its snapshot name (snapPrefix): the
// store lists, restores and trims behind whole snapshots only. An upload
// a killed process left behind is never listed; Trim deletes it once a
// snapshot at least as new is kept.
const (
	snapPrefix    = "snapshot-"
	pendingPrefix = "uploading-"
)

func snapName(seq uint64) string { return fmt.Sprintf("%s%020d.tar", snapPrefix, seq) }

// pendingName names one upload attempt of the snapshot at seq. Each
// attempt has its own, so no node can answer about an attempt with
// another's record.
func pendingName(seq uint64) string {
	return fmt.Sprintf("%s%020d-%s.tar", pendingPrefix, seq, rand.Text())
}

// pendingSeq is the batch an upload's name holds.
func pendingSeq(name string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, pendingPrefix)
	if !ok || len(rest) < 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(rest[:20], 10, 64)
	return seq, err == nil
}

// PutSnapshot writes w's current index, with the number of the last
// batch it took, to a folder under scratch and uploads it as one tar
// object. The object store keeps the tar's SHA-256; Restore checks it,
// and then every file's checksum.
func (l *Log) PutSnapshot(ctx context.Context, w *live.Writer, scratch string) (Snapshot, error) {
	ix, seq := w.Position()
	tmp, err := os.MkdirTemp(scratch, "gleaner-snapshot-")
	if err != nil {
		return Snapshot{}, fmt.Errorf("fleet: snapshot: %w", err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "index")
	sum, err := ix.WriteTo(ctx, dir, &index.LiveState{Source: seq, Origin: l.id}, "")
	if err != nil {
		return Snapshot{}, fmt.Errorf("fleet: snapshot of %q at %d: writing the index: %w", l.index, seq, err)
	}
	name := snapName(seq)
	meta := jetstream.ObjectMeta{Description: "gleaner index " + l.index,
		Metadata: map[string]string{"seq": strconv.FormatUint(seq, 10), "checksum": sum, "nodes": strconv.Itoa(ix.Live()), "log": l.id}}
	var up *jetstream.ObjectInfo
	err = l.c.retryTransfer(ctx, "uploading "+name, folderBytes(dir), func(ctx context.Context) error {
		meta.Name = pendingName(seq)
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(dir, pw)) }()
		var err error
		up, err = l.objs.Put(ctx, meta, pr)
		pr.CloseWithError(errors.New("upload ended"))
		return err
	})
	if err == nil {
		err = l.readBack(ctx, up.Name, int64(up.Size))
	}
	var named *jetstream.ObjectInfo
	if err == nil {
		named, err = l.nameUpload(ctx, up, name)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("fleet: snapshot of %q at %d: uploading: %w", l.index, seq, err)
	}
	s, ok := l.snapshotOf(named)
	if !ok {
		return Snapshot{}, fmt.Errorf("fleet: snapshot of %q at %d: the store holds another object under its name %s", l.index, seq, name)
	}
	l.c.log.Info("fleet: snapshot uploaded", "index", l.index, "seq", seq, "bytes", s.Bytes, "nodes", s.Nodes)
	return s, nil
}

// nameUpload gives the upload up, read back whole, the snapshot name
// name, and returns the named object's record. When name is already a
// snapshot's (another replica's of the same batch), that one stands and
// the upload is deleted. A node that has not caught up with the upload
// may answer that it is gone: it is asked again, as readObject does.
func (l *Log) nameUpload(ctx context.Context, up *jetstream.ObjectInfo, name string) (*jetstream.ObjectInfo, error) {
	named, err := l.nameOnce(ctx, up, name)
	for wait := 50 * time.Millisecond; errors.Is(err, jetstream.ErrUpdateMetaDeleted) && wait < 5*time.Second; wait *= 2 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		named, err = l.nameOnce(ctx, up, name)
	}
	return named, err
}

func (l *Log) nameOnce(ctx context.Context, up *jetstream.ObjectInfo, name string) (*jetstream.ObjectInfo, error) {
	meta := up.ObjectMeta
	meta.Name = name
	var named *jetstream.ObjectInfo
	err := l.c.retry(ctx, "naming "+name, func(ctx context.Context) error {
		err := l.objs.UpdateMeta(ctx, up.Name, meta)
		if err == nil {
			n := *up
			n.ObjectMeta = meta
			named = &n
			return nil
		}
		if !errors.Is(err, jetstream.ErrObjectAlreadyExists) && !errors.Is(err, jetstream.ErrUpdateMetaDeleted) {
			return err
		}
		// Named by an earlier try whose answer was lost, or the name is
		// another upload's: that one stands.
		info, ierr := l.objs.GetInfo(ctx, name)
		if errors.Is(ierr, jetstream.ErrObjectNotFound) {
			return err
		}
		if ierr != nil {
			return ierr
		}
		named = info
		if info.NUID == up.NUID {
			return nil
		}
		if err := l.objs.Delete(ctx, up.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return err
		}
		return nil
	})
	return named, err
}

// readBack reads a stored object to its end, which checks its digest: a
// snapshot is trusted (Trim drops the log behind it) only once the
// store gave it back whole.
func (l *Log) readBack(ctx context.Context, name string, bytes int64) error {
	return l.c.retryTransfer(ctx, "reading back "+name, bytes, func(ctx context.Context) error {
		return l.readObject(ctx, name, func(io.Reader) error { return nil })
	})
}

// readObject gives consume the stored object name and then reads it to
// its end, which checks its digest. A node that has not caught up may
// answer a read (the store allows direct reads from followers): that
// the object is missing, or that its bytes do not match its digest. It
// answers whole shortly, so the read is tried again, waiting longer
// each time, for about 6 s; consume must start afresh each time.
func (l *Log) readObject(ctx context.Context, name string, consume func(io.Reader) error) error {
	err := l.readOnce(ctx, name, consume)
	for wait := 50 * time.Millisecond; lagging(err) && wait < 5*time.Second; wait *= 2 {
		l.c.log.Warn("fleet: a stored object read back missing or corrupt; reading it again", "name", name, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		err = l.readOnce(ctx, name, consume)
	}
	return err
}

func (l *Log) readOnce(ctx context.Context, name string, consume func(io.Reader) error) error {
	res, err := l.objs.Get(ctx, name)
	if err != nil {
		return err
	}
	defer res.Close()
	if err := consume(res); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res)
	return err
}

func lagging(err error) bool {
	return errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrDigestMismatch)
}

// Snapshots lists the stored snapshots, newest first.
func (l *Log) Snapshots(ctx context.Context) ([]Snapshot, error) {
	snaps, _, err := l.listing(ctx)
	return snaps, err
}

// listing is the store's snapshots, newest first, and its uploads not
// yet named.
func (l *Log) listing(ctx context.Context) ([]Snapshot, []*jetstream.ObjectInfo, error) {
	var infos []*jetstream.ObjectInfo
	err := l.c.retry(ctx, "listing the snapshots of "+l.index, func(ctx context.Context) error {
		var err error
		infos, err = l.objs.List(ctx)
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			infos, err = nil, nil
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: listing the snapshots of %q: %w", l.index, err)
	}
	var snaps []Snapshot
	var pending []*jetstream.ObjectInfo
	named := map[string]bool{}
	for _, in := range infos {
		switch {
		case in.Deleted:
		case strings.HasPrefix(in.Name, pendingPrefix):
			pending = append(pending, in)
		case strings.HasPrefix(in.Name, snapPrefix):
			named[in.NUID] = true
			if s, ok := l.snapshotOf(in); ok {
				snaps = append(snaps, s)
			}
		}
	}
	// A process killed while naming an upload can leave its old name
	// beside the new: deleting that would delete the snapshot's bytes.
	pending = slices.DeleteFunc(pending, func(in *jetstream.ObjectInfo) bool { return named[in.NUID] })
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].Seq > snaps[j].Seq })
	return snaps, pending, nil
}

// snapshotOf is the snapshot of this log that in records; objects of
// another kind or log are none (logged).
func (l *Log) snapshotOf(in *jetstream.ObjectInfo) (Snapshot, bool) {
	seq, err := strconv.ParseUint(in.Metadata["seq"], 10, 64)
	if err != nil || in.Name != snapName(seq) {
		l.c.log.Warn("fleet: an object in the snapshot store is not a snapshot; skipped", "index", l.index, "name", in.Name)
		return Snapshot{}, false
	}
	if log := in.Metadata["log"]; log != l.id {
		// A snapshot of a stream of this name that was deleted: another
		// log, whose numbers mean nothing here (never trimmed by, nor
		// restored for, this one).
		l.c.log.Warn("fleet: a snapshot of another log of this index's name; skipped", "index", l.index, "name", in.Name, "log", log)
		return Snapshot{}, false
	}
	nodes, _ := strconv.Atoi(in.Metadata["nodes"]) // only logged: a missing or garbled count reads 0
	return Snapshot{Name: in.Name, Seq: seq, Log: l.id, Checksum: in.Metadata["checksum"], Nodes: nodes, Bytes: in.Size, Time: in.ModTime}, true
}

// Restore writes the newest snapshot that verifies into dir, which must
// not exist: a snapshot whose digest or any file's checksum does not
// match is refused (logged) and the next older tried. It returns the
// snapshot restored; follow the log from its Seq + 1.
func (l *Log) Restore(ctx context.Context, dir string) (Snapshot, error) {
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return Snapshot{}, fmt.Errorf("fleet: restore into %s: it exists; restore into a new folder (nothing is overwritten)", dir)
	}
	snaps, err := l.Snapshots(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	if len(snaps) == 0 {
		return Snapshot{}, fmt.Errorf("fleet: index %q has no snapshot to restore: start a replica from the index the fleet began with", l.index)
	}
	var errs []error
	for _, s := range snaps {
		err := l.restoreOne(ctx, s, dir)
		if err == nil {
			l.c.log.Info("fleet: snapshot restored", "index", l.index, "seq", s.Seq, "dir", dir, "nodes", s.Nodes)
			return s, nil
		}
		if ctx.Err() != nil {
			return Snapshot{}, err
		}
		l.c.log.Error("fleet: snapshot refused", "index", l.index, "name", s.Name, "err", err)
		errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
	}
	return Snapshot{}, fmt.Errorf("fleet: no snapshot of index %q verifies: %w", l.index, errors.Join(errs...))
}

// restoreOne downloads s into a staging folder beside dir, verifies it
// and moves it into place.
func (l *Log) restoreOne(ctx context.Context, s Snapshot, dir string) error {
	staging := dir + ".restore"
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	err := l.c.retryTransfer(ctx, "downloading "+s.Name, int64(s.Bytes), func(ctx context.Context) error {
		return l.readObject(ctx, s.Name, func(r io.Reader) error {
			if err := os.RemoveAll(staging); err != nil {
				return err
			}
			return readTar(r, staging, s.Bytes)
		})
	})
	if err != nil {
		return err
	}
	if err := verifyRestored(staging, s); err != nil {
		return err
	}
	if err := os.Rename(staging, dir); err != nil {
		return err
	}
	return safefile.SyncDir(filepath.Dir(dir))
}

// verifyRestored opens the index (which checks every file's checksum) and
// checks that it is the snapshot's.
func verifyRestored(dir string, s Snapshot) error {
	ix, err := index.Open(dir, store.OpenOptions{})
	if err != nil {
		return err
	}
	defer ix.Close()
	switch lv := ix.Meta.Live; {
	case ix.Manifest.Checksum != s.Checksum:
		return fmt.Errorf("its manifest checksum is %s, the snapshot's record says %s", ix.Manifest.Checksum, s.Checksum)
	case lv == nil || lv.Source != s.Seq || lv.Origin != s.Log:
		return fmt.Errorf("the index does not say it includes the log %s up to %d (%+v)", s.Log, s.Seq, lv)
	}
	return nil
}

// Trim keeps the newest keep snapshots (≥ 1), deletes the older ones and
// drops the log's batches that the oldest kept includes: a replica
// further behind must restore a snapshot.
func (l *Log) Trim(ctx context.Context, keep int) (dropped uint64, err error) {
	if keep < 1 {
		return 0, fmt.Errorf("fleet: Trim keeps %d snapshots: want ≥ 1", keep)
	}
	snaps, pending, err := l.listing(ctx)
	if err != nil || len(snaps) == 0 {
		return 0, err
	}
	if len(snaps) > keep {
		for _, s := range snaps[keep:] {
			if err := l.deleteObject(ctx, s.Name); err != nil {
				return 0, err
			}
		}
		snaps = snaps[:keep]
	}
	oldest := snaps[len(snaps)-1].Seq
	// Uploads no newer than a kept snapshot are left over from killed
	// processes, or lost a race to one.
	for _, in := range pending {
		if seq, ok := pendingSeq(in.Name); ok && seq <= oldest {
			if err := l.deleteObject(ctx, in.Name); err != nil {
				return 0, err
			}
		}
	}
	first, _, err := l.Bounds(ctx)
	if err != nil || oldest < first {
		return 0, err
	}
	err = l.c.retry(ctx, "trimming "+l.name, func(ctx context.Context) error {
		return l.stream.Purge(ctx, jetstream.WithPurgeSequence(oldest+1))
	})
	if err != nil {
		return 0, fmt.Errorf("fleet: trimming the log of %q behind %d: %w", l.index, oldest, err)
	}
	return oldest + 1 - first, nil
}

// deleteObject deletes a stored object; one already gone is no error.
func (l *Log) deleteObject(ctx context.Context, name string) error {
	err := l.c.retry(ctx, "deleting "+name, func(ctx context.Context) error { return l.objs.Delete(ctx, name) })
	if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("fleet: deleting %s of the snapshots of %q: %w", name, l.index, err)
	}
	return nil
}

// writeTar writes the regular files under dir, in name order.
func writeTar(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := addFile(tw, dir, name); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addFile(tw *tar.Writer, dir, name string) error {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// readTar extracts regular files into dir, refusing any other entry, a
// path out of dir, and more than limit bytes in all.
func readTar(r io.Reader, dir string, limit uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	var total uint64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return safefile.SyncDir(dir)
		}
		if err != nil {
			return fmt.Errorf("reading the snapshot: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("snapshot entry %q: type %q is not a regular file", h.Name, h.Typeflag)
		}
		clean := filepath.Clean(filepath.FromSlash(h.Name))
		if !filepath.IsLocal(clean) {
			return fmt.Errorf("snapshot entry %q: a path out of the index folder", h.Name)
		}
		total += uint64(max(h.Size, 0))
		if h.Size < 0 || total > limit {
			return fmt.Errorf("snapshot entry %q: the entries hold more than the snapshot's %d bytes", h.Name, limit)
		}
		if err := extractFile(tr, filepath.Join(dir, clean), h.Size); err != nil {
			return err
		}
	}
}

func extractFile(r io.Reader, path string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return fmt.Errorf("snapshot entry %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// folderBytes is the size of the files under dir.
func folderBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// Fingerprint identifies the content of w's index: it writes the index
// as a snapshot would be (compacted, with the number of the last batch
// it took) under scratch and hashes its manifest without the time it was
// written. Replicas that took the same batches have the same
// fingerprint, however they grouped them or compacted meanwhile.
func Fingerprint(ctx context.Context, w *live.Writer, scratch string) (string, error) {
	ix, seq := w.Position()
	tmp, err := os.MkdirTemp(scratch, "gleaner-fingerprint-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "index")
	if _, err := ix.WriteTo(ctx, dir, &index.LiveState{Source: seq, Origin: w.Origin()}, ""); err != nil {
		return "", err
	}
	raw, err := os.ReadFile(filepath.Join(dir, store.ManifestFile))
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", err
	}
	delete(m, "created")
	delete(m, "checksum")
	canon, err := json.Marshal(m) // map keys sorted
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return fmt.Sprintf("seq %d sha256:%x", seq, sum[:16]), nil
}
