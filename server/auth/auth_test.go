package auth

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func mustKey(t *testing.T, id string, scopes ...Scope) (Key, string) {
	t.Helper()
	tok, hash, err := NewToken(id)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Hash: hash, Scopes: scopes, Indexes: []string{"*"}}, tok
}

func TestTokensAuthenticateOnlyTheirKey(t *testing.T) {
	a, ta := mustKey(t, "reader_1", Read)
	b, tb := mustKey(t, "admin", Admin)
	r, err := New(File{Version: FileVersion, Keys: []Key{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if k := r.Authenticate(ta); k == nil || k.ID != "reader_1" {
		t.Fatalf("token of reader_1 → %+v", k)
	}
	if k := r.Authenticate(tb); k == nil || k.ID != "admin" {
		t.Fatalf("token of admin → %+v", k)
	}
	_, secretB, _ := splitToken(tb)
	wrong := []string{
		"", "glk_", ta[:len(ta)-1], ta + "0", strings.ToUpper(ta),
		TokenPrefix + "reader_1_" + secretB, // admin's secret under reader_1's id
		TokenPrefix + "nobody_" + secretB,   // an unknown id
		strings.Replace(ta, TokenPrefix, "xyz_", 1),
		strings.Repeat("a", 100000),
	}
	for _, tok := range wrong {
		if k := r.Authenticate(tok); k != nil {
			t.Errorf("%.40q authenticated as %s", tok, k.ID)
		}
	}
	var none *Keyring
	if none.Authenticate(ta) != nil {
		t.Error("a nil keyring authenticated a token")
	}
}

func TestBadKeysAreNamed(t *testing.T) {
	good, _ := mustKey(t, "k", Read)
	cases := []struct {
		mutate func(*Key)
		want   string
	}{
		{func(k *Key) { k.ID = "a b" }, "id"},
		{func(k *Key) { k.ID = "" }, "id"},
		{func(k *Key) { k.Scopes = nil }, "scopes: none"},
		{func(k *Key) { k.Scopes = []Scope{"root"} }, `unknown scope "root"`},
		{func(k *Key) { k.Indexes = nil }, "indexes: none"},
		{func(k *Key) { k.Indexes = []string{"../x"} }, "is not an index name"},
		{func(k *Key) { k.Hash = "md5:00:00" }, "hash"},
		{func(k *Key) { k.Hash = "sha256:0011:" + strings.Repeat("0", 64) }, "salt"},
		{func(k *Key) { k.Hash = "sha256:" + strings.Repeat("0", 32) + ":abcd" }, "digest"},
		{func(k *Key) { k.Rate = -1 }, "rate"},
		{func(k *Key) { k.Rate = 1e-19 }, "rate"},
		{func(k *Key) { k.Burst = -1 }, "burst"},
		{func(k *Key) { k.Groups = []string{""} }, "groups"},
	}
	for _, c := range cases {
		k := good
		c.mutate(&k)
		_, err := New(File{Version: FileVersion, Keys: []Key{good, k}})
		if err == nil || !strings.Contains(err.Error(), "keys[1]") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error naming keys[1] and %q, got %v", c.want, err)
		}
	}
	if _, err := New(File{Version: FileVersion, Keys: []Key{good, good}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a repeated id: %v", err)
	}
	if _, err := New(File{Version: 2}); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("version 2: %v", err)
	}
}

func TestLoadIsStrictAndSaveRoundTrips(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "keys.json")
	if _, err := Load(p); err == nil {
		t.Fatal("a missing keys file loaded")
	}
	k, tok := mustKey(t, "svc", Read, Write)
	k.Indexes, k.Groups, k.Rate = []string{"wiki"}, []string{"eng"}, 5
	if err := Save(p, File{Version: FileVersion, Keys: []Key{k}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("keys file mode %v, want 0600", st.Mode().Perm())
	}
	r, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Authenticate(tok)
	if got == nil || !got.MayUse("wiki") || got.MayUse("other") || !got.Has(Write) || got.Has(Admin) || got.BurstOrDefault() != 5 {
		t.Fatalf("round trip: %+v", got)
	}
	for name, body := range map[string]string{
		"unknown field": `{"version":1,"keys":[],"extra":1}`,
		"given twice":   `{"version":1,"version":1,"keys":[]}`,
		"trailing":      `{"version":1,"keys":[]} {}`,
	} {
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "regular") {
		t.Errorf("/dev/zero: %v", err)
	}
	os.Remove(p)
	os.Symlink("/dev/null", p)
	if err := Save(p, File{Version: FileVersion}); err == nil {
		t.Error("Save replaced a symbolic link")
	}
}

// Concurrent updates of one keys file keep every change: 20 adds racing
// each other and a revoke leave 19 keys, the revoked one gone.
func TestConcurrentUpdatesKeepEveryChange(t *testing.T) {
	p := filepath.Join(t.TempDir(), "keys.json")
	victim, _ := mustKey(t, "victim", Admin)
	if err := Save(p, File{Version: FileVersion, Keys: []Key{victim}}); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 21)
	for i := range 20 {
		go func() {
			k, _ := mustKey(t, fmt.Sprintf("k%d", i), Read)
			errs <- Update(p, func(f *File) error { f.Keys = append(f.Keys, k); return nil })
		}()
	}
	go func() {
		errs <- Update(p, func(f *File) error {
			f.Keys = slices.DeleteFunc(f.Keys, func(k Key) bool { return k.ID == "victim" })
			return nil
		})
	}()
	for range 21 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 20 || r.Key("victim") != nil {
		t.Fatalf("%d keys after 20 adds and a revoke (victim kept: %v)", r.Len(), r.Key("victim") != nil)
	}
}

// A keys file other users may write is refused: anyone could add a key.
func TestWritableKeysFileIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "keys.json")
	if err := Save(p, File{Version: FileVersion}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o666)
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "chmod go-w") {
		t.Fatalf("a 0666 keys file: %v", err)
	}
}
