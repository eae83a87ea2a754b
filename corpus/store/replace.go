package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// ErrNotOurs is returned when a target folder exists and holds something
// other than a gleaner index, so replacing it could destroy user data.
var ErrNotOurs = errors.New("exists and is not a gleaner index; refusing to replace it")

// CheckTarget reports whether a store may be written at dir: dir must not
// exist, be an empty folder, or hold a gleaner index (a manifest.json whose
// format is gleaner's). Callers check before any long work, so a refusal
// costs nothing. Files of a user's own inside an index folder are kept by
// every rewrite (see Promote).
func CheckTarget(dir string) error {
	return CheckFolder(dir, isIndex, ErrNotOurs)
}

// isIndex reports whether dir holds a gleaner manifest.
func isIndex(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return false
	}
	var m struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(b, &m) == nil && m.Format == FormatName
}

// CheckFolder reports whether something may be written at dir: dir must
// not exist, be an empty folder, or be recognised by ours; otherwise the
// error wraps refusal.
func CheckFolder(dir string, ours func(dir string) bool, refusal error) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s %w (it is a file)", dir, refusal)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 || ours(dir) {
		return nil
	}
	return fmt.Errorf("%s %w", dir, refusal)
}

// Promote moves the complete store at src (a folder beside final) into
// final's place. An existing index at final is replaced only after src is
// complete; files in it that its manifest does not list (a user's notes)
// are moved into the new folder, and a clash with a new file's name is an
// error before anything moves. A target that is not a gleaner index is
// refused.
func Promote(src, final string) error {
	if err := CheckTarget(final); err != nil {
		return err
	}
	var m Manifest
	if b, err := os.ReadFile(filepath.Join(final, ManifestFile)); err == nil {
		json.Unmarshal(b, &m) // a damaged manifest lists nothing: every other file is kept
	}
	return ReplaceDir(src, final, func(name string) bool {
		_, listed := m.Files[name]
		return listed || name == ManifestFile
	})
}

// ReplaceDir moves the complete folder src (beside final) into final's
// place. The entries of an existing final that owned does not claim are the
// user's, and they stay at final:
//   - files (anything but a folder) are hard-linked into src before the
//     swap, so a crash at any moment leaves them at final;
//   - folders, and files that cannot be linked, are moved in after the
//     swap, keeping what they are (owner, mode, open handles). A crash in
//     between leaves them in the hidden folder, and the next write's
//     CleanDebris moves them back.
//
// After the swap the old folder is listed again, so a file saved, added or
// deleted there while the new version was being swapped in is carried
// over. A name clash with a new file is an error before anything moves.
// When an entry cannot be carried over, the old folder is kept whole under
// a hidden ".kept-" name (never at src, which callers remove) and the error
// says where.
func ReplaceDir(src, final string, owned func(name string) bool) error {
	// "a/../a" names final through itself: once final moves aside, that
	// spelling no longer resolves, so work with the lexical path.
	src, final = filepath.Clean(src), Target(final)
	foreign, err := foreignEntries(final, owned)
	if err != nil {
		return err
	}
	for _, name := range foreign {
		if _, err := os.Lstat(filepath.Join(src, name)); err == nil {
			return fmt.Errorf("store: %s holds %s, which the new version also writes; move it away first", final, name)
		}
	}
	linked := linkFiles(final, src, foreign)
	if err := safefile.SyncDir(src); err != nil {
		return err
	}
	// The lock follows the folder, so the old one stays locked at the
	// staging path until settle is done: a concurrent CleanDebris must not
	// take it for debris meanwhile.
	defer Hold(final)()
	replaceStep("linked")
	old, err := swapIn(src, final)
	if err != nil {
		return err
	}
	replaceStep("swapped")
	if old != "" {
		if err := settle(old, final, owned, linked); err != nil {
			return err
		}
	}
	if err := safefile.SyncDir(final); err != nil {
		return err
	}
	return safefile.SyncDir(filepath.Dir(final))
}

// linkFiles hard-links the named entries of from that are not folders into
// to and returns what each linked name was. An entry that cannot be linked
// (a file system without hard links, another user's file) is left for
// settle to move.
func linkFiles(from, to string, names []string) map[string]os.FileInfo {
	linked := map[string]os.FileInfo{}
	for _, name := range names {
		fi, err := os.Lstat(filepath.Join(from, name))
		if err != nil || fi.IsDir() {
			continue
		}
		if linkFile(filepath.Join(from, name), filepath.Join(to, name)) == nil {
			linked[name] = fi
		}
	}
	return linked
}

// settle carries the user's entries of old (the folder final held) into
// final after the swap, then removes old. It lists old again: an entry
// final lacks is moved in (folders, files not linked, files added during
// the swap); a linked file the user replaced in old replaces its link; a
// linked file the user deleted from old is removed from final. Anything
// else that differs is a conflict: old is kept (keep) and the error names
// it.
func settle(old, final string, owned func(string) bool, linked map[string]os.FileInfo) error {
	if _, err := os.Lstat(old); err != nil {
		// Something removed it: nothing tells a deleted file from a lost one.
		return fmt.Errorf("store: the new version of %s is in place, but the old folder %s is gone (%v): check your own files there", final, old, err)
	}
	foreign, err := foreignEntries(old, owned)
	if err != nil {
		return keep(old, final, err)
	}
	var failed []string
	for _, name := range foreign {
		if err := carry(old, final, name, linked[name]); err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", name, err))
		}
	}
	for name, was := range linked {
		if _, err := os.Lstat(filepath.Join(old, name)); errors.Is(err, os.ErrNotExist) && isFile(filepath.Join(final, name), was) {
			os.Remove(filepath.Join(final, name)) // deleted by the user during the swap
		}
	}
	if len(failed) > 0 {
		return keep(old, final, fmt.Errorf("could not carry over %s", strings.Join(failed, ", ")))
	}
	return os.RemoveAll(old)
}

