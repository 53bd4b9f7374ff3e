package tenanthttp

import (
	"log/slog"
	"net"
	"sync"
)

// Listeners is a boundary's tenant and operator listeners: opened
// together, each served in a goroutine of its own, and waited for at
// stop. tenanthttp serves HTTP on them and tenantgrpc gRPC. The zero
// value is ready to Open.
type Listeners struct {
	name             string
	log              *slog.Logger
	tenant, operator net.Addr
	wg               sync.WaitGroup
}

// Open listens on both addresses, the operator's second: when it fails
// the tenant listener is closed again, so a failed start holds no port.
// name ("tenanthttp") and log are for the lines Open and Serve log.
func (l *Listeners) Open(name string, log *slog.Logger, tenantAddr, operatorAddr string) (tenant, operator net.Listener, err error) {
	tl, err := net.Listen("tcp", tenantAddr)
	if err != nil {
		return nil, nil, err
	}
	ol, err := net.Listen("tcp", operatorAddr)
	if err != nil {
		_ = tl.Close()
		return nil, nil, err
	}
	l.name, l.log = name, log
	l.tenant, l.operator = tl.Addr(), ol.Addr()
	l.log.Info(l.name+": listening", "tenant", l.tenant.String(), "operator", l.operator.String())
	return tl, ol, nil
}

// Serve runs serve in a goroutine that Wait waits for. An error serve
// returns is logged as the listener (named by which) stopping; serve
// returns nil when the boundary stopped it on purpose.
func (l *Listeners) Serve(which string, serve func() error) {
	l.wg.Go(func() {
		if err := serve(); err != nil {
			l.log.Error(l.name+": listener stopped", "listener", which, "error", err)
		}
	})
}

// Wait waits for every goroutine Serve started.
func (l *Listeners) Wait() { l.wg.Wait() }

// TenantAddr is the tenant listener's address once open, or "".
func (l *Listeners) TenantAddr() string { return addrString(l.tenant) }

// OperatorAddr is the operator listener's address once open, or "".
func (l *Listeners) OperatorAddr() string { return addrString(l.operator) }

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
