package tenantadmin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tenantwire/tenantwire/tenancy"
)

// synopsis is Run's usage text.
const synopsis = `usage:
  list                              every tenant of the registry, one JSON line each
  status    <id>                    registry state, suspended, each module's part
  provision <id> [--dry-run]
  suspend   <id>
  resume    <id>
  offboard  <id> --confirm <id>     or --dry-run
  export    <id>                    the tenant's archive (docs/archive.md), written out
  import    <id> --file <path>      an archive into the provisioned, empty tenant
  move      <id> --module <m> --to <tier> [--dry-run]   the tenant's data to another placement
  cleanup-move <id> --module <m> --from <tier>          the old copy a move left, erased
exit status: 0 done; 1 a module failed or the replica could not answer; 2 the command was refused, nothing ran`

// Run runs one tenant command from an app's main, sent to the operator
// listener of a running replica at operator ("127.0.0.1:9090" or a URL):
//
//	if len(os.Args) > 1 && os.Args[1] == "tenants" {
//		err := tenantadmin.Run(ctx, "127.0.0.1:9090", os.Args[2:], os.Stdout)
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//		}
//		os.Exit(tenantadmin.ExitCode(err))
//	}
//
// It goes through the replica rather than building the app in the command's
// own process because a suspension lives in the serving process: a suspend
// there would stop nothing, and an offboard would remove the tenant's data
// while the replica still served it. Each answer is written to out as JSON
// (the endpoint's body; list writes one line per tenant). The error is nil,
// a *tenancy.Error with the refusal's code, or the transport's failure:
// ExitCode maps it to the exit status.
func Run(ctx context.Context, operator string, args []string, out io.Writer) error {
	return Remote{Addr: operator}.Run(ctx, args, out)
}

// Remote is a replica's operator listener as Run reaches it, with what a
// listener exposed beyond loopback asks for.
type Remote struct {
	// Addr is "127.0.0.1:9090" or a URL (https://ops.example:9443/prefix).
	Addr string
	// Token is sent as "Authorization: Bearer <token>" when set
	// (tenantadmin.Config.Token).
	Token string
	// Client sends the requests; nil means http.DefaultClient. Give one
	// with a TLS client certificate for a proxy that wants mTLS.
	Client *http.Client
}

// Run is the package's Run against r.
func (r Remote) Run(ctx context.Context, args []string, out io.Writer) error {
	base, err := operatorURL(r.Addr)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usage("no command")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "list", "status", "provision", "suspend", "resume", "offboard":
	case "export", "import":
		return r.archive(ctx, base, cmd, rest, out)
	case "move", "cleanup-move":
		return r.moveCommand(ctx, base, cmd, rest, out)
	default:
		return usage("unknown command " + strconv.Quote(cmd))
	}
	if cmd == "list" {
		if len(rest) > 0 {
			return usage("list takes no argument")
		}
		return r.list(ctx, base, out)
	}
	id, flags, err := tenantArgs(cmd, rest)
	if err != nil {
		return err
	}
	path := "/tenants/" + id.String()
	q := url.Values{}
	method := http.MethodPost
	switch cmd {
	case "status", "suspend", "resume":
		if len(flags) > 0 {
			return usage(cmd + " takes no flag")
		}
		if cmd == "status" {
			method = http.MethodGet
		} else {
			path += "/" + cmd
		}
	case "provision", "offboard":
		path += "/" + cmd
		if _, dry := flags["--dry-run"]; dry {
			if flags["--dry-run"] != "" || len(flags) > 1 {
				return usage(cmd + " --dry-run takes no value and no other flag")
			}
			q.Set("dry_run", "1")
			break
		}
		if cmd == "provision" {
			if len(flags) > 0 {
				return usage("provision takes only --dry-run")
			}
			break
		}
		c, set := flags["--confirm"]
		if len(flags) > 1 || (!set && len(flags) > 0) {
			return usage("offboard takes only --confirm <id> or --dry-run")
		}
		var confirm []string
		if set {
			confirm = []string{c}
		}
		if err := confirmOffboard(id, confirm); err != nil {
			return err
		}
		q.Set("confirm", id.String())
	}
	u := at(base, path, q)
	body, err := r.call(ctx, method, u)
	if body != nil {
		_, _ = out.Write(body)
	}
	return err
}

