package fleettest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// StartWithCreds starts a lone server that admits only users of an
// account its operator signed (NATS's decentralized JWT auth, as a
// production cluster runs it), and writes one user's credentials file.
func StartWithCreds(t testing.TB) (c *Cluster, credsFile string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, err := okp.PublicKey()
	must(err)
	oc := jwt.NewOperatorClaims(opub)
	ojwt, err := oc.Encode(okp)
	must(err)
	oc, err = jwt.DecodeOperatorClaims(ojwt)
	must(err)
	account := func(js bool) (nkeys.KeyPair, string, string) {
		kp, err := nkeys.CreateAccount()
		must(err)
		pub, err := kp.PublicKey()
		must(err)
		ac := jwt.NewAccountClaims(pub)
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		enc, err := ac.Encode(okp)
		must(err)
		return kp, pub, enc
	}
	_, sysPub, sysJWT := account(false)
	akp, apub, ajwt := account(true)
	res := &server.MemAccResolver{}
	must(res.Store(sysPub, sysJWT))
	must(res.Store(apub, ajwt))
	ukp, err := nkeys.CreateUser()
	must(err)
	upub, err := ukp.PublicKey()
	must(err)
	uc := jwt.NewUserClaims(upub)
	ujwt, err := uc.Encode(akp)
	must(err)
	seed, err := ukp.Seed()
	must(err)
	creds, err := jwt.FormatUserConfig(ujwt, seed)
	must(err)
	credsFile = filepath.Join(t.TempDir(), "user.creds")
	must(os.WriteFile(credsFile, creds, 0o600))
	ports, err := freePorts(1)
	must(err)
	o := &server.Options{ServerName: "n1", Host: "127.0.0.1", Port: ports[0], JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true, JetStreamMaxStore: 1 << 30, JetStreamMaxMemory: 64 << 20,
		TrustedOperators: []*jwt.OperatorClaims{oc}, AccountResolver: res, SystemAccount: sysPub}
	c = &Cluster{opts: []*server.Options{o}, servers: make([]*server.Server, 1)}
	must(c.Restart(0))
	t.Cleanup(c.Shutdown)
	return c, credsFile
}
