package modules

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/tenantwire/tenantwire/migrate"
	"github.com/tenantwire/tenantwire/tenancy"
)

// MoveOptions configures Tenants.Move.
type MoveOptions struct {
	// DryRun reports the steps a move would take and does nothing.
	DryRun bool
	// Record writes the tenant's record to the app's store, which
	// LifecycleConfig.Placed reads, so every replica follows the move:
	// its write fence, then its new placement, then the fence lifted.
	// After each write the move waits one refresh, so every replica has
	// read it. Nil: the move is this replica's only, for an app of one
	// replica.
	Record func(ctx context.Context, rec Placed) error
}

// MoveReport is what a move did, step by step.
type MoveReport struct {
	Tenant   tenancy.ID
	Module   string
	From, To tenancy.Tier
	Steps    []MoveStep
	// Records is how many records were copied and verified.
	Records int64
	// Fenced is how long the tenant's writes were refused.
	Fenced time.Duration
}

// MoveStep is one step of a move and what it found.
type MoveStep struct {
	Step           string
	Started, Ended time.Time
	Detail         string
}

// The steps of a move, in order.
const (
	MoveFence     = "fence"
	MoveProvision = "provision"
	MoveCopy      = "copy"
	MoveVerify    = "verify"
	MoveSwitch    = "switch"
	MoveLift      = "lift"
)