// ExitCode is the exit status of Run's error: 0 for nil; 2 when the command
// was refused and nothing ran (a usage error, a malformed tenant id, an
// unconfirmed offboard, a request the replica refused or forbade); 1 otherwise (a
// module failed its part, the registry or the replica could not answer).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	switch tenancy.CodeOf(err) {
	case tenancy.CodeOperatorRequestInvalid, tenancy.CodeOperatorRequestForbidden, tenancy.CodeTenantIDInvalid, tenancy.CodeOffboardUnconfirmed, tenancy.CodeTenantAdminUnwired,
		tenancy.CodeArchiveInvalid, tenancy.CodeArchiveMismatch, tenancy.CodeArchiveTargetNotEmpty, tenancy.CodeArchiveVersionAhead,
		tenancy.CodeTenantMoveRefused, tenancy.CodeTenantPlacementInvalid, tenancy.CodeTenantPlacementUnderFloor:
		return 2
	}
	return 1
}

func (r Remote) list(ctx context.Context, base *url.URL, out io.Writer) error {
	after := ""
	for {
		q := url.Values{"limit": {fmt.Sprint(maxLimit)}}
		if after != "" {
			q.Set("after", after)
		}
		u := at(base, "/tenants", q)
		body, err := r.call(ctx, http.MethodGet, u)
		if err != nil {
			if body != nil {
				_, _ = out.Write(body)
			}
			return err
		}
		var page listPage
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("tenantadmin: the replica's list is not a page: %w", err)
		}
		for _, t := range page.Tenants {
			line, _ := json.Marshal(t)
			if _, err := out.Write(append(line, '\n')); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		after = page.Next
	}
}

// call sends one request and returns the body. A 2xx is nil; any other
// answer is a *tenancy.Error carrying the body's code (and the body, for
// a failed step's report, to write out). A POST goes as the operator
// surface requires it: "Content-Type: application/json", no body.
func (r Remote) call(ctx context.Context, method string, u *url.URL) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tenantadmin: the operator listener did not answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("tenantadmin: reading the answer: %w", err)
	}
	if resp.StatusCode/100 == 2 {
		return body, nil
	}
	var e errorBody
	if json.Unmarshal(body, &e) != nil || e.Code == "" {
		// Not the surface's answer (a 404 from a replica without
		// tenantadmin.Module, a proxy's page): never a success.
		return nil, fmt.Errorf("tenantadmin: %s %s answered %s, not a tenantadmin answer", method, u.Path, resp.Status)
	}
	err = &tenancy.Error{Code: tenancy.Code(e.Code), Module: "tenantadmin", Detail: e.Error, Fix: e.Fix}
	if e.Code == string(tenancy.CodeTenantStepFailed) {
		return body, err
	}
	return nil, err
}

// at is path under base (which may carry a path prefix of its own) with
// query q.
func at(base *url.URL, path string, q url.Values) *url.URL {
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = q.Encode()
	return &u
}

func operatorURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, usage("no operator address")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, usage(fmt.Sprintf("operator address %q is not host:port or an http(s) URL", s))
	}
	return u, nil
}

// parseFlags reads "--dry-run" and "--confirm", "--file", "--module",
// "--to" and "--from", each with a value ("--confirm <v>" or
// "--confirm=<v>"), each at most once.
// tenantArgs is a subcommand's tenant id, its first argument, and the
// flags after it.
func tenantArgs(cmd string, rest []string) (tenancy.ID, map[string]string, error) {
	if len(rest) == 0 {
		return tenancy.ID{}, nil, usage(cmd + " needs a tenant id")
	}
	id, err := parseTenant(rest[0])
	if err != nil {
		return id, nil, err
	}
	flags, err := parseFlags(rest[1:])
	return id, flags, err
}

func parseFlags(args []string) (map[string]string, error) {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		name, val, hasVal := strings.Cut(args[i], "=")
		switch name {
		case "--dry-run":
		case "--confirm", "--file", "--module", "--to", "--from":
			if !hasVal {
				if i+1 == len(args) {
					return nil, usage(name + " needs a value")
				}
				i++
				val = args[i]
			}
		default:
			return nil, usage(fmt.Sprintf("unknown argument %q", args[i]))
		}
		if _, dup := out[name]; dup {
			return nil, usage(name + " given twice")
		}
		out[name] = val
	}
	return out, nil
}

func usage(detail string) error {
	return &tenancy.Error{Code: tenancy.CodeOperatorRequestInvalid, Module: "tenantadmin", Detail: detail, Fix: synopsis}
}
