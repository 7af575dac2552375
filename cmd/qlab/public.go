package main

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// maxOtherAddrs bounds how many of the machine's addresses a public
// server lists: a laptop has one or two, a host with many bridges more.
const maxOtherAddrs = 3

// reach is where a server listening on an address can be reached from.
type reach struct {
	local  string   // the base URL to use on this machine: http://127.0.0.1:8080
	others []string // base URLs for other machines, when the machine has any
	port   string
	public bool // others on the network can reach it: the host is not loopback
}

// reachOf says where a server listening on addr (a listener's address,
// host:port) can be reached. An unspecified host (0.0.0.0, [::]) is not an address
// anyone can use: on this machine it is 127.0.0.1, and for others each
// of the machine's own addresses (interfaceAddrs) is.
func reachOf(addr string, interfaceAddrs func() ([]net.Addr, error)) reach {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return reach{local: "http://" + addr, public: true}
	}
	base := func(host string) string { return "http://" + net.JoinHostPort(host, port) }
	ip := net.ParseIP(host)
	switch {
	case ip != nil && ip.IsLoopback():
		return reach{local: base(host), port: port}
	case ip != nil && ip.IsUnspecified():
		return reach{local: base("127.0.0.1"), others: machineURLs(interfaceAddrs, base), port: port, public: true}
	default: // one address of this machine that is not loopback
		return reach{local: base(host), others: []string{base(host)}, port: port, public: true}
	}
}

// machineURLs are base URLs on the machine's addresses that other
// machines may use: not loopback, not link-local, IPv4 first; the host
// name when there is none.
func machineURLs(interfaceAddrs func() ([]net.Addr, error), base func(string) string) []string {
	addrs, _ := interfaceAddrs()
	var v4, v6 []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() {
			continue
		}
		if n.IP.To4() != nil {
			v4 = append(v4, base(n.IP.String()))
		} else {
			v6 = append(v6, base(n.IP.String()))
		}
	}
	urls := append(v4, v6...)
	if len(urls) == 0 {
		if name, err := os.Hostname(); err == nil && name != "" {
			urls = []string{base(name)}
		}
	}
	return urls[:min(len(urls), maxOtherAddrs)]
}

// publicNote is the line a server that others can reach prints: that
// they can, with no password, and at which address. what is the server
// ("the API"), path what to add to the base URL ("/metrics"). "" for a
// server on loopback.
func publicNote(what string, r reach, path string) string {
	switch {
	case !r.public:
		return ""
	case len(r.others) == 0:
		return fmt.Sprintf("PUBLIC: others on the network can now reach %s,\n"+
			"  with no password, at port %s of this machine.", what, r.port)
	}
	urls := make([]string, len(r.others))
	for i, u := range r.others {
		urls[i] = u + path
	}
	return fmt.Sprintf("PUBLIC: others on the network can now reach %s, with no password:\n  %s",
		what, strings.Join(urls, "\n  "))
}