// Move moves tenant's data in module (one that offers placements) to the
// placement to, online: the tenant's reads keep being served from where
// it is; its writes are fenced (tenant_moving, retryable) while the data
// is copied, verified record by record, and the placement switched; then
// the fence is lifted and the tenant is served from to. The old copy is
// kept until CleanupMove.
//
// Refused before anything is copied: a module without placements or a
// tier it does not offer (tenant_placement_invalid), a tier under the
// tenant's plan (tenant_placement_under_floor), a suspended tenant or one
// already moving in this process (tenant_move_refused), and a dedicated
// target another tenant holds (dedicated_target_shared, by the server's
// identity, when the target is provisioned). A copy that does not verify
// is removed and the tenant stays where it was (tenant_move_unverified).
// Each step can be rerun: a move cut off at any point and run again ends
// where one uninterrupted run ends.
func (t *Tenants) Move(ctx context.Context, tenant tenancy.ID, module string, to tenancy.Tier, o MoveOptions) (MoveReport, error) {
	rep := MoveReport{Tenant: tenant, Module: module, To: to}
	if tenant.IsZero() {
		return rep, tenancy.Unbound()
	}
	places := t.placementsIn(module)
	if len(places) == 0 {
		return rep, moveInvalid(module, "", fmt.Sprintf("module %q offers no placements (or the app has no such module)", module),
			"name a module wired with placements (modules.Placements)")
	}
	offer := *places[0].Placement
	if !offer.Offer.Offers(to) {
		return rep, moveInvalid(module, places[0].Backend, fmt.Sprintf("module %q offers %v, not %s", module, offer.Offer.Tiers, to),
			"move the tenant to one of the module's placements")
	}
	from, err := t.PlacementOf(offer.Offer, tenant, places[0].Backend, module)
	if err != nil && tenancy.CodeOf(err) != tenancy.CodeTenantPlacementUnderFloor {
		return rep, err
	}
	rep.From = from
	if plan := t.Placement(tenant).Plan; !to.AtLeast(plan) {
		return rep, &tenancy.Error{Code: tenancy.CodeTenantPlacementUnderFloor, Backend: places[0].Backend, Module: module, Tiers: true, Reached: to, Required: plan,
			Detail: fmt.Sprintf("tenant %s's plan requires %s; nothing was moved", tenant, plan),
			Fix:    fmt.Sprintf("move the tenant to %s or above, or lower its plan first", plan)}
	}
	if t.Suspended(tenant) {
		return rep, moveRefused(tenant, module, places[0].Backend, "the tenant is suspended or being offboarded", "resume the tenant (Tenants.Resume, or Provision) and move it then")
	}
	src, dst := placedState(places, from), placedState(places, to)
	if o.DryRun {
		for _, s := range []string{MoveFence, MoveProvision, MoveCopy, MoveVerify, MoveSwitch, MoveLift} {
			rep.Steps = append(rep.Steps, MoveStep{Step: s, Detail: "dry run: " + s + " from " + src.Module + " to " + dst.Module})
		}
		return rep, nil
	}
	if !t.startMove(module, tenant) {
		return rep, moveRefused(tenant, module, src.Backend, "a move of the tenant in this module is already under way in this process", "wait for it to end, then rerun")
	}
	defer t.endMove(module, tenant)
	step := func(name string, run func() (string, error)) error {
		s := MoveStep{Step: name, Started: time.Now()}
		detail, err := run()
		s.Ended, s.Detail = time.Now(), detail
		rep.Steps = append(rep.Steps, s)
		return err
	}
	if from == to {
		// Already there (a rerun after the switch): lift what is left.
		return rep, step(MoveLift, func() (string, error) { return "already at " + to.String(), t.lift(ctx, tenant, module, o) })
	}
	fenced := time.Now()
	if err := step(MoveFence, func() (string, error) { return "", t.fenceWrites(ctx, tenant, module, to, o) }); err != nil {
		return rep, t.unfence(ctx, tenant, module, o, err)
	}
	if err := step(MoveProvision, func() (string, error) { return dst.Module, provisionAt(ctx, dst, tenant) }); err != nil {
		return rep, t.unfence(ctx, tenant, module, o, err)
	}
	var copied digest
	if err := step(MoveCopy, func() (string, error) {
		var err error
		copied, err = copyTenant(ctx, tenant, src, dst)
		return fmt.Sprintf("%d records", copied.records()), err
	}); err != nil {
		return rep, t.unfence(ctx, tenant, module, o, err)
	}
	rep.Records = copied.records()
	if err := step(MoveVerify, func() (string, error) { return verifyCopy(ctx, tenant, src, dst, copied) }); err != nil {
		// The tenant stays where it was: its copy is removed.
		if dst.Offboard != nil {
			rerr := dst.Offboard(ctx, tenant)
			if rerr == nil {
				t.dropCopy(tenant, module, to)
			}
			err = fmt.Errorf("%w (removing the copy: %v)", err, rerr)
		}
		return rep, t.unfence(ctx, tenant, module, o, err)
	}
	if err := step(MoveSwitch, func() (string, error) { return "", t.switchTo(ctx, tenant, module, from, to, o) }); err != nil {
		return rep, t.unfence(ctx, tenant, module, o, err)
	}
	err = step(MoveLift, func() (string, error) { return "", t.lift(ctx, tenant, module, o) })
	rep.Fenced = time.Since(fenced)
	return rep, err
}

// CleanupMove removes tenant's old copy in module at the placement from,
// which a Move left, and checks with the module's verifier that nothing
// of the tenant is left there (tenant_erasure_incomplete otherwise). It
// refuses the tenant's current placement (tenant_move_refused).
func (t *Tenants) CleanupMove(ctx context.Context, tenant tenancy.ID, module string, from tenancy.Tier) (Report, error) {
	places := t.placementsIn(module)
	src := placedState(places, from)
	if src == nil {
		return nil, moveInvalid(module, "", fmt.Sprintf("module %q has no placement %s", module, from), "name a placement the module offers")
	}
	if at, _ := t.PlacementOf(src.Placement.Offer, tenant, src.Backend, module); at == from {
		return nil, moveRefused(tenant, module, src.Backend, fmt.Sprintf("%s is the tenant's placement, not an old copy", from), "move the tenant first, or offboard it")
	}
	line := StepReport{Module: src.Module, Backend: src.Backend, Started: time.Now()}
	if src.Offboard == nil {
		line.Skipped = SkippedNoTeardown
	} else {
		line.Err = src.Offboard(ctx, tenant)
	}
	line.Ended = time.Now()
	rep := Report{line}
	if line.Err == nil && line.Skipped == "" && src.Verify != nil {
		e, err := src.Verify(ctx, tenant)
		rep[0].Checked, rep[0].Left, rep[0].Kept, rep[0].Ended = e.Checked, e.Left, e.Kept, time.Now()
		switch {
		case err != nil:
			rep[0].Err = fmt.Errorf("verifying the erasure: %w", err)
		case len(e.Left) > 0:
			rep[0].Err = ErasureIncomplete(src.Module, src.Backend, tenant, e.Left)
		}
	}
	if rep.Err() == nil {
		t.dropCopy(tenant, module, from)
	}
	return rep, rep.Err()
}

