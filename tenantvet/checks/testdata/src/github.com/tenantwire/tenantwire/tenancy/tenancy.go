// Package tenancy is a stub of tenantwire's: the signatures tenantvet's
// tests call.
package tenancy

import "context"

type ID struct{ b [16]byte }

func (id ID) String() string { return "" }
func (id ID) Hex() string    { return "" }

func ParseID(s string) (ID, error) { return ID{}, nil }

func WithTenant(ctx context.Context, id ID) context.Context { return ctx }
func WithGlobal(ctx context.Context) context.Context        { return ctx }
func FromContext(ctx context.Context) (ID, bool)            { return ID{}, false }
