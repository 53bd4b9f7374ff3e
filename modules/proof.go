package modules

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tenantwire/tenantwire/tenancy"
)

// ErasureProof is an offboard's report in a form to hand over and keep:
// for the tenant, every module's families scanned on its server after its
// teardown and found empty, what was found left, and what the module
// cannot remove and why, with the times and a digest of the whole. Erased
// is true only when no module failed and nothing was left.
type ErasureProof struct {
	Tenant  string        `json:"tenant"`
	Started time.Time     `json:"started"`
	Ended   time.Time     `json:"ended"`
	Erased  bool          `json:"erased"`
	Modules []ProofModule `json:"modules"`
	// Digest is "sha256:" and the hex SHA-256 of the proof's JSON with
	// Digest empty: Check recomputes it.
	Digest string `json:"digest"`
}

// ProofModule is one module's part of an ErasureProof.
type ProofModule struct {
	Module  string `json:"module"`
	Backend string `json:"backend"`
	// Empty is the families scanned after the teardown and found holding
	// nothing of the tenant.
	Empty []ProofFamily `json:"empty,omitempty"`
	// Left is the families still holding the tenant's data.
	Left []ProofFamily `json:"left,omitempty"`
	// Kept is what the backend cannot remove, with the reason.
	Kept []ProofFamily `json:"kept,omitempty"`
	// Skipped says why the module had nothing to remove or scan.
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// ProofFamily is one family of a proof: its kind, name, where on the
// server, the route, and for a family left its count and a sample, for a
// family kept the reason.
type ProofFamily struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Where  string `json:"where"`
	Route  string `json:"route,omitempty"`
	Count  int64  `json:"count,omitempty"`
	Sample string `json:"sample,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Proof is the report of an Offboard (or VerifyErasure) of tenant as an
// ErasureProof, its digest computed.
func (r Report) Proof(tenant tenancy.ID) ErasureProof {
	p := ErasureProof{Tenant: tenant.String(), Erased: len(r) > 0, Modules: make([]ProofModule, 0, len(r))}
	for _, l := range r {
		m := ProofModule{Module: l.Module, Backend: l.Backend, Skipped: l.Skipped}
		if l.Err != nil {
			m.Error, p.Erased = l.Err.Error(), false
		}
		left := map[Family]bool{}
		for _, f := range l.Left {
			left[f.Family] = true
			m.Left = append(m.Left, ProofFamily{Kind: string(f.Family.Kind), Name: f.Family.Name, Where: f.Family.Where, Route: f.Family.Route, Count: f.Count, Sample: f.Sample})
			p.Erased = false
		}
		for _, f := range l.Checked {
			if !left[f] {
				m.Empty = append(m.Empty, proofFamily(f))
			}
		}
		for _, k := range l.Kept {
			pf := proofFamily(k.Family)
			pf.Reason = k.Reason
			m.Kept = append(m.Kept, pf)
		}
		p.Started, p.Ended = earliest(p.Started, l.Started), latest(p.Ended, l.Ended)
		p.Modules = append(p.Modules, m)
	}
	p.Started, p.Ended = p.Started.UTC().Round(0), p.Ended.UTC().Round(0)
	p.Digest = p.digest()
	return p
}

func proofFamily(f Family) ProofFamily {
	return ProofFamily{Kind: string(f.Kind), Name: f.Name, Where: f.Where, Route: f.Route}
}

// Check reports whether the proof is as its offboard wrote it: nil, or
// erasure_proof_altered when its digest does not match its content.
func (p ErasureProof) Check() error {
	if want := p.digest(); p.Digest != want {
		return &tenancy.Error{Code: tenancy.CodeErasureProofAltered,
			Detail: fmt.Sprintf("the erasure proof of tenant %q has digest %q; its content hashes to %q", p.Tenant, p.Digest, want),
			Fix:    "use the proof as the offboard returned it; to change what it says, verify again (Tenants.VerifyErasure) and keep the new proof"}
	}
	return nil
}

func (p ErasureProof) digest() string {
	p.Digest = ""
	// Times in UTC, so a proof read back from JSON in another zone hashes
	// the same; the monotonic reading is not part of the content.
	p.Started, p.Ended = p.Started.UTC().Round(0), p.Ended.UTC().Round(0)
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // only strings, bools, ints and times: cannot fail
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
