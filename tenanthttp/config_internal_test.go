package tenanthttp

import (
	"net/http"
	"testing"
	"time"
)

// Zero limits are the documented defaults; set ones are kept; a negative
// duration reaches net/http, where it means no limit.
func TestListenerLimits(t *testing.T) {
	s := Config{}.server(http.NotFoundHandler(), nil)
	if s.ReadHeaderTimeout != 10*time.Second || s.ReadTimeout != 30*time.Second || s.WriteTimeout != time.Minute ||
		s.IdleTimeout != time.Minute || s.MaxHeaderBytes != 64<<10 {
		t.Errorf("defaults: %v %v %v %v %d", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	s = Config{ReadHeaderTimeout: 1, ReadTimeout: 2, WriteTimeout: 3, IdleTimeout: -1, MaxHeaderBytes: 5}.server(nil, nil)
	if s.ReadHeaderTimeout != 1 || s.ReadTimeout != 2 || s.WriteTimeout != 3 || s.IdleTimeout != -1 || s.MaxHeaderBytes != 5 {
		t.Errorf("configured: %v %v %v %v %d", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	if s := (Config{MaxHeaderBytes: -1}).server(nil, nil); s.MaxHeaderBytes != defaultMaxHeaderBytes {
		t.Errorf("negative MaxHeaderBytes: %d", s.MaxHeaderBytes)
	}
}