// dropCopy unlists tenant's copy at placement at of module on this
// replica: removed and verified. A store's record that still lists it
// only makes a later Offboard erase and verify that placement again.
func (t *Tenants) dropCopy(tenant tenancy.ID, module string, at tenancy.Tier) {
	t.updatePlaced(tenant, func(p *Placed) { p.Copies = withCopy(p.Copies, module, at, false) })
}

// placementsIn is module's placed states.
func (t *Tenants) placementsIn(module string) []*TenantState {
	var out []*TenantState
	for _, s := range t.states {
		if s.Placement != nil && s.Placement.Module == module {
			out = append(out, s)
		}
	}
	return out
}

func placedState(places []*TenantState, at tenancy.Tier) *TenantState {
	for _, s := range places {
		if s.Placement.At == at {
			return s
		}
	}
	return nil
}

func provisionAt(ctx context.Context, s *TenantState, tenant tenancy.ID) error {
	if s.Provision == nil {
		return nil
	}
	return s.Provision(ctx, tenant)
}

// copyTenant exports tenant from src and imports it into dst, returning
// the digest of what it copied. A copy an earlier run left in dst (a move
// cut off before its switch) is removed first and the copy redone.
func copyTenant(ctx context.Context, tenant tenancy.ID, src, dst *TenantState) (digest, error) {
	if src.Export == nil || dst.Import == nil {
		return nil, moveInvalid(src.Placement.Module, src.Backend, "the module's placements cannot export and import its data", "move the tenant with the backend's own tools")
	}
	f, err := os.CreateTemp("", "tenantwire-move-*")
	if err != nil {
		return nil, err
	}
	defer func() { f.Close(); os.Remove(f.Name()) }()
	aw, d, err := exportOne(ctx, tenant, src, f)
	if err != nil {
		return nil, err
	}
	// The records as this process wrote them, which the verify step
	// checks in the copy: no second pass over the archive.
	m := aw.Manifest()
	off, n := aw.Records()
	importOne := func() error {
		if err := dst.Import(ctx, tenant, migrate.NewRecords(io.NewSectionReader(f, off, n), m).Module(dst.Placement.Module)); err != nil {
			return fmt.Errorf("%s (%s): importing tenant %s: %w", dst.Module, dst.Backend, tenant, err)
		}
		return nil
	}
	err = importOne()
	if tenancy.CodeOf(err) == tenancy.CodeArchiveTargetNotEmpty && dst.Offboard != nil {
		if err = dst.Offboard(ctx, tenant); err == nil {
			if err = provisionAt(ctx, dst, tenant); err == nil {
				err = importOne()
			}
		}
	}
	return d, err
}

// exportOne writes s's archive of tenant to w and returns it with the
// digest of its records. The records are written under the placed
// module's name, whichever placement s is, so two placements' copies of
// the same records hash the same and the manifest's sections are the
// digest.
func exportOne(ctx context.Context, tenant tenancy.ID, s *TenantState, w io.Writer) (*migrate.ArchiveWriter, digest, error) {
	aw, err := migrate.NewArchiveWriter(w, tenant, time.Now())
	if err != nil {
		return nil, nil, err
	}
	aw.Module(migrate.ArchiveModule{Module: s.Placement.Module, Backend: s.Backend, Version: s.Version})
	if err := s.Export(ctx, tenant, aw); err != nil {
		return nil, nil, fmt.Errorf("%s (%s): exporting tenant %s: %w", s.Module, s.Backend, tenant, err)
	}
	if err := aw.Close(); err != nil {
		return nil, nil, err
	}
	d := digest{}
	for _, sec := range aw.Manifest().Sections {
		if sec.Records > 0 {
			d[sec.Route+"/"+sec.Family] = sectionSum{n: sec.Records, sum: sec.SHA256}
		}
	}
	return aw, d, nil
}

