// Command coredns is CoreDNS (github.com/coredns/coredns) with the plugins of kubeadm's default Corefile and a few
// for the lab's faults, built as CoreDNS documents for a custom plugin set: the directives in CoreDNS's own order,
// each plugin imported for its registration. The full plugin set (cloud DNS back ends and all) would triple the
// build time for nothing the lab serves.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// directives: the subset of CoreDNS's core/dnsserver/zdirectives.go, in its order (the order plugins run in).
var directives = []string{
	"reload", "bind", "ready", "health", "prometheus", "errors", "log", "loadbalance", "cache", "hosts",
	"kubernetes", "loop", "forward", "whoami",
}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