// carry moves old's entry name into final unless final already holds it:
// the same file (a link), or a newer one the user saved in final since
// the swap while old still holds the file that was linked. A link of the
// file it was (was) that the user has since replaced in old is replaced by
// the newer one.
func carry(old, final, name string, was os.FileInfo) error {
	from, to := filepath.Join(old, name), filepath.Join(final, name)
	fo, err := os.Lstat(from)
	if err != nil {
		return err
	}
	ft, err := os.Lstat(to)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return moveEntry(from, to)
	case err != nil:
		return err
	case os.SameFile(fo, ft), was != nil && os.SameFile(fo, was):
		return nil
	case was != nil && os.SameFile(ft, was) && !fo.IsDir():
		return moveEntry(from, to) // replaces the stale link in one step
	}
	return fmt.Errorf("%s already holds a different %s", final, name)
}

// isFile reports whether path is the file was.
func isFile(path string, was os.FileInfo) bool {
	fi, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, was)
}

// keep renames old, which holds user entries that could not be carried
// into final, to a hidden ".kept-" sibling that callers do not remove and
// that the next CleanDebris tries again, and returns an error naming it.
func keep(old, final string, cause error) error {
	kept := filepath.Join(filepath.Dir(final), fmt.Sprintf(".%s.kept-%d", filepath.Base(final), time.Now().UnixNano()))
	if err := os.Rename(old, kept); err != nil {
		return fmt.Errorf("store: the new version of %s is in place, but %v; the old folder %s holds them and could not be renamed (%v): move them out before removing it", final, cause, old, err)
	}
	return fmt.Errorf("store: the new version of %s is in place, but %v; they are in %s", final, cause, kept)
}

// linkFile and moveEntry are os.Link and os.Rename; tests make them fail.
var (
	linkFile  = os.Link
	moveEntry = os.Rename
)

// replaceStep is called as ReplaceDir passes the points where a kill
// would stop it; tests stop there to see what a crash would leave.
var replaceStep = func(step string) {}

// errExchange: the system cannot swap two folders atomically.
var errExchange = errors.New("store: atomic folder exchange unsupported")

// swapIn puts src at final and returns where the folder final held went
// ("" when there was none). Where the system can, the two are exchanged
// in one step: a crash leaves either the old or the new folder at final,
// never nothing (two renames leave a moment where final does not exist).
func swapIn(src, final string) (string, error) {
	if _, err := os.Stat(final); err != nil {
		return "", os.Rename(src, final)
	}
	err := exchange(src, final)
	if err == nil {
		return src, nil
	}
	if !errors.Is(err, errExchange) {
		return "", err
	}
	old := src + ".old"
	if err := os.Rename(final, old); err != nil {
		return "", err
	}
	if err := os.Rename(src, final); err != nil {
		os.Rename(old, final)
		return "", err
	}
	return old, nil
}

// foreignEntries lists the entries of dir that owned does not claim.
func foreignEntries(dir string, owned func(string) bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !owned(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// Target is where a write to dir lands: dir itself, or, when dir is a
// symbolic link to a folder, that folder. A rewrite replaces the folder
// the link names and keeps the link (renaming over dir would replace the
// link with a folder and leave its target stale). Parent folders are left
// as given.
func Target(dir string) string {
	dir = filepath.Clean(dir)
	if fi, err := os.Lstat(dir); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return real
		}
	}
	return dir
}

// StageDir returns a fresh hidden folder beside final for a store that will
// be finished there (more files, a trained head) before Promote.
func StageDir(final string) (string, error) {
	final = Target(final)
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(filepath.Dir(final), "."+filepath.Base(final)+".staging-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // readable as the folder it becomes, as NewWriter's
	}
	return dir, err
}

// Debris lists the hidden siblings that interrupted writes of final left
// behind (a kill -9 cannot clean up). They hold the only copy of an index
// only when a crash between a two-rename swap's renames left final
// missing (a ".old" one, which CleanDebris renames back); one may hold
// user entries that a crash stopped moving, and a ".kept-" one user
// entries that a write could not carry over.
func Debris(final string) []string {
	final = filepath.Clean(final)
	base := filepath.Base(final)
	entries, err := os.ReadDir(filepath.Dir(final))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if isDebrisOf(e.Name(), base) {
			out = append(out, filepath.Join(filepath.Dir(final), e.Name()))
		}
	}
	slices.Sort(out)
	return out
}

// isDebrisOf reports whether name is a hidden sibling that a write of the
// folder base makes: ".base.tmp-*", ".base.staging-*" (".old" after a
// two-rename swap), "..base.staging-*.tmp-*" (a Writer's over a staging
// folder) or ".base.kept-*". Names are compared as text, never as glob
// patterns, so a folder named "a[b]" does not take "ab"'s.
func isDebrisOf(name, base string) bool {
	for _, kind := range []string{".tmp-", ".staging-", ".kept-"} {
		if strings.HasPrefix(name, "."+base+kind) {
			return true
		}
	}
	rest, ok := strings.CutPrefix(name, ".."+base+".staging-")
	return ok && strings.Contains(rest, ".tmp-")
}