// verifyCopy exports dst's copy of tenant and compares it, section by
// section, with what was copied: each section's count and the sha256 of
// its records. Then it reads the source again and compares it too: a
// write another replica admitted before it read the fence and committed
// after the copy read the source is in the source only, and the copy
// would be switched to without it.
func verifyCopy(ctx context.Context, tenant tenancy.ID, src, dst *TenantState, want digest) (string, error) {
	// The two reads at once: both are under the fence.
	// A panic in the source's read is raised again here, in the caller's
	// goroutine, where its recover (net/http's, an operator's) sees it;
	// left in the helper goroutine it would end the process.
	var now digest
	var nowErr error
	var nowPanic any
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer func() { nowPanic = recover() }()
		_, now, nowErr = exportOne(ctx, tenant, src, io.Discard)
	}()
	_, got, err := exportOne(ctx, tenant, dst, io.Discard)
	<-read
	if nowPanic != nil {
		panic(nowPanic)
	}
	for _, c := range []struct {
		at          *TenantState
		got         digest
		err         error
		detail, fix string
	}{
		{dst, got, err, "tenant %s's copy of %s holds %d records (sha256 %.12s), the source %d (%.12s); the copy is removed and the tenant stays where it was",
			"find what wrote to either copy during the move (a replica that had not read the fence: record it in the store with MoveOptions.Record), then move again"},
		{src, now, nowErr, "tenant %s's source changed while it was copied: %s now holds %d records (sha256 %.12s), the copy %d (%.12s), a write that was under way when the fence began; the copy is removed and the tenant stays where it was, with the write",
			"move again: the write has ended, and the next copy holds it"},
	} {
		if c.err != nil {
			return "", c.err
		}
		if k, w, g, differ := firstDifference(want, c.got); differ {
			return "", &tenancy.Error{Code: tenancy.CodeTenantMoveUnverified, Backend: c.at.Backend, Module: c.at.Module, Route: k,
				Detail: fmt.Sprintf(c.detail, tenant, k, g.n, g.sum, w.n, w.sum), Fix: c.fix}
		}
	}
	return fmt.Sprintf("%d sections match, in the copy and in the source", len(want)), nil
}

// firstDifference is the first section, in order, whose count or sha256
// differs between want and got.
func firstDifference(want, got digest) (string, sectionSum, sectionSum, bool) {
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok && !yield(k) {
				return
			}
		}
	}) {
		if w, g := want[k], got[k]; w != g {
			return k, w, g, true
		}
	}
	return "", sectionSum{}, sectionSum{}, false
}

// digest is an archive's sections (route and family) that hold records:
// how many, and the sha256 of their lines.
type digest map[string]sectionSum

type sectionSum struct {
	n   int64
	sum string
}

func (d digest) records() int64 {
	var n int64
	for _, s := range d {
		n += s.n
	}
	return n
}

func moveInvalid(module, backend, detail, fix string) error {
	return &tenancy.Error{Code: tenancy.CodeTenantPlacementInvalid, Backend: backend, Module: module, Detail: detail, Fix: fix}
}

func moveRefused(tenant tenancy.ID, module, backend, why, fix string) error {
	return &tenancy.Error{Code: tenancy.CodeTenantMoveRefused, Backend: backend, Module: module,
		Detail: fmt.Sprintf("tenant %s cannot be moved: %s; nothing was copied", tenant, why), Fix: fix}
}
