package rebind

import (
	"context"
	"testing"

	"github.com/tenantwire/tenantwire/tenancy"
)

func TestBinds(t *testing.T) { _ = tenancy.WithGlobal(context.Background()) }
