package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

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
// user's: they are hard-linked into the new folder before the swap (a name
// clash is an error before anything is linked), so a crash at any moment
// leaves them at final. Where hard links are unsupported they are moved
// after the swap, and a crash midway leaves them in a hidden sibling, never
// deletes them.
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
	linked := linkEntries(final, src, foreign)
	if err := safefile.SyncDir(src); err != nil {
		return err
	}
	replaceStep("linked")
	old, err := swapIn(src, final)
	if err != nil {
		return err
	}
	replaceStep("swapped")
	if old != "" && !linked {
		for _, name := range foreign {
			if err := os.Rename(filepath.Join(old, name), filepath.Join(final, name)); err != nil {
				return fmt.Errorf("store: keeping %s: %w (it is still in %s)", name, err, old)
			}
		}
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return safefile.SyncDir(filepath.Dir(final))
}

// linkEntries hard-links the named entries of from (folders as trees of
// links) into to, so that the user's files are in both folders before the
// swap and a crash at any moment leaves them at final. It reports whether
// every entry was linked; where one cannot be (a file system without hard
// links), it removes what it made and ReplaceDir moves the entries after
// the swap instead, as it did before.
func linkEntries(from, to string, names []string) bool {
	for i, name := range names {
		if err := linkTree(filepath.Join(from, name), filepath.Join(to, name)); err != nil {
			for _, made := range names[:i+1] {
				os.RemoveAll(filepath.Join(to, made))
			}
			return false
		}
	}
	return true
}

// linkTree makes to a hard link of from, or, when from is a folder, a new
// folder of links to its entries (folders cannot be hard-linked).
func linkTree(from, to string) error {
	fi, err := os.Lstat(from)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return os.Link(from, to) // a symbolic link is linked itself, not followed
	}
	if err := os.Mkdir(to, fi.Mode().Perm()); err != nil {
		return err
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := linkTree(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

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
// behind (a kill -9 cannot clean up). They never hold the only copy of an
// index; a ".old" one may hold user files that a crash stopped moving.
func Debris(final string) []string {
	final = filepath.Clean(final)
	var out []string
	base := filepath.Base(final)
	for _, pat := range []string{"." + base + ".tmp-*", "." + base + ".staging-*", ".." + base + ".staging-*.tmp-*"} {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(final), pat))
		out = append(out, m...)
	}
	slices.Sort(out)
	return out
}
