package admin

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
)

// A web page the host's operator visits can make the browser ask the admin
// listener, through a name of its own that it points at 127.0.0.1 (DNS
// rebinding), and read the answer as the page's own. What gives it away
// is the Host header, which carries that name. So the listener answers
// only requests whose Host is one of its own addresses (the address the
// request arrived on), "localhost", or a name of [admin] hosts, whatever
// their token, as Transmission's host whitelist and Geth's vhosts do; the
// others get 421 Misdirected Request.

// hostGate lets through to next the requests whose Host names the
// listener.
type hostGate struct {
	names map[string]bool // lower case, without a trailing dot
	next  http.Handler
	wrong atomic.Uint64
}

func newHostGate(names []string, next http.Handler) *hostGate {
	g := &hostGate{names: map[string]bool{"localhost": true}, next: next}
	for _, n := range names {
		g.names[normalHost(n)] = true
	}
	return g
}

// normalHost is a host name as compared: lower case, without a trailing
// dot.
func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func (g *hostGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.allowed(r) {
		g.wrong.Add(1)
		http.Error(w, "this admin listener answers to its own addresses, localhost and the names of [admin] hosts only",
			http.StatusMisdirectedRequest)
		return
	}
	g.next.ServeHTTP(w, r)
}

// allowed reports whether r's Host names the listener.
func (g *hostGate) allowed(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		local := localAddr(r)
		return local.IsValid() && a.Unmap().WithZone("") == local
	}
	return g.names[normalHost(host)]
}
