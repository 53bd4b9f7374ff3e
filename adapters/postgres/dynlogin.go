package postgres

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
)

// DynamicLogin makes a dynamic read on a plain client log in as the
// tenant's own role instead of switching to it: the session user is then
// the tenant's role, so compiled text that resets or sets the role stays
// within what that role may read. Provisioning gives the role LOGIN and a
// password derived from Secret (only its SCRAM verifier is sent to the
// server); the server's pg_hba.conf must let these roles log in with a
// password.
type DynamicLogin struct {
	// Secret derives every tenant role's password (HMAC-SHA256 of the role
	// name); every replica needs the same one. At least 32 bytes.
	Secret []byte
	// MaxClients bounds live per-tenant pools (default 16), least recently
	// used closed first; each holds up to the read's MaxConns.
	MaxClients int
}

const (
	defaultLoginPools = 16
	minLoginSecret    = 32
	scramIterations   = 4096
)

// loginPassword is the tenant role's password: keyed by the module's
// secret, so knowing a role name is not enough to log in as it.
func loginPassword(secret []byte, role string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// scramVerifier is PostgreSQL's stored form of a SCRAM-SHA-256 password,
// so the password itself never appears in a statement or a server log.
func scramVerifier(password string, salt []byte, iter int) (string, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(msg string) []byte {
		m := hmac.New(sha256.New, salted)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	stored := sha256.Sum256(mac("Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return "SCRAM-SHA-256$" + strconv.Itoa(iter) + ":" + b64(salt) + "$" + b64(stored[:]) + ":" + b64(mac("Server Key")), nil
}

// loginRoleDDL is the role's login attributes, with its derived password.
func loginRoleDDL(secret []byte, role string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	v, err := scramVerifier(loginPassword(secret, role), salt, scramIterations)
	if err != nil {
		return "", err
	}
	// The verifier is base64 and '$', ':' only: safe inside quotes.
	return "LOGIN CONNECTION LIMIT -1 PASSWORD '" + v + "'", nil
}

// loginCheck refuses a login connection whose session user is not role:
// a transaction pooler that logs in to PostgreSQL as a user of its own
// (a forced user in its database entry) would otherwise run the tenant's
// text as that user. Checked once per connection, before next runs.
func (c *Client) loginCheck(next func(context.Context, *pgx.Conn) error, role string) func(context.Context, *pgx.Conn) error {
	return func(ctx context.Context, conn *pgx.Conn) error {
		var user string
		// The simple protocol: one message, nothing parsed is left on the
		// server session for the pooler to hand to the next transaction.
		if err := conn.QueryRow(ctx, "SELECT session_user::text", pgx.QueryExecModeSimpleProtocol).Scan(&user); err != nil {
			return err
		}
		if user != role {
			return &tenancy.Error{Code: CodeDynamicReadPooled, Module: c.module, Backend: rules.Name,
				Detail: fmt.Sprintf("the pooler logged in to PostgreSQL as %q, not as %q: its server sessions are not the tenant's own", user, role),
				Fix:    "let the pooler log in as each client's own user (no user= in its database entry, an auth_type other than any)"}
		}
		if next != nil {
			return next(ctx, conn)
		}
		return nil
	}
}

// loginPools opens, per tenant, a pool that logs in as the tenant's role,
// built from base (the route's own pool settings).
func (c *Client) loginPools(dl *DynamicLogin, base *tenantPool) *routing.Pools[*pgxpool.Pool] {
	if base == nil || dl == nil {
		return nil
	}
	return c.loginPoolsFrom(dl, base.cfg)
}

// loginPoolsFrom is loginPools over the pool settings base (nil: none).
func (c *Client) loginPoolsFrom(dl *DynamicLogin, base *pgxpool.Config) *routing.Pools[*pgxpool.Pool] {
	maxPools := dl.MaxClients
	if maxPools <= 0 {
		maxPools = defaultLoginPools
	}
	p, err := routing.New(routing.Config[*pgxpool.Pool]{
		// One database, a login per tenant: the role, not the target,
		// separates tenants, so no target claims are taken.
		TenantKeyed: true,
		Module:      c.module,
		Backend:     rules.Name,
		Resolve: func(_ context.Context, tenant tenancy.ID) (routing.Credentials, error) {
			role := RoleName(c.prefix, tenant)
			return routing.Credentials{User: role, Secret: loginPassword(dl.Secret, role)}, nil
		},
		Open: func(ctx context.Context, cr routing.Credentials) (*pgxpool.Pool, error) {
			if base == nil {
				return nil, errNoConnection
			}
			cfg := base.Copy()
			cfg.ConnConfig.User, cfg.ConnConfig.Password = cr.User, cr.Secret
			if c.pooled {
				cfg.AfterConnect = c.loginCheck(cfg.AfterConnect, cr.User)
			}
			p, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
			if err != nil {
				return nil, fmt.Errorf("postgres: module %s: %w", c.module, err)
			}
			return p, nil
		},
		Close:  (*pgxpool.Pool).Close,
		Limits: routing.Limits{MaxClients: maxPools},
	})
	if err != nil {
		// A fixed, complete config: failing here is a bug, and falling back
		// to the shared pool would let compiled text out of its login.
		panic("postgres: dynamic read login pools: " + err.Error())
	}
	c.mu.Lock()
	c.closers = append(c.closers, p.Close)
	c.logins = append(c.logins, p)
	c.mu.Unlock()
	return p
}
