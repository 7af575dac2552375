package cluster

import (
	"errors"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
)

// reservedPorts are the shared node's and the broker defaults: a port
// picked for a cluster node is never one of them, even while it is free.
var reservedPorts = []int{4369, 5672, 15672, 15692, 25672}

// FreePorts returns n distinct ports that are free on loopback now, picked
// at random between 20000 and 32000: below Linux's ephemeral range, where
// a probe can connect to itself and a client socket can take the port
// between the probe and the node's listen.
func FreePorts(n int) ([]int, error) {
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, errors.New("no free ports for the cluster's nodes between 20000 and 32000")
		}
		p := 20000 + rand.IntN(12000)
		if slices.Contains(reservedPorts, p) || slices.Contains(ports, p) || !PortFree(p) {
			continue
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// PortFree reports whether a listener can bind 127.0.0.1:p now.
func PortFree(p int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
