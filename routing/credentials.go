package routing

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
)

// Credentials are what a tenant's client is built from. Every field enters
// the fingerprint, the Secret included, but only through the keyed hash.
type Credentials struct {
	// Endpoint names the server: a DSN, URI or host:port. A DSN that
	// embeds a password is fine; it is hashed like the rest.
	Endpoint string
	User     string
	// Secret is the password or token.
	Secret string
	// Params are any further settings that make two clients differ
	// (database, TLS mode, pool size).
	Params map[string]string
}

// fingerprint identifies a credential set within this process. Two tenants
// with equal fingerprints share one client.
type fingerprint [sha256.Size]byte

// String is a short prefix for logs; it reveals nothing about the secret.
func (f fingerprint) String() string { return hex.EncodeToString(f[:6]) }

// fingerprintKey is drawn once per process: fingerprints cannot be compared
// across processes or brute-forced offline from a log line.
var fingerprintKey = func() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("routing: no randomness for the fingerprint key: " + err.Error())
	}
	return k
}()

// fingerprint hashes the credentials under the per-process key. Fields are
// length-prefixed so that no two different sets collide by concatenation.
func (c Credentials) fingerprint() fingerprint {
	m := hmac.New(sha256.New, fingerprintKey)
	write(m, c.Endpoint)
	write(m, c.User)
	write(m, c.Secret)
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		write(m, k)
		write(m, c.Params[k])
	}
	var f fingerprint
	m.Sum(f[:0])
	return f
}

func write(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
