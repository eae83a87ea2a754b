package kgextract

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/gleaner-rag/gleaner/internal/safefile"
)

// replyCache keeps valid replies as one small JSON file each, written by
// rename so a crash never leaves half a file under a key.
type replyCache struct{ dir string }

type cacheEntry struct {
	Model   string `json:"model"`
	Prompt  string `json:"prompt_version"`
	Content string `json:"content"`
	Input   int    `json:"input_tokens"`
	Output  int    `json:"output_tokens"`
}

// cacheMarker marks a folder as a reply cache, so a cache path pointing
// at someone's folder is refused instead of filled.
const cacheMarker = ".gleaner-llm-cache"

func openCache(dir string) (*replyCache, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return nil, fmt.Errorf("kgextract: cache folder: %w", err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, cacheMarker)); err != nil {
			return nil, fmt.Errorf("kgextract: cache folder %s holds files and is not a gleaner reply cache (no %s); give an empty or new folder", dir, cacheMarker)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kgextract: cache folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, cacheMarker), []byte("replies of gleaner's LLM extractor, one JSON file per (model, prompt version, text)\n"), 0o644); err != nil {
		return nil, fmt.Errorf("kgextract: cache folder: %w", err)
	}
	return &replyCache{dir: dir}, nil
}

func (c *replyCache) path(key string) string { return filepath.Join(c.dir, key[:2], key+".json") }

func (c *replyCache) get(key string, log *slog.Logger) (cacheEntry, bool) {
	b, err := safefile.Read(c.path(key), safefile.MaxConfig)
	if err != nil {
		return cacheEntry{}, false
	}
	var e cacheEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Prompt != PromptVersion {
		log.Warn("kgextract: ignoring an unreadable cache file", "file", c.path(key), "err", err)
		return cacheEntry{}, false
	}
	return e, true
}

func (c *replyCache) put(key string, e cacheEntry) error {
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("kgextract: cache: %w", err)
	}
	b, _ := json.Marshal(e)
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("kgextract: cache: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("kgextract: cache %s: %v %v", p, werr, cerr)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("kgextract: cache: %w", err)
	}
	return nil
}
