package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lan is a machine with a loopback, a LAN and a link-local address.
func lan() ([]net.Addr, error) {
	var out []net.Addr
	for _, cidr := range []string{"127.0.0.1/8", "192.168.1.5/24", "fe80::1/64", "2001:db8::5/64"} {
		ip, n, err := net.ParseCIDR(cidr)
		if err != nil {
			return nil, err
		}
		n.IP = ip
		out = append(out, n)
	}
	return out, nil
}

func noInterfaces() ([]net.Addr, error) { return nil, errors.New("no interfaces here") }

func TestReachOfNamesAddressesOneCanUse(t *testing.T) {
	cases := map[string]reach{
		"127.0.0.1:8080":   {local: "http://127.0.0.1:8080", port: "8080"},
		"[::1]:8080":       {local: "http://[::1]:8080", port: "8080"},
		"0.0.0.0:8080":     {local: "http://127.0.0.1:8080", others: []string{"http://192.168.1.5:8080", "http://[2001:db8::5]:8080"}, port: "8080", public: true},
		"[::]:9100":        {local: "http://127.0.0.1:9100", others: []string{"http://192.168.1.5:9100", "http://[2001:db8::5]:9100"}, port: "9100", public: true},
		"192.168.1.5:8080": {local: "http://192.168.1.5:8080", others: []string{"http://192.168.1.5:8080"}, port: "8080", public: true},
	}
	for addr, want := range cases {
		assert.Equal(t, want, reachOf(addr, lan), addr)
	}
	r := reachOf("0.0.0.0:8080", noInterfaces)
	assert.True(t, r.public)
	assert.Equal(t, "http://127.0.0.1:8080", r.local)
	assert.LessOrEqual(t, len(r.others), 1, "the host name at most")
}

// TestServeBannerOnAllInterfacesSaysOthersCanReachIt: serve --public on
// 0.0.0.0 used to print "listening on http://0.0.0.0:8080" (or [::])
// and nothing about the network.
func TestServeBannerOnAllInterfacesSaysOthersCanReachIt(t *testing.T) {
	banner := serveBanner(reachOf("0.0.0.0:8080", lan), true)
	assert.Contains(t, banner, "listening on http://127.0.0.1:8080;")
	assert.Contains(t, banner, "PUBLIC: others on the network can now reach the API, with no password:\n  http://192.168.1.5:8080")
	assert.Contains(t, banner, "curl -s http://127.0.0.1:8080/api/v1/users")
	assert.NotContains(t, banner, "0.0.0.0")
	for _, line := range strings.Split(banner, "\n") {
		assert.LessOrEqual(t, len(line), 80, "%q", line)
	}

	banner = serveBanner(reachOf("0.0.0.0:8080", noInterfaces), true)
	assert.Contains(t, banner, "PUBLIC: others on the network can now reach the API")

	banner = serveBanner(reachOf("127.0.0.1:8080", lan), true)
	assert.NotContains(t, banner, "PUBLIC", "loopback: nobody else")
}

// TestMetricsPublicSaysOthersCanReachIt binds all interfaces for a
// moment, as --metrics 0.0.0.0:0 --metrics-public does.
func TestMetricsPublicSaysOthersCanReachIt(t *testing.T) {
	var out bytes.Buffer
	s, err := metricsFlags{addr: "0.0.0.0:0", public: true}.serve(&out, "until the test ends")
	require.NoError(t, err)
	s.stop()
	assert.Regexp(t, `^metrics: scrape http://127\.0\.0\.1:\d+/metrics \(until the test ends\)\n`, out.String())
	assert.Contains(t, out.String(), "metrics: PUBLIC: others on the network can now reach /metrics")
	assert.NotContains(t, out.String(), "0.0.0.0")
	assert.NotContains(t, out.String(), "[::]")
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/metrics$`, s.url, "the URL the TUI shows is one to use")

	out.Reset()
	s, err = metricsFlags{addr: "127.0.0.1:0"}.serve(&out, "x")
	require.NoError(t, err)
	s.stop()
	assert.NotContains(t, out.String(), "PUBLIC")
}
